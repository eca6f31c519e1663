"""Crashes, hangs and the job's budget in the plain/threads runs -> findings (the verdict's
crash, hang and budget rules; ``harness.verdict.rules`` assembles the verdict).

- ft-crash: a test crashed (signal) with the GIL off and never with it on;
  crash: it crashed with the GIL on (in both modes, or only with it on).
- hang: pytest-timeout fired (or the watchdog), or the job-level timeout killed the phase while
  a test ran past ``test_timeout`` or after pytest's summary; ``slow-in-threads`` when the
  test's plain time x threads x iterations is already past ``test_timeout``.
- budget-spent: the job's budget ran out mid-suite, or before a planned threaded run started.
- a test re-run alone for another finding (a failure: thread-unsafe, ft-race) that crashed there is
  a crash finding of its own (``crashed_alone``), never a footnote of the failure (issue #58).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.evidence import Crash, HungTest
from ..core.jobspec import Settings
from ..core.model import Finding, Phase, by_mode
from ..parse.hang import WATCHDOG_ENDED
from .confirm import event, mode_words
from .ranrun import never_started
from .reprocommands import reproduce

__all__ = ["RUN_KINDS", "budget_findings", "crash_findings", "crashed_alone", "hang_findings"]

RUN_KINDS = ("plain", "threads")


def crash_findings(phases: Sequence[Phase], ran_modes: set[int]) -> list[Finding]:
    seen: dict[str, list[tuple[Phase, Crash]]] = {}
    for p in phases:
        if p.kind not in RUN_KINDS:
            continue
        for c in p.crashes:
            seen.setdefault(c.test_id, []).append((p, c))
    out = []
    for tid, hits in seen.items():
        modes = tuple(sorted({p.gil for p, _ in hits if p.gil is not None}))
        kind = "ft-crash" if modes == (0,) and 1 in ran_modes else "crash"
        relevant = [p for p in phases if p.kind in RUN_KINDS and p.gil in modes]
        first_p, first_c = hits[0]
        sig = first_c.signal
        where = f"{tid} " if tid else "the test process "
        mode_txt = "with the GIL off only" if kind == "ft-crash" else f"in modes {list(modes)}"
        out.append(
            Finding(
                kind=kind,
                test_id=tid,
                modes=modes,
                count=len(hits),
                runs=len(relevant),
                by_mode=by_mode((p for p, _ in hits), (p for p in phases if p.kind in RUN_KINDS)),
                evidence="signal",
                excerpt=first_c.excerpt,
                signal=sig,
                stack_top=first_c.test_frame or first_c.stack_top,
                message=f"{where}crashed ({first_c.fatal or f'signal {sig}'}) {mode_txt}",
                reproduce=reproduce(first_p, tid or None),
                phase=first_p.name,
            )
        )
    return out


def _plain_seconds(phases: Sequence[Phase], tid: str) -> float:
    """The longest time ``tid`` took where it passed in a plain run (0: none known)."""
    return max(
        (
            p.tests[tid].seconds
            for p in phases
            if p.kind == "plain" and tid in p.tests and p.tests[tid].outcome == "passed"
        ),
        default=0.0,
    )


# A threaded run's test takes about its serial cost (time alone x threads x iterations) where its
# threads run one after another (the GIL on, a lock), and more where xdist's other worker or
# another job shares the cores: bottleneck's move_median, 56 s serial, passed alone in threads in
# 15-56 s and timed out at 60 s in all 4 suite runs. A cost within this share of test_timeout
# leaves a timeout unable to tell a hang from a slow test.
SLOW_SHARE = 0.5


def _too_slow(phases: Sequence[Phase], tid: str, kinds: Sequence[str], settings: Settings) -> tuple[float, float]:
    """(its time alone, its serial cost: that x threads x iterations) for a test that timed out
    only in threaded runs, when the cost is at least SLOW_SHARE of test_timeout; else (0, 0)."""
    if not tid or list(kinds) != ["threads"]:
        return 0.0, 0.0
    alone = _plain_seconds(phases, tid)
    cost = alone * settings.threads * settings.iterations
    return (alone, cost) if cost >= SLOW_SHARE * settings.test_timeout else (0.0, 0.0)


def hang_findings(phases: Sequence[Phase], settings: Settings) -> list[Finding]:
    seen: dict[str, list[tuple[Phase, HungTest]]] = {}
    for p in phases:
        if p.kind not in RUN_KINDS or not p.hang:
            continue
        for t in p.hang.tests:
            seen.setdefault(t.test_id, []).append((p, t))
        if p.hang.job_timeout and not p.hang.tests and not p.hang.spent:
            seen.setdefault(p.hang.running, []).append((p, HungTest(test_id=p.hang.running, excerpt=p.hang.why)))
    out = []
    for tid, hits in seen.items():
        modes = tuple(sorted({p.gil for p, _ in hits if p.gil is not None}))
        kinds = sorted({p.kind for p, _ in hits})
        first_p, first = hits[0]
        if not tid and not any(p.tests for p, _ in hits):  # silent before any test started
            out.append(never_started(first_p, first, modes))
            continue
        alone, cost = _too_slow(phases, tid, kinds, settings)
        if cost:
            out.append(
                Finding(
                    kind="slow-in-threads",
                    test_id=tid,
                    modes=modes,
                    count=len(hits),
                    evidence="timeout",
                    excerpt=first.excerpt,
                    phase=first_p.name,
                    reproduce=reproduce(first_p, tid),
                    message=(
                        f"{tid} timed out in threaded runs, modes {list(modes)}, but it takes "
                        f"{alone:.1f} s alone: {settings.threads} threads x "
                        f"{settings.iterations} iterations is {cost:.0f} s one after another, "
                        f"{'past' if cost >= settings.test_timeout else 'near'} test_timeout "
                        f"{settings.test_timeout} s; too slow to tell, not a hang. Raise "
                        f"`settings.test_timeout` past {cost / SLOW_SHARE:.0f} s to test it in threads"
                    ),
                )
            )
            continue
        out.append(
            Finding(
                kind="hang",
                test_id=tid,
                modes=modes,
                count=len(hits),
                runs=len([p for p in phases if p.kind in kinds and p.gil in modes]),
                by_mode=by_mode((p for p, _ in hits), (p for p in phases if p.kind in kinds)),
                evidence="timeout",
                excerpt=first.excerpt,
                stack_top=first.stack_top,
                message=f"{tid or 'a test'} timed out in {'/'.join(kinds)} runs, modes {list(modes)}"
                + (
                    "; its run fell silent, past what either in-process watchdog allows: ft-harness took "
                    "every thread's stack from outside, ended it, and left the test out of the later runs"
                    if first_p.hang and first_p.hang.stalled
                    else "; the job's budget (job_timeout) ended that run while the test was still running past test_timeout"
                    if first_p.hang and first_p.hang.job_timeout and WATCHDOG_ENDED not in first.excerpt
                    else ""  # the watchdog ended its process before the budget cut the run (sqlalchemy 2.1.9)
                ),
                reproduce=reproduce(first_p, tid or None),
                phase=first_p.name,
            )
        )
    return out


def budget_findings(phases: Sequence[Phase], settings: Settings) -> list[Finding]:
    """The job's budget ran out mid-suite (``Hang.spent``), or cut the job before a planned
    threaded run could start (the last phase timed out with a mode's threaded runs missing:
    packaging 26.4's 64,207 tests took the budget before the first threaded run): the runs are
    not whole. Shown; the verdict (infra-error) only when nothing that ran is red."""
    cut = [(p, p.hang.why) for p in phases if p.hang and p.hang.spent]
    missing = [m for m in settings.gil_modes if not any(p.kind == "threads" and p.gil == m for p in phases)]
    cut_runs = [p for p in phases if p.timed_out and not (p.hang and p.hang.stalled)]  # a frozen run:
    # its silence ended it (a hang), not the budget, and the job went on
    last = next((p for p in cut_runs if p.kind in RUN_KINDS), None) or (
        next((p for p in cut_runs if p.kind == "collect"), None) if missing else None
    )
    if not cut and settings.repeat and last is not None:  # cut by the budget (whatever else it showed)
        modes = " or ".join(f"with the GIL {'off' if m == 0 else 'on'}" for m in missing)
        cut = [
            (
                last,
                f"{last.name} timed out after {last.duration:.0f} s"
                + (
                    f": no threaded run {modes} happened"
                    if missing
                    else ": the runs after it, and the runs alone that confirm findings, did not"
                ),
            )
        ]
    if not cut:
        return []
    p, why = cut[0]
    return [
        Finding(
            kind="budget-spent",
            evidence="timeout",
            excerpt=why,
            phase=p.name,
            message=(
                f"the job's budget (job_timeout {settings.job_timeout} s) ran out during {p.name} "
                "with the suite still running; later runs did not start. Raise `settings.job_timeout` "
                "in matrix.yaml or narrow the package's `tests`"
            ),
            reproduce=reproduce(p, None),
        )
    ]


def crashed_alone(findings: Sequence[Finding], phases: Sequence[Phase]) -> list[Finding]:
    """A crash finding for each test that crashed in its runs alone (``verdict.confirm``) while it
    was re-run for another finding: a failure of both modes (``thread-unsafe``), a race. Its suite
    runs failed by assertion, its runs alone crashed: a crash that recurred (or that left its dump)
    is a crash, never buried under a thread-unsafe verdict as a footnote (issue #58). ``ft-crash``
    when it crashed alone with the GIL off only and ran alone with it on too, then decided as every
    "only without the GIL" claim is, on those runs alone (``verdict.modes``)."""
    crashing = {f.test_id for f in findings if f.kind in ("ft-crash", "crash")}
    out: list[Finding] = []
    for f in findings:
        tid = f.test_id
        if not tid or tid in crashing or f.evidence == "tsan" or f.evidence == "timeout":
            continue  # a hang's run alone that the harness ended is no crash
        alone = [
            p
            for p in phases
            if p.kind == "confirm"
            and p.test_command is not None
            and p.test_command.paths == (tid,)
            and p.gil is not None
        ]
        crashed = [p for p in alone if event(p, tid) == "crashed" and not (p.timed_out or p.hang)]
        if not crashed:
            continue
        crashing.add(tid)
        modes = tuple(sorted({p.gil for p in crashed if p.gil is not None}))
        ran = sorted({p.gil for p in alone if p.gil is not None})
        kind = "ft-crash" if modes == (0,) and 1 in ran else "crash"
        per = {m: (sum(1 for p in crashed if p.gil == m), sum(1 for p in alone if p.gil == m)) for m in ran}
        said = ", ".join(f"{k}/{n} {mode_words(m)}" for m, (k, n) in per.items())
        # the run whose dump says most (two threads crashing at once can garble one: parse.crash)
        best = max(
            reversed(crashed), key=lambda p: (bool(p.crash and p.crash.stack_top), bool(p.crash and p.crash.fatal))
        )
        c = best.crash or Crash()
        sig = c.signal if c.signal is not None else best.signal
        out.append(
            Finding(
                kind=kind,
                test_id=tid,
                modes=modes,
                evidence="signal",
                excerpt=c.excerpt or best.excerpt,
                signal=sig,
                stack_top=c.test_frame or c.stack_top,
                confirmed={f"gil{m}": f"{k}/{n}" for m, (k, n) in per.items()},
                message=(
                    f"{tid} crashed ({c.fatal or f'signal {sig}'}) in its runs alone: {said}; "
                    f"re-run alone as a {f.kind} finding ({f.ratio} suite runs"
                    f"{', in which it failed without crashing' if f.evidence == 'junit' else ''})"
                ),
                reproduce=f.reproduce,
                recipe=f.recipe,
                phase=best.name,
            )
        )
    return out
