"""The plan as text: ``json`` (every job with its shard), ``github`` (a strategy.matrix) or
``table`` (for a person)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..core.errors import ConfigError
from .estimate import Durations, estimate_note, estimate_sources
from .plan import Job
from .sharding import check_count, layout, minutes

PLAN_SCHEMA = 1
FORMATS = ("json", "github", "table")


def render_plan(jobs: Sequence[Job], *, fmt: str, shards: int = 1, durations: Durations | None = None) -> str:
    """The plan as text: ``json`` (every job with its shard), ``github`` (a strategy.matrix) or
    ``table`` (for a person: one line a shard, then one a job)."""
    if fmt not in FORMATS:
        raise ConfigError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    check_count(shards)
    where, cost, totals = layout(jobs, shards, durations)
    counts = [0] * shards
    needs: list[dict[str, None]] = [{} for _ in range(shards)]  # interpreters, in plan order
    for s, j in zip(where, jobs, strict=True):
        counts[s - 1] += 1
        needs[s - 1].setdefault(j.interpreter.name, None)
    if fmt == "github":
        include = [
            {
                "shard": f"{i}/{shards}",
                "index": i,
                "jobs": counts[i - 1],
                "expected_seconds": round(totals[i - 1], 1),
                # the interpreters (so the images) this shard's jobs need, comma-separated
                "interpreters": ",".join(needs[i - 1]),
            }
            for i in range(1, shards + 1)
            if counts[i - 1]
        ]
        return json.dumps({"include": include}, separators=(",", ":"))
    if fmt == "table":
        lines = [
            f"{len(jobs)} jobs in {shards} shard(s), expected {minutes(sum(cost))} in all"
            + f" ({estimate_note(jobs, durations)})",
            f"{'shard':>7}  {'jobs':>4}  {'expected':>9}  interpreters",
        ]
        lines += [
            f"{f'{i}/{shards}':>7}  {counts[i - 1]:>4}  {minutes(totals[i - 1]):>9}  " + ", ".join(needs[i - 1])
            for i in range(1, shards + 1)
        ]
        lines += ["", f"{'shard':>7}  {'expected':>9}  job"]
        lines += [
            f"{f'{sh}/{shards}':>7}  {minutes(c):>9}  {j.job_id}"
            for sh, c, j in sorted(zip(where, cost, jobs, strict=True), key=lambda x: x[0])
        ]
        return "\n".join(lines)
    doc = {
        "schema": PLAN_SCHEMA,
        "shards": shards,
        "total_seconds": round(sum(cost), 1),
        "shard_seconds": [round(t, 1) for t in totals],
        "jobs": [
            {**j.to_dict(), "shard": s, "expected_seconds": round(c, 1), "estimate_from": f}
            for j, s, c, f in zip(jobs, where, cost, estimate_sources(jobs, durations), strict=True)
        ],
    }
    return json.dumps(doc, indent=1)
