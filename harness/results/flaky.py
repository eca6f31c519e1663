"""Whether a verdict that differs between two jobs of one package is a difference or chance (#47).

Two jobs of one release differ in their verdict between two interpreter columns ("Across
interpreters") or between two reports (``ft-harness diff``). When the verdicts rest on
intermittent events (a test that failed in some runs), one run's counts say little: wrapt 2.0.1's
``test_wrap_class_method_inherited`` fails in about 1 of 8 threaded runs on both 3.13.5t and
3.13.15t, so one column is ``thread-unsafe`` and the other ``compatible`` by chance. The rule, the
same as for the GIL modes (docs/explanation/evidence.md):

- a difference that does not rest on counts (a build, an import's GIL warning, no tests, a job
  skipped or broken), or that a new release explains, is what it is;
- otherwise the more severe side's deciding test is compared between the two jobs: its failures
  (crashes, timeouts) over its runs on each side, the same kind of run on both: its runs alone
  where both sides have them, else the suite's (on a side with no finding about it, 0 in that
  job's whole-suite threaded runs). A test fails more often alone than inside its suite (idna
  3.20's ``test_version_flag``: 7/8 alone, 4/6 in its threaded suite runs), so runs alone on one
  side against suite runs on the other would hold a difference chance made. The difference holds
  when the one-sided Fisher p is at or under ``ALPHA``; else it is *flaky*, said with both
  counts, and is never a regression.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..core.model import Finding, severity
from ..util.stats import ALPHA, fisher_greater
from .report import JobEntry

COUNTED = ("ft-crash", "crash", "hang", "ft-race", "thread-unsafe", "baseline-failure", "compatible")
# the kinds of one event: a finding on the other side counts only if it saw the same event
FAMILY = {
    "ft-crash": "crash",
    "crash": "crash",
    "hang": "hang",
    "ft-race": "fail",
    "thread-unsafe": "fail",
    "baseline-failure": "fail",
    "unconfirmed": "fail",
}


@dataclass(frozen=True, kw_only=True)
class Flaky:
    """A difference of verdict the counts do not hold: the deciding test and both sides' counts."""

    test_id: str
    severe: tuple[int, int]  # (events, runs) on the more severe side
    other: tuple[int, int]
    p: float
    gil_on: bool = False  # the counts are of the runs alone with the GIL on, the other side's first

    def describe(self, severe: str, other: str) -> str:
        (k, n), (k2, n2) = self.severe, self.other
        if self.gil_on:
            return (
                f"flaky: `{self.test_id}` with the GIL on {k}/{n} runs alone on {other}, {k2}/{n2} on "
                f"{severe} (one-sided Fisher p = {self.p:.2f} > {ALPHA}): not a difference the runs hold"
            )
        return (
            f"flaky: `{self.test_id}` {k}/{n} runs on {severe}, {k2}/{n2} on {other} "
            f"(one-sided Fisher p = {self.p:.2f} > {ALPHA}): not a difference the runs hold"
        )


def _alone(f: Finding, modes: tuple[int, ...]) -> tuple[int, int]:
    """A finding's (events, runs) alone in ``modes``; (0, 0) when it was not run alone."""
    k = n = 0
    for m in modes:
        a, _, b = str(f.confirmed.get(f"gil{m}", "")).partition("/")
        if a.isdigit() and b.isdigit():
            k, n = k + int(a), n + int(b)
    return (k, n)


def _runs(f: Finding, modes: tuple[int, ...]) -> tuple[int, int]:
    """A finding's (events, runs) in ``modes``: its runs alone when it has some, else the suite's."""
    alone = _alone(f, modes)
    return alone if alone[1] else (f.count, f.runs)


def _suite_runs(job: JobEntry, modes: tuple[int, ...]) -> int:
    """The job's threaded runs in ``modes``: what a test with no finding there passed."""
    return sum(1 for p in job.phases if p.kind == "threads" and p.gil in modes and p.outcome != "infra")


def _deciding(job: JobEntry) -> Finding | None:
    return next((f for f in job.findings if f.kind == job.verdict and f.test_id), None)


def check(a: JobEntry, b: JobEntry) -> Flaky | None:
    """None when ``a`` and ``b``'s verdicts agree or differ for real (module docstring); else the
    counts that make their difference chance."""
    if a.verdict == b.verdict or a.verdict not in COUNTED or b.verdict not in COUNTED:
        return None
    if a.version and b.version and a.version != b.version:
        return None  # a new release explains it
    severe, other = (a, b) if severity(a.verdict) < severity(b.verdict) else (b, a)
    f = _deciding(severe)
    if f is None:
        return None
    same = [g for g in other.findings if g.test_id == f.test_id and FAMILY.get(g.kind) == FAMILY.get(f.kind)]
    if same and (1 in same[0].modes) != (1 in f.modes):  # the same event, its GIL-on part differs
        return _gil_on(f, same[0])
    modes = f.modes or (0, 1)
    if same and _alone(f, modes)[1] and _alone(same[0], modes)[1]:
        return _held(f.test_id, _alone(f, modes), _alone(same[0], modes))
    # not run alone on both sides: the suite runs of both (one kind of run)
    theirs = (same[0].count, same[0].runs) if same and same[0].runs else (0, _suite_runs(other, modes))
    return _held(f.test_id, (f.count, f.runs), theirs)


def _held(test_id: str, mine: tuple[int, int], theirs: tuple[int, int]) -> Flaky | None:
    if mine[1] == 0 or theirs[1] == 0:
        return Flaky(test_id=test_id, severe=mine, other=theirs, p=1.0)  # no counts back it
    p = fisher_greater(mine[0], mine[1], theirs[0], theirs[1])
    return None if p <= ALPHA else Flaky(test_id=test_id, severe=mine, other=theirs, p=p)


def _gil_on(f: Finding, g: Finding) -> Flaky | None:
    """One side saw the event with the GIL on too, the other with it off only: the difference is
    the GIL-on runs alone of the two (``severe``: the side that claims the GIL-on events)."""
    both, off = (f, g) if 1 in f.modes else (g, f)
    held = _held(f.test_id, _runs(both, (1,)), _runs(off, (1,)))
    return replace(held, gil_on=both is g) if held is not None else None
