"""Sections 2 and 3: schedule (makespan vs the lower bound) and cache (a second identical run).

schedule: the fixture matrix at --jobs 1 and --jobs 2, each into a fresh output dir;
job times are the results' finished - started (whole seconds on disk), the lower bound
max(sum / workers, longest) uses the job times *of that same run*, so it measures the
scheduler, not the machine's throughput at 2 jobs.  The makespan is both the span of the
jobs (first start to last finish) and the CLI's wall time (adds start-up and the report).

cache: the --jobs 1 run above is the "first" run (fresh output dir; the interpreter is
already in the cache, the pip cache as it is); the second is the same command again.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from .common import (
    best_makespan,
    count_downloads,
    iso_epoch,
    job_seconds,
    lower_bound,
    parse_cli,
    ratio,
    results,
    run_cli,
)

log = logging.getLogger(__name__)


def _run(matrix: Path, out: Path, jobs: int, backend: str = "local") -> dict[str, Any]:
    log.info("schedule: %s at --jobs %d (%s backend)", matrix.name, jobs, backend)
    run = run_cli("run", "--matrix", str(matrix), "--out", str(out), "--backend", backend, "--jobs", str(jobs))
    res = results(out)
    times = {k: job_seconds(v) for k, v in res.items()}
    span = (
        (max(iso_epoch(v["finished"]) for v in res.values()) - min(iso_epoch(v["started"]) for v in res.values()))
        if res
        else 0.0
    )
    lb = lower_bound(list(times.values()), jobs)
    best = best_makespan(list(times.values()), jobs)
    return {
        "jobs": jobs,
        "n_jobs": len(res),
        "job_seconds": times,
        "sum_job_seconds": sum(times.values()),
        "longest_job": max(times.values(), default=0.0),
        "lower_bound": round(lb, 3),
        "span": round(span, 3),
        "wall": run.wall,
        "ratio_span": ratio(span, lb),
        "ratio_wall": ratio(run.wall, lb),
        "best_makespan": best,  # exact optimum for these whole jobs
        "ratio_span_best": ratio(span, best) if best else None,
        "cli": parse_cli(run.stdout + run.stderr),
        "verdicts": {k: v["verdict"] for k, v in res.items()},
        "argv": list(run.argv[1:]),
    }


def measure(matrix: Path, tmp: Path, label: str, *, backend: str = "local", first: int = 1) -> dict[str, Any]:
    """--jobs 1 and --jobs 2, one after the other (``first`` says which goes first).

    The second run finds the wheels pip built in the first one in its cache (the
    interpreter's pip cache is shared), so it is the favoured one: ``first=2`` makes the
    --jobs 2 speed-up a lower bound.
    """
    runs = {}
    for jobs in (first, 3 - first):
        runs[jobs] = _run(matrix, tmp / f"{label}-j{jobs}", jobs, backend)
    one, two = runs[1], runs[2]
    return {
        "matrix": label,
        "backend": backend,
        "first": first,
        "target": 1.10,
        "j1": one,
        "j2": two,
        "speedup_wall": ratio(one["wall"], two["wall"]),
    }


def cache(matrix: Path, tmp: Path, label: str, first: dict[str, Any]) -> dict[str, Any]:
    """Rerun the --jobs 1 run into the same output dir; what it rebuilt, re-ran, re-downloaded."""
    out = tmp / f"{label}-j1"
    before = {k: v["finished"] for k, v in results(out).items()}
    run = run_cli("run", "--matrix", str(matrix), "--out", str(out), "--backend", "local", "--jobs", "1")
    after = {k: v["finished"] for k, v in results(out).items()}
    cli = parse_cli(run.stdout + run.stderr)
    downloads_first = {}
    for job in before:
        logs = out / "work" / job / "logs"
        found = []
        for n in ("fetch", "install"):
            if (logs / f"{n}.log").is_file():
                found += count_downloads((logs / f"{n}.log").read_text(errors="replace"))
        downloads_first[job] = found
    return {
        "first_wall": first["wall"],
        "second_wall": run.wall,
        "ratio": ratio(run.wall, first["wall"]),
        "second_cli": cli,
        "first_cli": first["cli"],
        "results_rewritten": sorted(k for k in before if after.get(k) != before[k]),
        # the second run ran no job, so it downloaded nothing; what the first run (and every
        # --force rerun, see overhead) fetches from the network, per job:
        "first_run_downloads": downloads_first,
        "target_builds_downloads": 0,
    }
