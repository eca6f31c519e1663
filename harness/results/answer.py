"""The question the table answers (issue #44): does the package work without the GIL as it does
with it?

Every job's verdict and findings fall under one of four answers, which the headline count, the
chart and the colours of the site and report.md use (the verdict words stay as they are):

- ``ft-problem``: something free-threading causes: it does not build for the free-threaded
  interpreter (``build-failure``), importing it re-enables the GIL, a crash, race, hang or plain
  failure seen with the GIL off and not with it on (``ft-crash``, ``ft-race``, and ``hang`` /
  ``baseline-failure`` whose modes are the GIL-off one only, GIL-on runs having run);
- ``both-modes``: a crash or a hang that happens with the GIL on too.  The runs do not show
  that removing the GIL causes it, so it is no free-threading problem; but the package does not
  work on that interpreter, and counting it as working would hide it.  It has its own answer,
  counted and coloured as serious, next to the free-threading problems;
- ``no-ft-problem``: nothing the GIL's absence changes: ``compatible``, and ``thread-unsafe`` /
  ``baseline-failure`` in both modes (or with the GIL on only), shown as a neutral caveat ("fails
  in threads with the GIL too": the suite's own tests are not thread-safe; free-threading did
  not break them);
- ``not-judged``: nothing to judge by: ``infra-error`` (the harness, the budget), ``no-tests``,
  ``skipped``, and a build failure whose cause is the build environment (a cause of kind
  ``infrastructure`` or ``environment``: a host not reachable, a toolchain or headers missing).

Pure over the report's values (harness.results.report); aggregate calls it once per job.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.model import INFO_KINDS, Finding
from .report import JobEntry

ANSWERS = ("ft-problem", "both-modes", "not-judged", "no-ft-problem")  # the worst first
ANSWER_TEXT = {
    "ft-problem": "free-threading problem",
    "both-modes": "crash or hang with the GIL on too",
    "not-judged": "not judged",
    "no-ft-problem": "no free-threading problem found",
}
NOT_JUDGED = ("infra-error", "no-tests", "skipped")
ENVIRONMENT_CAUSES = ("infrastructure", "environment")
FT_KINDS = ("ft-crash", "ft-race", "gil-reenabled")
CAVEAT_THREADS = "fails in threads with the GIL too"
CAVEAT_PLAIN = "fails without threads too"
SMALL_REACH = 0.5  # settings.min_parallel_fraction's default: a reach below it is qualified
_REFUSES = re.compile(r"does not support the free-threaded build of CPython (\d+\.\d+)", re.I)
_SUPPORTS = re.compile(r"free-threaded (\d+\.\d+) or (?:newer|later)", re.I)


@dataclass(frozen=True, kw_only=True)
class Answer:
    answer: str  # one of ANSWERS
    caveat: str = ""  # a neutral note on "works" ("fails in threads with the GIL too"), or what is serious
    cause: str = ""  # a short cause for a cell: "refuses 3.13t; supports 3.14t+"
    finding: Finding | None = None  # the finding that decided the answer


def worst(answers: Sequence[str]) -> str:
    """The most serious of ``answers`` (a package's row, over its interpreters)."""
    return min(answers, key=lambda a: ANSWERS.index(a) if a in ANSWERS else len(ANSWERS), default="not-judged")


def build_cause(f: Finding | None) -> str:
    """A build failure's cause in a few words, where the build log says it: "refuses 3.13t;
    supports 3.14t+" (cffi 2.1.1's RuntimeError); "does not compile" for a compiler error."""
    if f is None:
        return ""
    text = f"{f.message}\n{f.excerpt}"
    refused = _REFUSES.search(text)
    if refused:
        supports = _SUPPORTS.search(text)
        return f"refuses {refused.group(1)}t" + (f"; supports {supports.group(1)}t+" if supports else "")
    if "does not support the free-threaded build" in text:
        return "refuses free-threaded builds"
    return "does not compile" if f.evidence == "compiler" else "does not install"


def cut_runs(p: JobEntry) -> tuple[int, int] | None:
    """(GIL-off threaded runs of the suite that finished, those that started) when the job's
    budget cut the job (a ``budget-spent`` finding); None when it did not (issue #57)."""
    if not any(f.kind == "budget-spent" for f in p.findings):
        return None
    runs = [ph for ph in p.phases if ph.kind == "threads" and ph.gil == 0]
    return sum(1 for ph in runs if not ph.timed_out and ph.outcome != "timed out"), len(runs)


def _cut_note(checked: object, n: int, cut: tuple[int, int]) -> str:
    done, started = cut
    if not done or not isinstance(checked, int) or isinstance(checked, bool) or n <= 0:
        return "cut by the job's budget before a GIL-off threaded run finished"
    return f"cut by the job's budget ({done} of {started} GIL-off runs finished): {checked} of {n} ran in threads"


def reach_note(
    checked: object, tests: object, least: object = SMALL_REACH, cut: tuple[int, int] | None = None
) -> tuple[str, bool]:
    """The reach of the check in words, and whether it is small (below ``least``, the job's
    settings.min_parallel_fraction): "checked in threads: 412 of 480", "only 12 of 480 checked in
    threads", "nothing checked in threads: 0 of 427" (a suite pytest-run-parallel ran
    single-threaded: watchdog); "checked in threads: unknown"; ("", False) when no test ran.
    ``cut`` (``cut_runs``): the job's budget cut it, said first, with what the finished runs
    covered ("cut by the job's budget (2 of 3 GIL-off runs finished): 182 of 183 ran in
    threads"): nothing was checked against the GIL-on side there (issue #57)."""
    n = tests if isinstance(tests, int) and not isinstance(tests, bool) else 0
    if cut is not None:
        return _cut_note(checked, n, cut), True
    if not isinstance(checked, int) or isinstance(checked, bool):
        return ("checked in threads: unknown", False) if n > 0 else ("", False)
    if n <= 0:
        return "", False
    frac = least if isinstance(least, int | float) and not isinstance(least, bool) else SMALL_REACH
    if checked == 0:
        return f"nothing checked in threads: 0 of {n}", True
    if checked / n < frac:
        return f"only {checked} of {n} checked in threads", True
    return f"checked in threads: {checked} of {n}", False


def _ran_gil_on(p: JobEntry) -> bool:
    return any(ph.kind in ("plain", "threads") and ph.gil == 1 for ph in p.phases)


def _serious(f: Finding, ran_on: bool) -> str:
    what = "crashes" if f.kind == "crash" else "hangs"
    if f.modes == (1,):
        return f"{what} with the GIL on"
    if 1 in f.modes:
        return f"{what} with the GIL on too"
    return f"{what} (no GIL-on run to compare)" if not ran_on else what


def answer(p: JobEntry, cause_kinds: Sequence[str] = ()) -> Answer:
    """The job's answer (module docstring); ``cause_kinds``: the kinds of report.causes that
    list the job."""
    deciding = [f for f in p.findings if f.kind not in INFO_KINDS]
    first = next((f for f in deciding if f.kind == p.verdict), deciding[0] if deciding else None)
    if p.verdict == "build-failure":
        if any(k in ENVIRONMENT_CAUSES for k in cause_kinds):
            return Answer(answer="not-judged", cause="build environment", finding=first)
        return Answer(answer="ft-problem", cause=build_cause(first), finding=first)
    if p.verdict in NOT_JUDGED:
        return Answer(answer="not-judged", finding=first)
    ran_on = _ran_gil_on(p)
    for f in deciding:
        off_only = f.modes == (0,) and ran_on
        if f.kind in FT_KINDS or (f.kind in ("hang", "baseline-failure", "crash") and off_only):
            return Answer(answer="ft-problem", finding=f)
    serious = next((f for f in deciding if f.kind in ("crash", "hang")), None)
    if serious is not None:
        return Answer(answer="both-modes", caveat=_serious(serious, ran_on), finding=serious)
    if p.verdict == "thread-unsafe":
        return Answer(answer="no-ft-problem", caveat=CAVEAT_THREADS, finding=first)
    if p.verdict == "baseline-failure":
        return Answer(answer="no-ft-problem", caveat=CAVEAT_PLAIN, finding=first)
    note, small = reach_note(*p.reach, p.settings.get("min_parallel_fraction", SMALL_REACH))
    planned = planned_note(p)
    caveat = "; ".join(x for x in (unconfirmed_caveat(p.findings), note if small else "", planned) if x)
    return Answer(answer="no-ft-problem", caveat=caveat, finding=first)


def planned_note(p: JobEntry) -> str:
    """A job whose threaded runs were planned to its budget (harness.job.budgetplan, #58): what
    they covered, said in its cell, since the settings' reach was not what ran; "" otherwise."""
    plan = p.thread_plan
    if plan is None or plan.how == "whole":
        return ""
    return "planned to the job's budget: " + plan.reach(int(p.settings.get("iterations") or 0))


def unconfirmed_caveat(findings: Sequence[Finding]) -> str:
    """A ``compatible``'s unconfirmed findings in a cell's words, with the counts that back them
    (issue #57: shown in the cell, not in a tooltip only): "unconfirmed: a test failed 1/3 suite
    runs with the GIL off; alone 4/20 off, 0/20 on"; "" when it has none."""
    found = [f for f in findings if f.kind == "unconfirmed"]
    if not found:
        return ""
    if len(found) > 1:
        return f"unconfirmed: {len(found)} tests failed in some runs, none confirmed"
    f = found[0]
    modes: dict[tuple[int, ...], str] = {(0,): " with the GIL off", (1,): " with the GIL on"}
    mode = modes.get(tuple(f.modes), "")
    said = f"unconfirmed: a test failed {f.count}/{f.runs} suite runs{mode}" if f.runs else "unconfirmed: a test failed"
    alone = [f"{v} {'off' if k == 'gil0' else 'on'}" for k, v in sorted(f.confirmed.items()) if not v.endswith("/0")]
    return f"{said}; alone {', '.join(alone)}" if alone else f"{said}; not re-run alone"
