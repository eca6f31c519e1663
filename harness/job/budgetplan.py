"""The threaded runs planned to the job's budget (issue #58): before any threaded run starts, from
the first plain run's per-test durations, decide what each threaded run covers.

A threaded run gives every test ``threads`` threads × ``iterations`` iterations. For a CPU-bound
test that is about its plain time × threads × iterations of CPU, spread over the cores the run
has. A suite whose threaded runs cost more than the budget left used to run until the budget cut
them, however early in them a problem sat, and got nothing decided. Now:

- **whole**: ``repeat`` runs of the whole suite at the settings' iterations fit: as before.
- **fitted**: breadth first. Every test runs in threads in every planned run; a slow test gets
  fewer iterations (pytest-run-parallel's ``iterations`` marker, set by the harness's plugin),
  then, at one iteration, 2 threads instead of ``threads`` (its ``parallel_threads_limit``
  marker: two threads still race), so that ``repeat`` runs fit, or as many runs as fit with the
  least for the slowest; never a second run of anything before every test had its first.
- **sampled**: even one run at the least for every test does not fit: a stated sample of the
  tests, drawn in an order seeded by the ISO week (the same all week, another the next, so the
  table's reach over weeks rotates), as many as fit one run.

The budget is the time left to the job less what comes after the GIL-off threaded runs (the
GIL-on plain run, the confirmation runs' reserve): the caller's to say. Pure: durations and
numbers in, a plan out. The cost model is an estimate; the job still stops at its budget, and
the result states the reach the runs that finished really had.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date

from ..core.threadplan import ThreadPlan


@dataclass(frozen=True, kw_only=True)
class Plan:
    record: ThreadPlan
    iterations: dict[str, int]  # test id -> iterations, for the tests below the settings'
    keep: tuple[str, ...]  # how == "sampled": the tests given to the threaded runs, else ()
    runs: int  # GIL-off threaded runs planned (≤ repeat)
    threads: dict[str, int] = field(default_factory=dict)  # test id -> threads, for the tests below the settings'


def week_seed(today: date) -> str:
    year, week, _ = today.isocalendar()
    return f"{year}-W{week:02d}"


LEAST_THREADS = 2  # a slow test's threads, at one iteration, before the plan samples


def _cost(d: float, its: int, threads: int, cores: float) -> float:
    return d * threads * its / cores


def _ladder(threads: int, top: int) -> list[tuple[int, int]]:
    """(threads, iterations), dearest first: the settings', fewer iterations, then fewer threads."""
    out = [(threads, it) for it in range(top, 0, -1)]
    return out + ([(LEAST_THREADS, 1)] if threads > LEAST_THREADS else [])


def _fit(
    durations: Mapping[str, float], target: float, *, threads: int, top: int, cores: float
) -> dict[str, tuple[int, int]]:
    """Per test (threads, iterations) of the ladder whose summed cost fits ``target``: the
    dearest each test can have under one cap, the largest cap that fits."""
    ladder = _ladder(threads, top)

    def pick(cap: float) -> dict[str, tuple[int, int]]:
        out = {}
        for t, d in durations.items():
            out[t] = next((c for c in ladder if _cost(d, c[1], c[0], cores) <= cap), ladder[-1])
        return out

    def total(chosen: Mapping[str, tuple[int, int]]) -> float:
        return sum(_cost(d, chosen[t][1], chosen[t][0], cores) for t, d in durations.items())

    lo, hi = 0.0, max((_cost(d, top, threads, cores) for d in durations.values()), default=0.0)
    for _ in range(60):  # bisection on the cap: the cost is monotone in it
        mid = (lo + hi) / 2
        if total(pick(mid)) <= target:
            lo = mid
        else:
            hi = mid
    return pick(lo)


def _sample(durations: Mapping[str, float], target: float, *, least: int, cores: float, seed: str) -> list[str]:
    """Tests in the seed's order, as many as fit ``target`` at the least each."""
    order = sorted(durations, key=lambda t: hashlib.sha256(f"{seed}\0{t}".encode()).hexdigest())
    keep, used = [], 0.0
    for t in order:
        c = _cost(durations[t], 1, least, cores)
        if used + c <= target:
            keep.append(t)
            used += c
    return keep


