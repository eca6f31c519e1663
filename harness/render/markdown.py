"""The report (harness.results.report) -> report.md: a summary line, changes, the packages table (a row per package,
a column per interpreter, what differs between them), findings with evidence, the jobs table.

Suitable as a GitHub step summary and a PR comment, so it stays short whatever the report's
size: changes, missing jobs and findings in full are capped (the rest one line each), the jobs
table is left out above ``MAX_JOB_ROWS`` jobs, and phases are on the site only (each package's
page, linked when ``site_url`` is given).  Everything that came from
a package is escaped: table text has Markdown and HTML specials escaped, code
is fenced with a fence longer than any backtick run inside it, and control characters
(ESC, BEL, NUL ...) and workflow-command line starts are made inert (harness.util.textsafe).
"""

from __future__ import annotations

import functools
import re
from typing import Any
from urllib.parse import quote

from ..core.model import Finding, severity
from ..results.answer import ANSWER_TEXT, ANSWERS
from ..results.report import Cell, Change, CompatReport, JobEntry
from ..util import textsafe
from .chart import runs_label, runs_per_mode, shorten
from .common import (
    coverage_summary,
    fmt_duration,
    human_span,
    mode_list,
    page_name,
    safe_url,
    setup_summary,
    wheel_summary,
)
from .findings import deciding, groups, laptop_recipe, recipe_narrowing, what_ran

ICON = {
    "build-failure": "⛔",
    "infra-error": "⚙️",
    "ft-crash": "💥",
    "crash": "☠️",
    "hang": "⏳",
    "ft-race": "🔀",
    "thread-unsafe": "🧵",
    "gil-reenabled": "🔒",
    "baseline-failure": "🟡",
    "compatible": "✅",
    "no-tests": "⚪",
    "skipped": "⏭️",
    "no-thread-coverage": "ℹ️",
    "unconfirmed": "❔",
    "setup-error": "🧩",
    "budget-spent": "⌛",
    "slow-in-threads": "🐢",
    "repeat-failure": "🔁",
}
CHANGE_ICON = {
    "flaky": "≈",
    "newly-broken": "🔻",
    "fixed": "🔺",
    "verdict-changed": "🔁",
    "infra-error": "🛠️",
    "new-package": "🆕",
    "removed": "➖",
}
MAX_EXCERPT_LINES = 40
MAX_LIST = 50  # rows of changes / missing jobs; the rest are counted
MAX_JOB_ROWS = 200  # jobs table rows: above this the table is the site's alone
MAX_FINDINGS_PER_JOB = 5  # findings shown in full under one job
FINDING_LINES = 600  # lines of findings in full; later jobs get their deciding finding ...
BRIEF_LINES = 1500  # ... in this many lines more, then one line each ...
MAX_REST = 5  # test ids listed under a group's first finding (the rest: counted, on the page)
MAX_ONE_LINE = 100  # ... up to this many (the packages table has every verdict anyway)
_URL_SAFE = ":/?#@!$&'()*+,;=%~-._"  # everything else (<, >, spaces, quotes) is %-encoded
_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def text(s: Any) -> str:
    """One line of package-supplied text, inert in Markdown and in GitHub's HTML."""
    return _text(str(s))


@functools.lru_cache(maxsize=1 << 16)  # names, phases, outcomes recur on many rows
def _text(s: str) -> str:
    s = textsafe.controls(s, keep="\t\n\r")  # whitespace is joined below
    s = _SPECIAL.sub(r"\\\1", s)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    # shown as '::' (a Markdown escape); no @mention, no bare link
    return textsafe.no_autolinks(textsafe.no_commands(" ".join(s.split())))


def code(s: Any) -> str:
    """Inline code that survives any content, also inside a table cell."""
    s = textsafe.line(" ".join(str(s).split())).replace("|", "\\|")
    if not s:
        return ""
    run = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (run + 1)
    return f"{fence} {s} {fence}"


def block(s: str, lang: str = "") -> str:
    lines = s.splitlines()
    if len(lines) > MAX_EXCERPT_LINES:
        cut = len(lines) - MAX_EXCERPT_LINES
        lines = [f"[... {cut} earlier lines; see the log]"] + lines[-MAX_EXCERPT_LINES:]
    body = textsafe.lines("\n".join(lines))
    run = max((len(m) for m in re.findall(r"`{3,}", body)), default=0)
    fence = "`" * max(3, run + 1)
    return f"{fence}{lang}\n{body}\n{fence}"


ANSWER_ICON = {"no-ft-problem": "🟢", "ft-problem": "🔴", "both-modes": "🟥", "not-judged": "⬜"}
ANSWER_ORDER = ("no-ft-problem", "ft-problem", "both-modes", "not-judged")


