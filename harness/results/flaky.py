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
  (crashes, timeouts) over its runs on each side, in the runs its counts are of
  (``core.model.counted_runs``: a crash or hang, plain and threaded; a failure a plain run
  nominated, plain; else threaded; on a side with no finding about it, 0 in all of them). The
  same kind of run on both: its runs alone where both sides have them, else the suite's. A test
  fails more often alone than inside its suite (idna 3.20's ``test_version_flag``: 7/8 alone,
  4/6 in its threaded suite runs), so runs alone on one side against suite runs on the other
  would hold a difference chance made. And the same GIL modes: those of its events that both
  sides ran (``Finding.by_mode``). A job whose GIL-off runs pass makes no GIL-on run, so 5/6 runs
  of both modes against 0/3 GIL-off ones would compare a mix (docs/explanation/evidence.md). The
  difference holds when the one-sided Fisher p is at or under ``ALPHA``; else it is *flaky*,
  said with both counts, and is never a regression.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..core.model import Finding, counted_runs, severity
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
    gil_on: bool = False  # the GIL-on events are the other side's: its counts are said first
    modes: tuple[int, ...] = ()  # the GIL modes counted (both sides ran them); () both, or not known
    alone: bool = False  # the counts are of the test's runs alone (settings.confirm), not the suite's

    def describe(self, severe: str, other: str) -> str:
        (k, n), (k2, n2) = self.severe, self.other
        first, second = (other, severe) if self.gil_on else (severe, other)
        mode = "GIL-off " if self.modes == (0,) else "GIL-on " if self.modes == (1,) else ""
        runs = f"{mode}runs{' alone' if self.alone else ''}"
        if not n or not n2:  # one side has no runs of the modes the other's events are in
            ran, none = (first, second) if n else (second, first)
            return (
                f"flaky: `{self.test_id}` {max(k, k2)}/{max(n, n2)} {runs} on {ran}; {none} has no counts of the "
                "same GIL mode(s) to compare: not a difference the runs hold"
            )
        return (
            f"flaky: `{self.test_id}` {k}/{n} {runs} on {first}, {k2}/{n2} on {second} "
            f"(one-sided Fisher p = {self.p:.2f} > {ALPHA}): not a difference the runs hold"
        )


Counts = dict[int, tuple[int, int]]  # GIL mode -> (events, runs)


def _per_mode(ratios: dict[str, str]) -> Counts:
    """{"gil0": "4/5"} -> {0: (4, 5)}: the modes with runs."""
    out: Counts = {}
    for key, ratio in ratios.items():
        a, _, b = str(ratio).partition("/")
        if key.startswith("gil") and key[3:].isdigit() and a.isdigit() and b.isdigit() and int(b):
            out[int(key[3:])] = (int(a), int(b))
    return out


def _suite_runs(job: JobEntry, mode: int, f: Finding) -> int:
    """The job's runs in ``mode`` of the kinds ``f``'s counts are of: what a test with no
    finding there passed."""
    kinds = counted_runs(f)
    return sum(1 for p in job.phases if p.kind in kinds and p.gil == mode and p.outcome != "infra")


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
    g = same[0] if same else None
    if g is not None and (1 in g.modes) != (1 in f.modes):  # the same event, its GIL-on part differs
        both, off = (f, g) if 1 in f.modes else (g, f)
        held = _compare(both, off, other, (1,))
        return replace(held, gil_on=both is g) if held is not None else None
    return _compare(f, g, other, f.modes or (0, 1))


def _compare(f: Finding, g: Finding | None, other: JobEntry, modes: tuple[int, ...]) -> Flaky | None:
    """``f``'s events against the other side's (``g``, or none in ``other``'s threaded runs) in
    the ``modes`` both sides ran, one kind of run: alone where both have runs alone, else suite."""
    for alone in (True, False):
        mine = _per_mode(f.confirmed if alone else f.by_mode)
        if g is not None:
            theirs = _per_mode(g.confirmed if alone else g.by_mode)
        else:
            theirs = {} if alone else {m: (0, n) for m in (0, 1) if (n := _suite_runs(other, m, f))}
        common = [m for m in modes if m in mine and m in theirs]
        if common:
            held = _held(f.test_id, _total(mine, common), _total(theirs, common))
            return replace(held, modes=tuple(common), alone=alone) if held is not None else None
    if not f.by_mode or (g is not None and not g.by_mode):  # a result from before schema 15: its
        # whole counts, where they are of the same modes on both sides (not a mix of modes)
        if g is None and all(_suite_runs(other, m, f) for m in modes):
            return _held(f.test_id, (f.count, f.runs), (0, sum(_suite_runs(other, m, f) for m in modes)))
        if g is not None and g.runs and g.modes == f.modes:
            return _held(f.test_id, (f.count, f.runs), (g.count, g.runs))
    return _held(f.test_id, (f.count, f.runs), (0, 0))  # no mode of its events ran on both sides


def _total(counts: Counts, modes: list[int]) -> tuple[int, int]:
    return (sum(counts[m][0] for m in modes), sum(counts[m][1] for m in modes))


def _held(test_id: str, mine: tuple[int, int], theirs: tuple[int, int]) -> Flaky | None:
    if mine[1] == 0 or theirs[1] == 0:
        return Flaky(test_id=test_id, severe=mine, other=theirs, p=1.0)  # no counts back it
    p = fisher_greater(mine[0], mine[1], theirs[0], theirs[1])
    return None if p <= ALPHA else Flaky(test_id=test_id, severe=mine, other=theirs, p=p)
