"""Helpers every benchmark section shares: statistics, the CLI as a user runs it, output parsing.

The pure functions here (``summarize``, ``lower_bound``, ``parse_cli``,
``count_downloads``, ``iso_epoch``) are unit-tested in tests/unit/benchmarks/test_bench_common.py.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "packages"
INTERP = {"name": "cpython3.13t", "version": "3.13.5", "source": "debian:trixie"}
# Light settings: every phase kind runs (both GIL modes, one threaded repetition), in minutes.
# job_timeout: a job here takes < 1 min; a real suite that hangs where pytest-timeout cannot
# fire (six did once) then costs 5 min, not 15, so `nox -s bench` stays near its budget
SETTINGS = {"repeat": 1, "iterations": 2, "test_timeout": 60, "job_timeout": 300}


# ----------------------------------------------------------------------------- statistics


def summarize(values: Sequence[float]) -> dict[str, Any]:
    """Median, min, max and the relative spread ((max - min) / median) of some measurements."""
    vals = [float(v) for v in values]
    if not vals:
        return {"n": 0, "median": None, "min": None, "max": None, "spread": None, "values": []}
    med = statistics.median(vals)
    return {
        "n": len(vals),
        "median": round(med, 4),
        "min": round(min(vals), 4),
        "max": round(max(vals), 4),
        "spread": round((max(vals) - min(vals)) / med, 4) if med else None,
        "values": [round(v, 4) for v in vals],
    }


def ratio(a: float, b: float) -> float | None:
    return round(a / b, 4) if b > 0 else None


def lower_bound(times: Sequence[float], workers: int) -> float:
    """Best possible makespan of independent jobs on ``workers``: max(sum / workers, longest)."""
    if workers < 1:
        raise ValueError("workers must be >= 1")
    if not times:
        return 0.0
    return max(sum(times) / workers, max(times))


def best_makespan(times: Sequence[float], workers: int, limit: int = 12) -> float | None:
    """The shortest makespan any split of these whole jobs over ``workers`` can reach (exact;
    None past ``limit`` jobs).  With few jobs it is well above ``lower_bound``: 3 equal jobs
    on 2 workers need 2 job lengths, not 1.5."""
    if workers < 1:
        raise ValueError("workers must be >= 1")
    if len(times) > limit:
        return None
    best = float("inf")
    loads = [0.0] * workers

    def place(i: int) -> None:
        nonlocal best
        if i == len(order):
            best = min(best, max(loads))
            return
        seen = set()
        for w in range(workers):
            if loads[w] in seen or loads[w] + order[i] >= best:
                continue
            seen.add(loads[w])
            loads[w] += order[i]
            place(i + 1)
            loads[w] -= order[i]

    order = sorted((float(t) for t in times), reverse=True)
    place(0)
    return best if order else 0.0


def iso_epoch(text: str) -> float:
    """ISO 8601 (as JobResult.started/finished) -> seconds since the epoch."""
    return datetime.fromisoformat(text).timestamp()


# ----------------------------------------------------------------------------- CLI output

_INTERP_LINE = re.compile(r"^interpreter (\S+): (cache hit|built)\b", re.M)
_RAN_LINE = re.compile(r"^(\d+) jobs ran, (\d+) reused\b", re.M)
# pip prints "Downloading <file>" for a file fetched over the network and "Using cached <file>"
# for one served from its HTTP cache; local files show as "Processing <path>".
_DOWNLOAD = re.compile(r"^\s*Downloading (\S+)", re.M)


def parse_cli(text: str) -> dict[str, Any]:
    """What `ft-harness run` said about reuse: interpreter builds / cache hits, jobs ran / reused."""
    states = [m.group(2) for m in _INTERP_LINE.finditer(text)]
    ran = _RAN_LINE.search(text)
    return {
        "interpreter_cache_hits": states.count("cache hit"),
        "interpreter_builds": states.count("built"),
        "jobs_ran": int(ran.group(1)) if ran else None,
        "jobs_reused": int(ran.group(2)) if ran else None,
    }


def count_downloads(log_text: str) -> list[str]:
    """The files pip fetched from the network in one log (its "Downloading X" lines)."""
    return [m.group(1) for m in _DOWNLOAD.finditer(log_text)]


# ----------------------------------------------------------------------------- running


@dataclass(frozen=True, kw_only=True)
class CliRun:
    argv: tuple[str, ...]
    returncode: int
    wall: float
    stdout: str
    stderr: str


def harness_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    env.update({"PYTHONPATH": str(ROOT), "CI": "true"})
    return env


def run_cli(*args: str, timeout: float = 3600) -> CliRun:
    """`python -m harness ARGS` in a subprocess, as a user runs it; wall time included start-up."""
    argv = (sys.executable, "-m", "harness", *args)
    t0 = time.monotonic()
    p = subprocess.run(argv, cwd=ROOT, env=harness_env(), capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return CliRun(argv=argv, returncode=p.returncode, wall=round(wall, 3), stdout=p.stdout, stderr=p.stderr)


def write_matrix(path: Path, packages: Sequence[dict[str, Any]], settings: dict[str, Any] | None = None) -> Path:
    """A matrix.yaml with one flow mapping per line (JSON is YAML), for any number of packages."""
    lines = [
        f"settings: {json.dumps(settings if settings is not None else SETTINGS)}",
        f"interpreters: [{json.dumps(INTERP)}]",
        "packages:",
    ]
    lines += [f"  - {json.dumps(p)}" for p in packages]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def fixture(name: str) -> dict[str, str]:
    return {"name": name, "path": str(FIXTURES / name)}


def results(out: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((out / "results").glob("*.json"))}


def job_seconds(res: dict[str, Any]) -> float:
    """A job's wall time from its result (finished - started; whole seconds on disk)."""
    return iso_epoch(res["finished"]) - iso_epoch(res["started"])