def answers_line(report: CompatReport) -> str:
    """Packages per answer to "does it work without the GIL as with it?" (harness.results.answer)."""
    n = len(report.table or report.packages)
    parts = [f"{ANSWER_ICON[a]} {c} {ANSWER_TEXT[a]}" for a in ANSWER_ORDER if (c := report.answers.get(a))]
    works = report.answers.get("no-ft-problem", 0)
    return (
        (
            f"**Does it work without the GIL as with it?** {works} of {n} package{'s' if n != 1 else ''}"
            f" show no free-threading problem: " + " · ".join(parts)
        )
        if parts
        else ""
    )


def summary_line(report: CompatReport) -> str:
    """Packages (table rows) per verdict, each under its most severe verdict; the jobs too when
    there is more than one interpreter."""
    n = len(report.table or report.packages)
    parts = [f"{ICON[v]} {c} {v}" for v, c in report.summary.items() if c]
    line = f"**{n} package{'s' if n != 1 else ''}**"
    if report.several:
        line += f" on {len(report.interpreters)} interpreters ({len(report.packages)} jobs)"
    line += ": " + " · ".join(parts) if parts else ""
    if report.missing:
        line += f" · ❓ {len(report.missing)} missing"
    return line


def _meta_line(report: CompatReport) -> str:
    m = report.meta
    bits = []
    for c in report.interpreters:
        what = " ".join(x for x in (f"CPython {c.full_version or c.version}", " ".join(c.configure), c.source) if x)
        column = f"{text(c.label)} = " if c.label and c.label != c.name else ""  # the header's details
        bits.append(f"{column}{text(c.name)} ({text(what)})")
    if m.backends:
        bits.append("backend " + text(", ".join(m.backends)))
    if m.harness_version:
        bits.append("ft-harness " + text(m.harness_version))
    if m.matrix_digest:
        bits.append("matrix " + code(str(m.matrix_digest)[:12]))
    if m.started or m.finished:
        bits.append(text(human_span(m.started, m.finished)))
    return " · ".join(bits)


def _changes(report: CompatReport) -> list[str]:
    changes = report.changes
    if changes is None:
        return []
    out = ["## Changes since the previous report", ""]
    if not changes:
        return out + ["No verdict changed.", ""]
    out += ["| | Package | Change | Before | Now |", "|---|---|---|---|---|"]
    # regressions first, then what was not the package's doing, then the rest
    order = sorted(changes, key=lambda c: (not c.regression, c.kind != "infra-error"))
    for c in order[:MAX_LIST]:
        out.append(_change(c, report.several))
    return out + _more(len(order) - MAX_LIST, "change") + [""]


def _change(c: Change, several: bool) -> str:
    mark = "**regression**" if c.regression else ""
    where = f" [{text(c.interpreter)}]" if several and c.interpreter else ""
    return (
        f"| {CHANGE_ICON[c.kind]} {mark} | {text(c.package)} {text(c.new_version or c.old_version)}"
        f"{where} | {c.kind} | {text(c.old or '—')} | {text(c.new or '—')} |"
    )


def _more(n: int, what: str) -> list[str]:
    return ["", f"_… and {n} more {what}{'s' if n != 1 else ''}: see report.json or the site._"] if n > 0 else []


def _cell(cell: Cell | None, version: str) -> str:
    if cell is None:
        return "—"
    out = f"{ICON[cell.verdict]} **{cell.verdict}**"
    if cell.qualifier:
        out += f" ({text(cell.qualifier)})"
    if not version:  # the package's version differs between interpreters: say each one
        out += f" {text(cell.version)}"
    if cell.change:
        out += f" {CHANGE_ICON[cell.change]} {cell.change}"
    return out


def _site(site_url: str) -> str:
    """The site's base URL (ending in /) if it is one we may link, else ""."""
    url = safe_url(site_url)
    return url if not url or url.endswith("/") else url + "/"


def _page_link(name: str, job_id: str, site: str) -> str:
    """``name``, a link to the job's page on the site when there is one."""
    if not site:
        return text(name)
    return f"[{text(name)}]({quote(site + 'pkg/' + page_name(job_id), safe=_URL_SAFE)})"


