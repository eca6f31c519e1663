"""The report (harness.results.report) -> report.md: a summary line, changes, the packages table (a row per package,
a column per interpreter, what differs between them), findings with evidence (harness.render.mdfindings), the jobs
table.

Suitable as a GitHub step summary and a PR comment, so it stays short whatever the report's
size: changes, missing jobs and findings in full are capped (the rest one line each), the jobs
table is left out above ``MAX_JOB_ROWS`` jobs, and phases are on the site only (each package's
page, linked when ``site_url`` is given).  Everything that came from
a package is escaped: table text has Markdown and HTML specials escaped, code
is fenced with a fence longer than any backtick run inside it, and control characters
(ESC, BEL, NUL ...) and workflow-command line starts are made inert (harness.render.mdtext,
with harness.util.textsafe).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote

from ..core.model import severity
from ..results.answer import ANSWER_TEXT
from ..results.report import Cell, Change, CompatReport, JobEntry
from .chart import runs_label, runs_per_mode, shorten
from .common import coverage_summary, fmt_duration, human_span, safe_url, wheel_summary
from .findings import deciding, recipe_narrowing
from .issuetext import Issue
from .mdfindings import findings_section
from .mdtext import CHANGE_ICON, ICON, URL_SAFE, code, more_left, page_link, text

MAX_LIST = 50  # rows of changes / missing jobs; the rest are counted
MAX_JOB_ROWS = 200  # jobs table rows: above this the table is the site's alone
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
    return out + more_left(len(order) - MAX_LIST, "change") + [""]


def _change(c: Change, several: bool) -> str:
    mark = "**regression**" if c.regression else ""
    where = f" [{text(c.interpreter)}]" if several and c.interpreter else ""
    return (
        f"| {CHANGE_ICON[c.kind]} {mark} | {text(c.package)} {text(c.new_version or c.old_version)}"
        f"{where} | {c.kind} | {text(c.old or '—')} | {text(c.new or '—')} |"
    )


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
        name = page_link(row.name, first.job_id, site) if first else text(row.name)
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
            page_link(name, job, site) + (f" (via {text(via)})" if via else "") for name, (job, via) in seen.items()
        )
        root = f"{text(c.root)} {text(c.root_version)}".strip() if c.root else "—"
        out.append(f"| {text(c.text)} | {root} | {names} | {c.count} |")
    return out + more_left(len(report.causes) - MAX_CAUSES, "cause") + [""]


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


def _not_kept(report: CompatReport) -> list[str]:
    """The jobs whose result file kept only part of their failing per-test outcomes (the limit
    ``result_failing_tests``, harness.core.limits.cap_failing_tests; #56): how many it left out.
    The verdicts were decided on every outcome; the counts in each phase are whole."""
    cut = [(p, sum(ph.failing_not_kept for ph in p.phases)) for p in report.packages]
    cut = [(p, n) for p, n in cut if n]
    if not cut:
        return []
    return [
        "_Failing per-test outcomes not kept in the result file (limit `result_failing_tests`; verdicts "
        "and counts are from all of them): "
        + ", ".join(f"{code(p.job_id)} {n:,} more not kept" for p, n in cut[:MAX_LIST])
        + (f" and {len(cut) - MAX_LIST} more jobs" if len(cut) > MAX_LIST else "")
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


def render(
    report: CompatReport,
    *,
    title: str = "Free-threaded compatibility report",
    site_url: str = "",
    reported: Mapping[tuple[str, str, str], str] | None = None,
    issues: Mapping[str, list[Issue]] | None = None,
) -> str:
    """report.md; ``site_url`` (the published site, https) is linked at the top and from each
    package's name; ``reported`` ((job id, kind, test id or module) -> the upstream issue:
    harness.results.feed.Feed.links) shown beside those findings."""
    site = _site(site_url)
    lines = [f"# {title}", ""]
    if site:
        lines += [
            f"**The published table: <{quote(site, safe=URL_SAFE)}>** — every package's "
            "page with its phases, logs and JSON.",
            "",
        ]
    lines += [x for x in (answers_line(report), "") if answers_line(report)]
    lines += [summary_line(report), "", _meta_line(report), ""]
    lines += _changes(report)
    lines += _reused(report)
    lines += _not_kept(report)
    if report.missing:
        lines += ["## Missing results", "", "Expected by the plan, but no result file:", ""]
        lines += [f"- {code(j)}" for j in report.missing[:MAX_LIST]]
        lines += more_left(len(report.missing) - MAX_LIST, "missing job") + [""]
    lines += ["## Packages", "", *packages_table(report, site), ""]
    lines += causes_table(report, site)
    lines += findings_section(report, site, reported or {}, issues or {})
    lines += _jobs(report)
    where = f"<{quote(site, safe=URL_SAFE)}>" if site else "the site (site/pkg/)"
    lines += [f"_Each phase's outcome, command and log: on the package pages of {where}._"]
    return "\n".join(lines).rstrip() + "\n"
