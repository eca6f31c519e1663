"""An upstream-ready issue for each deciding finding of a job (issue #57), in Markdown.

``issues(report, p, out)`` gives one ``Issue`` per group of deciding findings (harness.render.
findings.groups: one kind, one test file, the same modes) whose kind a maintainer can act on
(``ISSUE_KINDS``; a build failure only when no cause outside the package was found).  Its text:

- a title; the versions (the release and its sdist's sha256, the interpreter's exact version and
  build, pytest and its plugins as the run's log names them, the settings);
- what happened, with counts per GIL mode (the suite's runs, the runs alone) and per interpreter;
- the first failure in full (harness.render.issuefacts: the traceback, a crash's dump, a hang's
  stacks);
- a laptop recipe matching the run (the finding's recipe, harness.job.laptoprecipe, on the exact
  interpreter, in both GIL modes, the test in a loop sized to the observed rate: ``loop_runs``),
  with the output to expect;
- a class (the library, its tests, the interpreter) with the evidence, and a fix where one fits;
- the project's bug tracker from its metadata.

Pure over the report and the facts; ``issues`` reads out/ through issuefacts only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.model import Finding
from ..results.report import CompatReport, JobEntry
from ..util import textsafe
from .common import safe_url
from .findings import groups
from .issuefacts import Facts, facts, read_result
from .issuerecipe import class_of, fix_for, recipe_blocks

ISSUE_KINDS = ("ft-crash", "crash", "ft-race", "hang", "thread-unsafe", "gil-reenabled", "build-failure")
MODE_WORDS = {"gil0": "GIL off (PYTHON_GIL=0)", "gil1": "GIL on (PYTHON_GIL=1)"}


@dataclass(frozen=True, kw_only=True)
class Issue:
    """One issue: the finding it is about, its title and its whole text (Markdown)."""

    finding: Finding
    title: str
    text: str
    facts: Facts


def _ratio(s: str) -> tuple[int, int]:
    k, _, n = s.partition("/")
    return (int(k), int(n)) if k.isdigit() and n.isdigit() else (0, 0)


def mode_counts(f: Finding) -> dict[str, tuple[int, int, int, int]]:
    """Per mode ("gil0", "gil1"): (suite k, suite n, alone k, alone n)."""
    out: dict[str, tuple[int, int, int, int]] = {}
    for mode in ("gil0", "gil1"):
        sk, sn = _ratio(f.by_mode.get(mode, ""))
        ak, an = _ratio(f.confirmed.get(mode, ""))
        if not f.by_mode and f.runs and mode == f"gil{f.modes[0] if f.modes else 0}":
            sk, sn = f.count, f.runs
        if sn or an:
            out[mode] = (sk, sn, ak, an)
    return out


def lower_rate(k: int, n: int) -> float:
    """A conservative estimate of a rate seen k times in n runs: the smaller of the one-sided 95%
    Wilson lower bound and half the observed rate (0 when nothing was seen)."""
    if n <= 0 or k <= 0:
        return 0.0
    p, z = k / n, 1.645
    z2 = z * z
    wilson = (p + z2 / (2 * n) - z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))) / (1 + z2 / n)
    return max(min(wilson, p / 2), 1e-6)


def loop_runs(k: int, n: int, *, chance: float = 0.95, most: int = 500) -> int:
    """How many runs see an event of rate ``lower_rate(k, n)`` at least once with ``chance``:
    ceil(log(1 - chance) / log(1 - p)), at least 1, at most ``most``."""
    p = lower_rate(k, n)
    if p <= 0:
        return most
    if p >= 1:
        return 1
    return max(1, min(most, math.ceil(math.log(1 - chance) / math.log(1 - p))))


def gil_off_rate(f: Finding) -> tuple[int, int]:
    """(failures, runs) of the test in the mode the recipe's loop runs (GIL off, unless the finding
    was only seen with it on): the suite's runs and the runs alone together."""
    counts = mode_counts(f)
    mode = "gil0" if 0 in f.modes or not f.modes else "gil1"
    sk, sn, ak, an = counts.get(mode, (f.count, f.runs, 0, 0))
    return sk + ak, sn + an