def packages_table(report: CompatReport, site: str = "") -> list[str]:
    """One row per package, one column per interpreter (verdict + badge), then what differs;
    each name links its page on the site at ``site`` (a base URL ending in /) when given."""
    cols = report.interpreters
    several = report.several  # with one interpreter nothing can differ: no "Across" column
    head = "| Package | Version | " + " | ".join(text(c.label) for c in cols) + " | Cause |"
    out = [head + (" Across interpreters |" if several else ""), "|---|---|" + "---|" * (len(cols) + 1 + several)]
    jobs = {p.job_id: p for p in report.packages}
    for row in report.table:
        cells = " | ".join(_cell(row.cell(c.name), row.version) for c in cols)
        first = next(iter(row.cells.values()), None)
        name = _page_link(row.name, first.job_id, site) if first else text(row.name)
        why = "; ".join(dict.fromkeys(c for cell in row.cells.values() if (c := _cause(jobs.get(cell.job_id)))))
        line = f"| {name} | {text(row.version) or 'differs'} | {cells} | {why} |"
        out.append(line + (f" {text(row.across)} |" if several else ""))
    return out


def _cause(p: JobEntry | None) -> str:
    """A cell's cause in a few words: the short cause or caveat, the deciding test (its function
    whole) or module, with its runs per mode."""
    if p is None:
        return ""
    f = deciding(p)
    bits = [text(p.cause or p.caveat)] if (p.cause or p.caveat) else []
    if f is not None and (f.test_id or f.module):
        runs = runs_label(f, runs_per_mode(p, f))
        bits.append(code(shorten(f.test_id) if f.test_id else f.module) + (f" {text(runs)}" if runs else ""))
    return ", ".join(bits)


MAX_CAUSES = 20


def causes_table(report: CompatReport, site: str = "") -> list[str]:
    """ "Blocked by": a row per root cause (report.causes) with the packages it decided."""
    if not report.causes:
        return []
    out = [
        "## Blocked by",
        "",
        "What decided these packages' verdicts without being about the packages themselves: "
        "fix the root once, and each package it lists can be tested again.",
        "",
        "| Cause | Root | Packages | |",
        "|---|---|---|---|",
    ]
    for c in report.causes[:MAX_CAUSES]:
        seen: dict[str, tuple[str, str]] = {}  # package -> (a job of it, the test dep it came by)
        for m in c.members:
            job, via = seen.get(m.package, (m.job_id, ""))
            seen[m.package] = (job, via or m.via)
        names = ", ".join(
            _page_link(name, job, site) + (f" (via {text(via)})" if via else "") for name, (job, via) in seen.items()
        )
        root = f"{text(c.root)} {text(c.root_version)}".strip() if c.root else "—"
        out.append(f"| {text(c.text)} | {root} | {names} | {c.count} |")
    return out + _more(len(report.causes) - MAX_CAUSES, "cause") + [""]


def _kinds(p: JobEntry) -> list[str]:
    return sorted({f.kind for f in p.findings}, key=severity)


def _row(p: JobEntry) -> str:
    findings = ", ".join(f"{ICON[k]} {k}" for k in _kinds(p)) or "—"
    verdict = f"{ICON[p.verdict]} **{p.verdict}**"
    if p.qualifier:
        verdict += f" ({text(p.qualifier)})"
    change = f"{CHANGE_ICON[p.change]} {p.change}" if p.change else ""
    return (
        f"| {text(p.name)} | {text(p.version)} | {text(p.interpreter.name)} "
        f"| {verdict} | {findings} | {text(coverage_summary(p.coverage))} "
        f"| {text(wheel_summary(p.wheel))} | {_setup_origin(p)} | {fmt_duration(p.duration)} "
        f"| {change} |"
    )


def _setup_origin(p: JobEntry) -> str:
    """Where the job's test setup came from: ``inferred``, ``matrix.yaml`` or both; and the
    recipe's options that left tests out (harness.render.findings.recipe_narrowing)."""
    ts = p.test_setup
    if ts is None:
        return "—"
    got = {str(v) for v in (ts.tests_from, ts.requires_from, ts.pytest_args_from) if v}
    origin = text(" + ".join(sorted(got))) if got else "—"
    narrowed = recipe_narrowing(ts)  # a job with no findings has no details below: said here
    return f"{origin}; {text(narrowed)}" if narrowed else origin