def _spread(values: Mapping[str, int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for v in values.values():
        out[v] = out.get(v, 0) + 1
    return out


def plan(
    durations: Mapping[str, float],
    *,
    threads: int,
    iterations: int,
    repeat: int,
    budget: float,
    cores: float,
    overhead: float,
    seed: str,
) -> Plan:
    """The GIL-off threaded runs for ``budget`` seconds: see the module's doc."""
    n, cores = len(durations), max(1.0, cores)
    full = overhead + sum(_cost(d, iterations, threads, cores) for d in durations.values())
    if n == 0 or full * repeat <= budget:
        why = f"{repeat} run(s) of the whole suite at {iterations} iterations: about {full:.0f} s each, {budget:.0f} s left"
        rec = ThreadPlan(
            how="whole",
            tests=n,
            in_threads=n,
            iterations={iterations: n},
            threads={threads: n},
            pass_seconds=full,
            budget_seconds=budget,
            why=why,
        )
        return Plan(record=rec, iterations={}, keep=(), runs=repeat)
    least_th, least_it = _ladder(threads, iterations)[-1]
    least = overhead + sum(_cost(d, least_it, least_th, cores) for d in durations.values())
    runs = repeat if least * repeat <= budget else max(1, int(budget // least)) if least <= budget else 1
    if least <= budget:
        chosen = _fit(durations, budget / runs - overhead, threads=threads, top=iterations, cores=cores)
        its = {t: c[1] for t, c in chosen.items()}
        ths = {t: c[0] for t, c in chosen.items()}
        cost = overhead + sum(_cost(d, its[t], ths[t], cores) for t, d in durations.items())
        why = (
            f"the whole suite at {threads} threads × {iterations} iterations would take about {full:.0f} s a run, "
            f"{budget:.0f} s left for {repeat} run(s): slow tests get fewer iterations (then threads), "
            f"{runs} run(s) of every test"
        )
        rec = ThreadPlan(
            how="fitted",
            tests=n,
            in_threads=n,
            iterations=_spread(its),
            threads=_spread(ths),
            pass_seconds=cost,
            budget_seconds=budget,
            why=why,
        )
        return Plan(
            record=rec,
            iterations={t: i for t, i in its.items() if i < iterations or ths[t] < threads},
            threads={t: h for t, h in ths.items() if h < threads},
            keep=(),
            runs=runs,
        )
    return _sampled(durations, budget, least_th=least_th, least=least, overhead=overhead, cores=cores, seed=seed)


def _sampled(
    durations: Mapping[str, float],
    budget: float,
    *,
    least_th: int,
    least: float,
    overhead: float,
    cores: float,
    seed: str,
) -> Plan:
    """Not even one run of every test at the least fits: a sample seeded by the week."""
    n = len(durations)
    keep = _sample(durations, max(0.0, budget - overhead), least=least_th, cores=cores, seed=seed)
    cost = overhead + sum(_cost(durations[t], 1, least_th, cores) for t in keep)
    why = (
        f"one run of every test at {least_th} threads × 1 iteration would take about {least:.0f} s, "
        f"{budget:.0f} s left: a sample of {len(keep)} tests (seed {seed})"
    )
    rec = ThreadPlan(
        how="sampled",
        tests=n,
        in_threads=len(keep),
        iterations={1: len(keep)} if keep else {},
        threads={least_th: len(keep)} if keep else {},
        left_out=n - len(keep),
        seed=seed,
        pass_seconds=cost,
        budget_seconds=budget,
        why=why,
    )
    return Plan(
        record=rec,
        iterations={t: 1 for t in keep},
        threads={t: least_th for t in keep} if least_th > 1 else {},
        keep=tuple(keep),
        runs=1,
    )


def plan_lines(p: Plan) -> str:
    """The plan file the harness's plugin reads: ``<iterations>\\t<threads>\\t<test id>`` a
    line (threads 0: the settings'), the tests given less (``fitted``) or kept (``sampled``;
    every line is a kept test)."""
    return "".join(f"{it}\t{p.threads.get(t, 0)}\t{t}\n" for t, it in sorted(p.iterations.items()))
