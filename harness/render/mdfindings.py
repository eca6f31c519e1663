"""report.md's findings section (harness.render.markdown): the jobs with findings, free-threading
problems first, each with its answer, what ran and its findings grouped (harness.render.findings),
a laptop recipe to reproduce each; in full up to ``FINDING_LINES`` lines, then each job's
deciding finding, then a line each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape as html_escape
from typing import Any
from urllib.parse import quote

from ..core.model import Finding, severity
from ..core.proberecord import LaterGil
from ..results.answer import ANSWER_TEXT, ANSWERS
from ..results.feed import https_url
from ..results.report import CompatReport, JobEntry
from .chart import runs_label, runs_per_mode
from .common import mode_list, note_label, safe_url, setup_summary
from .findings import deciding, groups, laptop_recipe, recipe_narrowing, what_ran
from .issuetext import Issue
from .mdtext import ICON, URL_SAFE, block, code, more_left, page_link, text

MAX_FINDINGS_PER_JOB = 5  # findings shown in full under one job
FINDING_LINES = 600  # lines of findings in full; later jobs get their deciding finding ...
BRIEF_LINES = 1500  # ... in this many lines more, then one line each ...
MAX_REST = 5  # test ids listed under a group's first finding (the rest: counted, on the page)
MAX_ONE_LINE = 100  # ... up to this many (the packages table has every verdict anyway)


def _finding(f: Finding, p: JobEntry, brief: bool = False, filed: str = "") -> list[str]:
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
    out = [head + _reported(filed)]
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


def _reported(url: str) -> str:
    """ " · reported: <https://...>" for a finding filed upstream (reported.yaml: https only)."""
    return f" · reported: <{quote(url, safe=URL_SAFE)}>" if https_url(url) else ""


def _indent(s: str) -> str:
    return "\n".join("  " + line if line else line for line in s.splitlines())


def _where(p: JobEntry, labels: dict[str, str]) -> str:
    """The job's column label, when there are several (``labels`` is empty otherwise)."""
    name = p.interpreter.name
    return text(labels.get(name, name))


def _later_gil(p: JobEntry, g: LaterGil) -> str:
    """A module that re-enabled the GIL only with the test deps, as a note (#57)."""
    via = f"with the {code(g.extra)} extra" if g.extra else "a test dependency"
    whose = f"{text(g.dist)}'s {code(g.module)}" if g.dist else code(g.module)
    return f"Only with the test dependencies installed: {via}: {whose} re-enables the GIL ({code('pip install ' + p.name)} does not)."


def _answer_line(p: JobEntry) -> str:
    """The job's answer to the question, with its caveat or cause: "_No free-threading problem
    found: fails in threads with the GIL too._"."""
    words = ANSWER_TEXT.get(p.answer, "")
    extra = p.caveat or p.cause
    return f"_{words[:1].upper() + words[1:]}{': ' + text(extra) if extra else ''}._" if words else ""


def _details(
    p: JobEntry,
    labels: dict[str, str],
    brief: bool = False,
    same: tuple[JobEntry, ...] = (),
    filed: Mapping[tuple[str, str, str], str] | None = None,
    issues: Sequence[Issue] = (),
) -> list[str]:
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
        out += [f"> **{text(note_label(p.started))}** {text(p.notes)}", ""]
    for later in p.gil_with_test_deps:  # not a plain install's: the verdict is not about it (#57)
        out += [_later_gil(p, later), ""]
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
        lead = g["lead"]
        out += _finding(lead, p, brief, (filed or {}).get((p.job_id, lead.kind, lead.test_id or lead.module), ""))
        rest = [] if brief else g["rest"][:MAX_REST]
        for f in rest:
            runs = runs_label(f, runs_per_mode(p, f))
            url = (filed or {}).get((p.job_id, f.kind, f.test_id or f.module), "")
            out.append(f"- {code(f.test_id or f.module or f.kind)}" + (f" — {runs}" if runs else "") + _reported(url))
        left += len(g["rest"]) - len(rest)
        out += [""] if rest else []
    if left:
        out += [f"_… and {left} more finding{'s' if left != 1 else ''} like these: see its page on the site._", ""]
    if not brief:  # the upstream-ready issue of each deciding finding (#57), folded
        for i in issues:
            out += [f"<details><summary>Issue to file: {html_escape(i.title)}</summary>", "", i.text, "</details>", ""]
    setup = setup_summary(p.test_setup)
    if setup and not brief:
        out += [f"_Test setup: {text(setup)}_", ""]
    links = [u for u in p.links if safe_url(u)]
    for u in links:
        out.append(f"- <{quote(u, safe=URL_SAFE)}>")
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
        f"- {ICON[p.verdict]} {page_link(p.name, p.job_id, site)} "
        f"{text(p.version)}{where} — **{p.verdict}**{what}{count}"
    )


def findings_section(
    report: CompatReport,
    site: str,
    filed: Mapping[tuple[str, str, str], str] | None = None,
    issues: Mapping[str, Sequence[Issue]] | None = None,
) -> list[str]:
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
        more = _details(
            p,
            labels,
            brief=used > FINDING_LINES,
            same=tuple(same),
            filed=filed,
            issues=(issues or {}).get(p.job_id, ()),
        )
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
            *more_left(len(short) - MAX_ONE_LINE, "job"),
            "",
        ]
    return out