def _finding(f: Finding, p: JobEntry, brief: bool = False) -> list[str]:
    """A finding: its kind, test, runs per mode and message; the laptop recipe first (also for
    a build failure: harness.render.findings.laptop_recipe); ``brief``: no runner command, no
    evidence (past the lines in full: only the deciding finding is shown, never cut)."""
    head = f"- {ICON.get(f.kind, '')} **{f.kind}**"
    if f.test_id:
        head += " " + code(f.test_id)
    bits = []
    if f.modes:
        bits.append(mode_list(f.modes))
    runs = runs_label(f, runs_per_mode(p, f))
    if runs:
        verb = {"crash": "crashed", "ft-crash": "crashed", "hang": "timed out"}.get(f.kind, "failed")
        bits.append(f"{verb}: {runs}")
    if f.evidence and not brief:
        bits.append(f"evidence: {text(f.evidence)}")
    if f.module:
        bits.append("module " + code(f.module))
    if f.signal:
        bits.append(f"signal {f.signal}")
    if bits:
        head += " — " + ", ".join(bits)
    out = [head]
    if f.message:
        out.append(f"  {text(f.message)}")
    recipe = laptop_recipe(p, f)
    if recipe:  # first: what a reader can run; the runner's own command folded below
        out += ["", "  **Reproduce on your machine:**", "", _indent(block(recipe, "sh"))]
        if f.reproduce and not brief:
            out += [
                "",
                "  <details><summary>The exact command on the machine that ran it</summary>",
                "",
                _indent(block(f.reproduce, "sh")),
                "",
                "  </details>",
            ]
    elif f.reproduce:
        out += ["", "  Reproduce (on the machine that ran it):", "", _indent(block(f.reproduce, "sh"))]
    if f.excerpt and not brief:
        out += ["", "  <details><summary>Evidence</summary>", "", _indent(block(f.excerpt)), "", "  </details>"]
    return out + [""]


def _indent(s: str) -> str:
    return "\n".join("  " + line if line else line for line in s.splitlines())


def _where(p: JobEntry, labels: dict[str, str]) -> str:
    """The job's column label, when there are several (``labels`` is empty otherwise)."""
    name = p.interpreter.name
    return text(labels.get(name, name))


def _answer_line(p: JobEntry) -> str:
    """The job's answer to the question, with its caveat or cause: "_No free-threading problem
    found: fails in threads with the GIL too._"."""
    words = ANSWER_TEXT.get(p.answer, "")
    extra = p.caveat or p.cause
    return f"_{words[:1].upper() + words[1:]}{': ' + text(extra) if extra else ''}._" if words else ""


def _details(p: JobEntry, labels: dict[str, str], brief: bool = False, same: tuple[JobEntry, ...] = ()) -> list[str]:
    """A job: its answer, note, what ran, then its findings grouped by kind, file and modes,
    the deciding group first; ``brief``: the deciding finding alone (the repetitions and the
    other groups are on its page); ``same``: the package's jobs on other interpreters that
    found the same (named in the title, not repeated)."""
    title = f"### {ICON[p.verdict]} {text(p.name)} {text(p.version)} — {p.verdict}"
    if labels:
        title += " · " + " and ".join(_where(q, labels) for q in (p, *same))
    out = [title, ""]
    if line := _answer_line(p):
        out += [line, ""]
    if p.qualifier:
        out += [f"_{text(p.qualifier)}_", ""]
    if p.notes:
        out += [f"> **Note:** {text(p.notes)}", ""]
    if (ran := what_ran(p)) and not brief:
        out += [text(ran), ""]
    if ran and (narrowed := recipe_narrowing(p.test_setup)):  # in brief too: it bounds the verdict
        out += [f"**{text(narrowed)}**", ""]
    left = 0
    for g in groups(p):
        if brief and not g["deciding"]:
            left += g["count"]
            continue
        if g["sentence"]:
            out += [f"**{text(g['sentence'])}**" + (" (the first in full)" if g["rest"] else ""), ""]
        out += _finding(g["lead"], p, brief)
        rest = [] if brief else g["rest"][:MAX_REST]
        for f in rest:
            runs = runs_label(f, runs_per_mode(p, f))
            out.append(f"- {code(f.test_id or f.module or f.kind)}" + (f" — {runs}" if runs else ""))
        left += len(g["rest"]) - len(rest)
        out += [""] if rest else []
    if left:
        out += [f"_… and {left} more finding{'s' if left != 1 else ''} like these: see its page on the site._", ""]
    setup = setup_summary(p.test_setup)
    if setup and not brief:
        out += [f"_Test setup: {text(setup)}_", ""]
    links = [u for u in p.links if safe_url(u)]
    for u in links:
        out.append(f"- <{quote(u, safe=_URL_SAFE)}>")
    if links:
        out.append("")
    return out


def _one_line(p: JobEntry, labels: dict[str, str], site: str) -> str:
    """A job's deciding finding in one line (past BRIEF_LINES)."""
    where = f" · {_where(p, labels)}" if labels else ""
    f = deciding(p)
    what = f": {code(f.test_id)}" if f is not None and f.test_id else ""
    n = len(p.findings)
    count = f" ({n} finding{'s' if n != 1 else ''})" if n else " (a note)"
    return (
        f"- {ICON[p.verdict]} {_page_link(p.name, p.job_id, site)} "
        f"{text(p.version)}{where} — **{p.verdict}**{what}{count}"
    )


