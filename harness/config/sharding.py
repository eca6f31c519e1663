"""The plan split into shards: deterministic and pure.

A plan is split by longest-processing-time-first: jobs sorted by expected
seconds (longest first, ties by plan order), each given to the shard with the
least work so far (ties to the lowest shard).  Nothing depends on hashing or
on the machine, so every runner computes the same split from the same input.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence

from ..core.errors import ConfigError
from .estimate import Durations, expected_seconds
from .plan import Job

RUNNER_LIMIT_MIN = 360  # a GitHub-hosted job may run 6 h


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/3"`` -> ``(2, 3)``; anything else is a ConfigError in the CLI's words."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
    if not m:
        raise ConfigError(f"--shard must be I/N with 1 <= I <= N, got {text!r}")
    index, count = int(m.group(1)), int(m.group(2))
    _check_shard(index, count)
    return index, count


def _check_shard(index: int, count: int) -> None:
    ok = all(isinstance(v, int) and not isinstance(v, bool) for v in (index, count))
    if not ok or count < 1 or not 1 <= index <= count:
        raise ConfigError(f"--shard must be I/N with 1 <= I <= N, got {index}/{count}")


def check_count(count: int) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ConfigError(f"--shards must be a positive integer, got {count!r}")


def assign(jobs: Sequence[Job], count: int, durations: Durations | None = None) -> list[int]:
    """The 1-based shard of every job (same order as ``jobs``), by LPT."""
    check_count(count)
    ids = [j.job_id for j in jobs]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise ConfigError(f"the plan names a job twice: {', '.join(dup)}")
    cost = expected_seconds(jobs, durations)
    order = sorted(range(len(jobs)), key=lambda i: (-cost[i], i))
    heap = [(0.0, s) for s in range(1, count + 1)]
    out = [0] * len(jobs)
    for i in order:
        load, s = heapq.heappop(heap)
        out[i] = s
        heapq.heappush(heap, (load + cost[i], s))
    return out


def shard(jobs: Sequence[Job], index: int, count: int, durations: Durations | None = None) -> list[Job]:
    """Shard ``index`` of ``count`` (1-based), in plan order.  Pure and deterministic."""
    _check_shard(index, count)
    where = assign(jobs, count, durations)
    return [j for j, s in zip(jobs, where, strict=True) if s == index]


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


MARGIN = 0.8  # --shards auto keeps every shard under this share of --shard-limit
MAX_SHARDS = 256  # a GitHub strategy matrix runs at most 256 jobs


def shards_to_fit(
    jobs: Sequence[Job], durations: Durations | None, limit_min: float = RUNNER_LIMIT_MIN, margin: float = MARGIN
) -> int:
    """The fewest shards (``--shards auto``) whose expected times all stay under ``margin`` of
    the runner's limit, from measured durations where there are some (``--durations``; the
    others scaled as ``expected_seconds`` does), else from the settings.  A single job longer
    than that cannot be split: it gets a shard of its own, and ``over_limit`` warns of it."""
    if not jobs:
        return 1
    budget = limit_min * 60 * margin
    cost = expected_seconds(jobs, durations)
    n = max(1, min(MAX_SHARDS, len(jobs), int(-(-sum(cost) // budget))))
    while n < min(MAX_SHARDS, len(jobs)):
        _, _, totals = layout(jobs, n, durations)
        if max(totals) <= budget or max(totals) <= max(cost):
            break
        n += 1
    return n


def over_limit(
    jobs: Sequence[Job], shards: int, durations: Durations | None, limit_min: float = RUNNER_LIMIT_MIN
) -> list[str]:
    """One warning per shard whose expected time is over a runner's limit (minutes)."""
    _, _, totals = layout(jobs, shards, durations)
    return [
        f"shard {i}/{shards} is expected to take {minutes(t)}, over the runner's limit of "
        f"{limit_min:g} min (--shard-limit): plan more --shards"
        for i, t in enumerate(totals, 1)
        if t > limit_min * 60
    ]


def layout(jobs: Sequence[Job], shards: int, durations: Durations | None) -> tuple[list[int], list[float], list[float]]:
    """(each job's shard, each job's expected seconds, each shard's total)."""
    where = assign(jobs, shards, durations)
    cost = expected_seconds(jobs, durations)
    totals = [0.0] * shards
    for s, c in zip(where, cost, strict=True):
        totals[s - 1] += c
    return where, cost, totals
