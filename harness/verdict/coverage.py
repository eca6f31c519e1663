"""How much of a suite the threaded runs actually ran in threads (issue #10).

Per GIL mode: tests that ran in parallel threads, tests pytest-run-parallel
ran single-threaded (thread-unsafe, with its reason) or skipped as
thread-unsafe, and tests skipped for their own reasons.  The facts come from
trusted sources only: a threaded run without pytest-xdist (per-test
``PARALLEL`` markers) or a ``--collect-only`` run of the threaded command
(phase kind ``collect``); a threaded run under xdist alone leaves coverage
unknown, because its controller reports nothing true about threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..core.evidence import ModeCoverage, ParallelInfo, least_covered
from ..core.jobspec import Settings
from ..core.model import Finding, Phase
from .reprocommands import reproduce

MAX_REASONS = 200
RED = ("failed", "error", "crashed", "timeout")


def _mode_coverage(mode: int, threads: list[Phase], sources: list[Phase]) -> ModeCoverage:
    trusted: list[ParallelInfo] = [p.parallel for p in sources if p.parallel and p.parallel.trusted]
    single: dict[str, str] = {}
    skipped_unsafe: dict[str, str] = {}
    for par in trusted:
        single.update(par.single)
        skipped_unsafe.update(par.skipped)
    ran: set[str] = set()
    seen: set[str] = set()
    for p in threads:
        for tid, tc in p.tests.items():
            seen.add(tid)
            if tc.outcome != "skipped":
                ran.add(tid)
    skipped = seen - ran - set(skipped_unsafe)
    total = len(ran | set(skipped_unsafe))
    known = bool(trusted)
    in_threads = len(ran - set(single) - set(skipped_unsafe)) if known else None
    reasons = dict(list({**single, **skipped_unsafe}.items())[:MAX_REASONS])
    collected = next((par.collected_parallel for par in trusted if par.collected_parallel is not None), None)
    return ModeCoverage(
        mode=mode,
        known=known,
        source=",".join(sorted({par.source for par in trusted})) or "none",
        in_threads=in_threads,
        single=len(set(single) & ran) if known else None,
        skipped_unsafe=len(skipped_unsafe) if known else None,
        skipped=len(skipped),
        total=total,
        collected_parallel=collected,
        reasons=reasons,
    )


def _in_threads(threads: list[Phase], sources: list[Phase]) -> tuple[set[str] | None, int]:
    """(the ids of the tests that ran in parallel threads, or None when no trusted source says
    which did; the tests that ran or were skipped as thread-unsafe)."""
    trusted = [p.parallel for p in sources if p.parallel and p.parallel.trusted]
    single: set[str] = set()
    unsafe: set[str] = set()
    for par in trusted:
        single |= set(par.single)
        unsafe |= set(par.skipped)
    ran = {tid for p in threads for tid, tc in p.tests.items() if tc.outcome != "skipped"}
    return (ran - single - unsafe if trusted else None), len(ran | unsafe)


def _cut(p: Phase) -> bool:
    """The job's budget ended this run (it did not finish)."""
    return p.hang is not None and (p.hang.job_timeout or p.hang.spent)


def reach(phases: Sequence[Phase]) -> tuple[int | None, int]:
    """(tests checked in threads, tests run): the reach of the free-threading check (issue #44).

    A test is checked when it ran in parallel threads with the GIL off (the suite's threaded
    runs, as ``compute`` counts them) and failed, crashed or hung in no run with the GIL on
    (whole suite or targeted): only there could its outcome differ by mode.  A test failing in
    threads with the GIL on too says nothing about free-threading.  None when no trusted source
    says which tests ran in threads (pytest-xdist alone), or no GIL-off threaded run happened.
    A run the job's budget cut counts for nothing (issue #57): the reach comes from runs that
    finished, and the page says the job was cut (harness.results.answer.cut_runs)."""
    off = [p for p in phases if p.kind == "threads" and not p.subset and p.gil == 0 and not _cut(p)]
    collect = [p for p in phases if p.kind == "collect" and p.gil in (0, None)]
    ids, total = _in_threads(off, off + collect)
    if not off or ids is None:
        return None, total
    on = [p for p in phases if p.kind in ("plain", "threads") and p.gil == 1]
    red = {tid for p in on for tid, tc in p.tests.items() if tc.outcome in RED}
    red |= {c.test_id for p in on for c in p.crashes if c.test_id}
    red |= {t.test_id for p in on if p.hang for t in p.hang.tests if t.test_id}
    return len(ids - red), total


def compute(phases: Sequence[Phase]) -> dict[str, ModeCoverage]:
    """``{"gil0": ModeCoverage, "gil1": ...}`` for every mode with a threaded run of the whole
    suite: a run given only some tests (``Phase.subset``, harness.verdict.gilon) says nothing of
    the suite's coverage, so a mode whose threaded runs all were such has none; nor does a run the
    job's budget cut (the counts come from runs that finished, as the reach's do)."""
    out: dict[str, ModeCoverage] = {}
    whole = [p for p in phases if p.kind == "threads" and not p.subset and not _cut(p)]  # finished runs (#57)
    modes = sorted({p.gil for p in whole if p.gil is not None})
    for m in modes:
        threads = [p for p in whole if p.gil == m]
        collect = [p for p in phases if p.kind == "collect" and p.gil == m]
        if not collect:  # one collect phase may serve every mode
            collect = [p for p in phases if p.kind == "collect" and p.gil is None]
        out[f"gil{m}"] = _mode_coverage(m, threads, threads + collect)
    if "gil0" in out and out["gil0"].known:
        out["gil0"] = replace(out["gil0"], checked=reach(phases)[0])
    return out


def qualifier(cov: dict[str, ModeCoverage], settings: Settings) -> str:
    """ "low thread coverage: k/n tests in threads" below settings.min_parallel_fraction."""
    if not cov:
        return ""
    low = least_covered(cov)
    if low is None:
        if any(c.total for c in cov.values()):
            return "thread coverage unknown"
        return ""
    k, n = low.in_threads, low.total
    if (low.fraction or 0.0) < settings.min_parallel_fraction:
        return f"low thread coverage: {k}/{n} tests in threads"
    return ""


def findings(cov: dict[str, ModeCoverage], phases: Sequence[Phase]) -> list[Finding]:
    """One ``no-thread-coverage`` finding when no test ran in threads (in the modes named)."""
    zero = [c for c in cov.values() if c.known and c.total and c.in_threads == 0]
    if not zero:
        return []
    modes = tuple(c.mode for c in zero)
    n = max(c.total for c in zero)
    src = next((p for p in phases if p.kind == "collect" and p.gil in (*modes, None)), None) or next(
        p for p in phases if p.kind == "threads" and p.gil in modes
    )
    reasons = zero[0].reasons
    lines = [f"{tid}: {why}" for tid, why in list(reasons.items())[:8]]
    if len(reasons) > 8:
        lines.append(f"... and {len(reasons) - 8} more")
    return [
        Finding(
            kind="no-thread-coverage",
            modes=modes,
            count=0,
            runs=n,
            evidence="log",
            excerpt="\n".join(lines) or "no test ran in parallel threads",
            message=f"0/{n} tests ran in parallel threads (pytest-run-parallel ran them single-threaded)",
            reproduce=reproduce(src, None),
            phase=src.name,
        )
    ]