def _findings(report: CompatReport, site: str) -> list[str]:
    """Jobs with findings, free-threading problems first: in full up to FINDING_LINES lines,
    then each one's deciding finding with its recipe up to BRIEF_LINES more, then a line each."""
    jobs = [p for p in report.packages if p.findings or p.notes or p.links]
    if not jobs:
        return []
    labels = report.labels() if report.several else {}
    full: list[str] = []
    used = 0  # lines in ``full`` (an evidence block is one item of many lines)
    short: list[JobEntry] = []
    rank = {a: i for i, a in enumerate(ANSWERS)}
    alike: dict[tuple[Any, ...], list[JobEntry]] = {}  # a package's jobs that found the same, together
    for p in sorted(jobs, key=lambda p: (rank.get(p.answer, len(rank)), severity(p.verdict))):
        f = deciding(p)
        key = (p.name, p.version, p.verdict, p.notes, f and (f.kind, f.test_id, f.module, f.message))
        alike.setdefault(key, []).append(p)
    for p, *same in alike.values():
        if short:
            short.append(p)
            continue
        more = _details(p, labels, brief=used > FINDING_LINES, same=tuple(same))
        n = sum(x.count("\n") + 1 for x in more)
        if full and used + n > FINDING_LINES + BRIEF_LINES:
            short.append(p)
            continue
        full += more
        used += n
    out = ["## Findings", "", *full]
    if short:
        where = "on the site" if site else "in report.json and on the site"
        out += [
            f"### {len(short)} more job{'s' if len(short) != 1 else ''} with findings",
            "",
            f"_Their evidence and reproduce commands are {where}._",
            "",
            *(_one_line(p, labels, site) for p in short[:MAX_ONE_LINE]),
            *_more(len(short) - MAX_ONE_LINE, "job"),
            "",
        ]
    return out


def _reused(report: CompatReport) -> list[str]:
    """The jobs this run did not run: their results came from an earlier run (``run --reuse``)."""
    reused = [p for p in report.packages if p.reused_from]
    if not reused:
        return []
    n, total = len(reused), len(report.packages)
    return [
        f"_{n} of {total} job{'s' if total != 1 else ''} not run again: same key and sdist as "
        "in an earlier run, whose results were reused (verdicts decided again from their "
        "phases): "
        + ", ".join(f"{code(p.job_id)} from {code(p.reused_from)}" for p in reused[:MAX_LIST])
        + (f" and {n - MAX_LIST} more" if n > MAX_LIST else "")
        + "._",
        "",
    ]


def _jobs(report: CompatReport) -> list[str]:
    n = len(report.packages)
    if n > MAX_JOB_ROWS:
        return [
            "## Jobs",
            "",
            f"_{n} jobs: their thread coverage, wheel, test setup and "
            "duration are on the site (one page per job) and in report.json._",
            "",
        ]
    return [
        "## Jobs",
        "",
        "| Package | Version | Interpreter | Verdict | Findings | Tests in threads | Wheel "
        "| Test setup | Duration | Change |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(_row(p) for p in report.packages),
        "",
    ]


def render(report: CompatReport, *, title: str = "Free-threaded compatibility report", site_url: str = "") -> str:
    """report.md; ``site_url`` (the published site, https) is linked at the top and from each
    package's name."""
    site = _site(site_url)
    lines = [f"# {title}", ""]
    if site:
        lines += [
            f"**The published table: <{quote(site, safe=_URL_SAFE)}>** — every package's "
            "page with its phases, logs and JSON.",
            "",
        ]
    lines += [x for x in (answers_line(report), "") if answers_line(report)]
    lines += [summary_line(report), "", _meta_line(report), ""]
    lines += _changes(report)
    lines += _reused(report)
    if report.missing:
        lines += ["## Missing results", "", "Expected by the plan, but no result file:", ""]
        lines += [f"- {code(j)}" for j in report.missing[:MAX_LIST]]
        lines += _more(len(report.missing) - MAX_LIST, "missing job") + [""]
    lines += ["## Packages", "", *packages_table(report, site), ""]
    lines += causes_table(report, site)
    lines += _findings(report, site)
    lines += _jobs(report)
    where = f"<{quote(site, safe=_URL_SAFE)}>" if site else "the site (site/pkg/)"
    lines += [f"_Each phase's outcome, command and log: on the package pages of {where}._"]
    return "\n".join(lines).rstrip() + "\n"
