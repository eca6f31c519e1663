"""The threaded runs planned to the job's budget (issue #58): before any threaded run starts, from
the first plain run's per-test durations, decide what each threaded run covers.

A threaded run gives every test ``threads`` threads × ``iterations`` iterations. For a CPU-bound
test that is about its plain time × threads × iterations of CPU, spread over the cores the run
has. A suite whose threaded runs cost more than the budget left used to run until the budget cut
them, however early in them a problem sat, and got nothing decided. Now:

- **whole**: ``repeat`` runs of the whole suite at the settings' iterations fit: as before.
- **fitted**: breadth first. Every test runs in threads in every planned run; a slow test gets
  fewer iterations (pytest-run-parallel's ``iterations`` marker, set by the harness's plugin) so
  that ``repeat`` runs fit, or as many runs as fit with one iteration for the slowest; never a
  second run of anything before every test had its first.
- **sampled**: even one run with one iteration each does not fit: a stated sample of the tests,
  drawn in an order seeded by the ISO week (the same all week, another the next, so the table's
  reach over weeks rotates), as many as fit one run.

The budget is the time left to the job less what comes after the GIL-off threaded runs (the
GIL-on plain run, the confirmation runs' reserve): the caller's to say. Pure: durations and
numbers in, a plan out. The cost model is an estimate; the job still stops at its budget, and
the result states the reach the runs that finished really had.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date

from ..core.threadplan import ThreadPlan


@dataclass(frozen=True, kw_only=True)
class Plan:
    record: ThreadPlan
    iterations: dict[str, int]  # test id -> iterations, for the tests below the settings'
    keep: tuple[str, ...]  # how == "sampled": the tests given to the threaded runs, else ()
    runs: int  # GIL-off threaded runs planned (≤ repeat)


def week_seed(today: date) -> str:
    year, week, _ = today.isocalendar()
    return f"{year}-W{week:02d}"


def _cost(d: float, its: int, threads: int, cores: float) -> float:
    return d * threads * its / cores


def _fit(durations: Mapping[str, float], target: float, *, threads: int, top: int, cores: float) -> dict[str, int]:
    """Per-test iterations (1..top) whose summed cost fits ``target``: the largest per-test cap."""

    def its_for(cap: float) -> dict[str, int]:
        out = {}
        for t, d in durations.items():
            one = _cost(d, 1, threads, cores)
            out[t] = top if one <= 0 else max(1, min(top, int(cap // one)))
        return out

    def total(its: Mapping[str, int]) -> float:
        return sum(_cost(d, its[t], threads, cores) for t, d in durations.items())

    lo, hi = 0.0, max((_cost(d, top, threads, cores) for d in durations.values()), default=0.0)
    for _ in range(60):  # bisection on the cap: the cost is monotone in it
        mid = (lo + hi) / 2
        if total(its_for(mid)) <= target:
            lo = mid
        else:
            hi = mid
    return its_for(lo)


def _sample(durations: Mapping[str, float], target: float, *, threads: int, cores: float, seed: str) -> list[str]:
    """Tests in the seed's order, as many as fit ``target`` with one iteration each."""
    order = sorted(durations, key=lambda t: hashlib.sha256(f"{seed}\0{t}".encode()).hexdigest())
    keep, used = [], 0.0
    for t in order:
        c = _cost(durations[t], 1, threads, cores)
        if used + c <= target:
            keep.append(t)
            used += c
    return keep


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
            in_threads=n,
            iterations={iterations: n},
            pass_seconds=full,
            why=why,
            tests=n,
            budget_seconds=budget,
        )
        return Plan(record=rec, iterations={}, keep=(), runs=repeat)
    least = overhead + sum(_cost(d, 1, threads, cores) for d in durations.values())
    runs = repeat if least * repeat <= budget else max(1, int(budget // least)) if least <= budget else 1
    target = budget / runs - overhead
    if least <= budget:
        its = _fit(durations, target, threads=threads, top=iterations, cores=cores)
        spread: dict[int, int] = {}
        for it in its.values():
            spread[it] = spread.get(it, 0) + 1
        cost = overhead + sum(_cost(d, its[t], threads, cores) for t, d in durations.items())
        why = (
            f"the whole suite at {iterations} iterations would take about {full:.0f} s a run, "
            f"{budget:.0f} s left for {repeat} run(s): slow tests get fewer iterations, {runs} run(s) of every test"
        )
        rec = ThreadPlan(
            how="fitted", in_threads=n, iterations=spread, pass_seconds=cost, why=why, tests=n, budget_seconds=budget
        )
        return Plan(record=rec, iterations={t: i for t, i in its.items() if i < iterations}, keep=(), runs=runs)
    keep = _sample(durations, max(0.0, budget - overhead), threads=threads, cores=cores, seed=seed)
    cost = overhead + sum(_cost(durations[t], 1, threads, cores) for t in keep)
    why = (
        f"one run of every test with 1 iteration would take about {least:.0f} s, {budget:.0f} s left: "
        f"a sample of {len(keep)} tests (seed {seed}), 1 iteration each"
    )
    rec = ThreadPlan(
        how="sampled",
        in_threads=len(keep),
        iterations={1: len(keep)} if keep else {},
        left_out=n - len(keep),
        seed=seed,
        pass_seconds=cost,
        why=why,
        tests=n,
        budget_seconds=budget,
    )
    return Plan(record=rec, iterations={t: 1 for t in keep}, keep=tuple(keep), runs=1)


def plan_lines(p: Plan) -> str:
    """The plan file the harness's plugin reads: ``<iterations>\\t<test id>`` a line, the tests
    given fewer iterations (``fitted``) or kept (``sampled``; every line is a kept test)."""
    return "".join(f"{it}\t{t}\n" for t, it in sorted(p.iterations.items()))