def _fence(text: str, lang: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


def _code(s: str) -> str:
    s = s.replace("\n", " ")
    ticks = "`" * (max((len(m) for m in re.findall(r"`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


def _word(s: str) -> str:
    """A name or version as a word: only the characters a PEP 440 version or a PEP 503 name has."""
    return re.sub(r"[^A-Za-z0-9._+!-]", "", s)


def interpreter_line(p: JobEntry) -> str:
    it = p.interpreter
    version = it.full_version or it.version
    build = "free-threaded" if it.free_threaded else "with the GIL"
    extra = [f"`./configure {' '.join(it.configure)}`" if it.configure else "", it.sanitizer or ""]
    how = "installed" if it.source.startswith("python:") else "built by ft-harness"
    src = f"{how} from {_code(it.source)}" if it.source else ""
    return ", ".join(x for x in (f"CPython {version} ({build})", src, *extra) if x)


def title(p: JobEntry, f: Finding) -> str:
    py = f"free-threaded CPython {p.interpreter.full_version or p.interpreter.version}"
    test = f.test_id or p.name
    off_only = tuple(f.modes) == (0,)
    if f.kind == "gil-reenabled":
        return f"Importing `{f.module or p.name}` re-enables the GIL on {py}"
    if f.kind == "build-failure":
        return f"{_word(p.name)} {_word(p.version)} does not build on {py}"
    if f.kind in ("ft-crash", "crash"):
        sig = f" (signal {f.signal})" if f.signal else ""
        return f"`{test}` crashes{sig} in threads" + (" with the GIL off" if off_only else "") + f" on {py}"
    if f.kind == "hang":
        return f"`{test}` hangs in threads" + (" with the GIL off" if off_only else "") + f" on {py}"
    if f.kind == "thread-unsafe":
        return f"`{test}` fails when run in threads (with and without the GIL) on {py}"
    return f"`{test}` fails in threads with the GIL off (a race) on {py}"


def versions_block(p: JobEntry, fx: Facts) -> list[str]:
    pkg = f"{_word(p.name)} {_word(p.version)}".strip()
    if p.sdist_sha256:
        pkg += f" (sdist sha256 `{p.sdist_sha256}`)"
    elif p.source == "local":
        pkg += f" (local source: {_code(p.requested)})" if p.requested else " (local source)"
    s = p.settings
    names = ("threads", "iterations", "repeat", "test_timeout", "confirm", "gil_on", "job_timeout")
    settings = ", ".join(f"{k} {s[k]}" for k in names if k in s)
    return [
        "### Versions",
        "",
        f"- package: {pkg}",
        f"- interpreter: {interpreter_line(p)}",
        f"- test tools: {', '.join(fx.tools) if fx.tools else 'not recorded'}",
        f"- settings: {settings or 'the defaults'} ({p.backend or 'local'} backend, ft-harness {p.harness_version})",
    ]


def _mode_sentence(mode: str, c: tuple[int, int, int, int], kind: str) -> str:
    sk, sn, ak, an = c
    what = "crashed" if kind in ("crash", "ft-crash") else "hung" if kind == "hang" else "failed"
    bits = []
    if sn:
        bits.append(f"{what} in {sk} of {sn} threaded suite runs")
    if an:
        bits.append(f"{what} in {ak} of {an} runs of the test alone")
    return f"- {MODE_WORDS[mode]}: " + "; ".join(bits)


def happened(p: JobEntry, f: Finding, fx: Facts, siblings: Sequence[JobEntry]) -> list[str]:
    lines = ["### What happened", ""]
    if f.message:
        lines += [_code(f.message), ""]  # the package's words: a code span, inert in Markdown and HTML
    counts = mode_counts(f)
    lines += [_mode_sentence(m, c, f.kind) for m, c in counts.items()]
    if "gil1" not in counts and f.kind not in ("gil-reenabled", "build-failure"):
        lines.append("- GIL on (PYTHON_GIL=1): not run")
    if f.kind == "gil-reenabled" and f.module:
        lines.append(f"- the import of {_code(f.module)} re-enabled the GIL (its RuntimeWarning below)")
    for q in siblings:  # the same package on the report's other interpreters
        same = next((g for g in q.findings if (g.kind, g.test_id, g.module) == (f.kind, f.test_id, f.module)), None)
        label = f"CPython {q.interpreter.full_version or q.interpreter.version} ({q.interpreter.name})"
        if same is None:
            lines.append(f"- on {label}: not seen (verdict `{q.verdict}`)")
        else:
            per = "; ".join(
                f"{MODE_WORDS[m].split(' (')[0]} {c[0]}/{c[1]} suite, {c[2]}/{c[3]} alone"
                for m, c in mode_counts(same).items()
            )
            lines.append(f"- on {label}: the same ({per or same.ratio})")
    if fx.runs:
        names = ", ".join(r.name for r in fx.runs[:12]) + (
            f" and {len(fx.runs) - 12} more" if len(fx.runs) > 12 else ""
        )
        lines += ["", f"Runs that showed it: {names}."]
    return lines


def tracker(p: JobEntry) -> str:
    """The project's bug tracker from its metadata: a Project-URL labelled issues/bugs/tracker,
    else its GitHub/GitLab source or home page + /issues; '' when none is safe."""
    urls = p.metadata.urls
    for label, url in urls:
        if re.search(r"issue|bug|tracker", label, re.I) and safe_url(url):
            return safe_url(url)
    for _, url in urls:
        m = re.match(r"https://(github\.com|gitlab\.com|codeberg\.org)/[\w.-]+/[\w.-]+", url)
        if m and safe_url(url):
            return m.group(0).removesuffix(".git") + "/issues"
    return ""


def render(
    p: JobEntry, f: Finding, fx: Facts, siblings: Sequence[JobEntry] = (), group: Sequence[Finding] = ()
) -> Issue:
    """The issue text of finding ``f`` of job ``p`` (``group``: the other tests of its group)."""
    t = title(p, f)
    lines = [f"## {t}", ""]
    where = tracker(p)
    lines += [f"To file at: {where}" if where else "No bug tracker in the package's metadata.", ""]
    lines += versions_block(p, fx) + [""]
    lines += happened(p, f, fx, siblings) + [""]
    if group:
        more = ", ".join(_code(g.test_id or g.module) for g in group[:10])
        lines += [f"The same in {len(group)} more: {more}" + (" and more" if len(group) > 10 else "") + ".", ""]
    lines += ["### The failure", ""]
    if fx.failure:
        lines += [f"The first one, from {fx.failure_from}:", "", _fence(fx.failure), ""]
    else:
        lines += ["Not kept (the run's logs were not found).", ""]
    k, n = gil_off_rate(f)
    lines += recipe_blocks(p, f, k, n, loop_runs(k, n), fx.failure) + [""]
    cls, why = class_of(p, f, mode_counts(f))
    lines += ["### Class", "", f"**{cls}**: {why}", ""]
    fix = fix_for(f)
    if fix:
        lines += ["### Suggested fix", "", fix, ""]
    lines.append(f"_Found by ft-harness {p.harness_version} (job `{p.job_id}`, {p.finished or p.started})._")
    # package text (test ids, messages, logs) made inert for a terminal, a CI log and Markdown:
    # no control character, no line a runner reads as a workflow command
    return Issue(finding=f, title=textsafe.line(t), text=textsafe.lines("\n".join(lines) + "\n"), facts=fx)


def _at_fault(p: JobEntry, f: Finding) -> bool:
    return f.kind != "build-failure" or not p.cause


def issues(report: CompatReport | None, p: JobEntry, out: Path | None) -> list[Issue]:
    """One issue per group of ``p``'s findings a maintainer can act on, the deciding one first."""
    picked = [g for g in groups(p) if g["kind"] in ISSUE_KINDS and _at_fault(p, g["lead"])]
    if not picked:
        return []
    res = read_result(out, p) if out is not None else None
    siblings = [q for q in (report.packages if report else ()) if q.name == p.name and q.job_id != p.job_id]
    made = []
    for g in picked:
        f = g["lead"]
        fx = (
            facts(out, p, f, res) if out is not None else Facts(failure=f.excerpt, failure_from="the finding's excerpt")
        )
        made.append(render(p, f, fx, siblings, g["rest"]))
    return made


def issues_by_job(report: CompatReport, out: Path | None) -> Mapping[str, list[Issue]]:
    """job id -> its issues, for the jobs that have one."""
    found = {}
    for p in report.packages:
        if any(f.kind in ISSUE_KINDS for f in p.findings):
            got = issues(report, p, out)
            if got:
                found[p.job_id] = got
    return found
