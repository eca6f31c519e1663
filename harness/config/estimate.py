"""How long a job is expected to take: measured phases (a previous run's, or the shipped
table: harness.config.timings), else a heuristic from the job's shape and settings; the one
estimate ``plan``, shard sizing and the run's ETA use.  Also the reader of a previous run's
durations (``--durations``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import ConfigError
from ..core.model import read_result
from . import timings
from .plan import Job

if TYPE_CHECKING:
    from ..results.report import JobEntry


# Size heuristic, used when no run measured a job (seconds), per phase: medians of the default
# matrix's jobs measured on a 2-core machine (docker, 2026-12-05, harness/data/durations.json),
# rounded up -- a typical job, not the settings' worst case.
INSTALL_SECONDS = {"local": 10.0, "pypi": 15.0}
NATIVE_INSTALL_SECONDS = 45.0  # extra for building a C/C++/Cython/Rust extension
PROBE_SECONDS = 1.0
COLLECT_SECONDS = 2.0
PLAIN_SECONDS = 6.0  # one plain pytest run
THREADED_PER_PASS = 1 / 12  # a threaded run: a plain run's time x (1 + iterations x threads / 12)
OFF_FAILED = 0.15  # expected share of a suite that fails with the GIL off (targeted GIL-on runs)
CONFIRM_SHARE = 0.05  # expected share of the confirmation budget a job spends (most: none)
NATIVE_FACTOR = 1.5  # native test suites tend to be larger and slower
TSAN_FACTOR = 4.0  # a ThreadSanitizer interpreter runs everything several times slower
NATIVE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".pyx", ".rs")
NATIVE_MARKERS = ("Cargo.toml",)
_SCAN_LIMIT = 5000  # files looked at per local tree for the native hint


@functools.lru_cache(maxsize=4096)
def _has_native_code(path: str) -> bool:
    """True when a local source tree carries extension sources (bounded scan, sorted walk)."""
    seen = 0
    for _root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("venv", ".venv"))
        for name in sorted(files):
            seen += 1
            if name.endswith(NATIVE_SUFFIXES) or name in NATIVE_MARKERS:
                return True
            if seen >= _SCAN_LIMIT:
                return False
    return False


def heuristic_profile(job: Job) -> timings.Profile:
    """A job's phases from its shape alone (no run measured it), under its own settings."""
    s = job.settings
    source = "local" if job.package.is_local else "pypi"
    native = job.package.is_local and _has_native_code(job.package.path)
    plain = PLAIN_SECONDS * (NATIVE_FACTOR if native else 1.0)
    threaded = plain * (1 + s.iterations * s.threads * THREADED_PER_PASS)
    return timings.Profile(
        install=INSTALL_SECONDS[source] + (NATIVE_INSTALL_SECONDS if native else 0.0),
        probe=PROBE_SECONDS,
        collect=COLLECT_SECONDS,
        plain={m: plain for m in s.gil_modes},
        threads={m: threaded for m in s.gil_modes},
        confirm=CONFIRM_SHARE * s.confirm_budget,
        confirm_off=CONFIRM_SHARE * s.confirm_budget,
        off_failed=OFF_FAILED,
        settings=timings.row_settings(s) | {"gil_on": timings.FULL},
    )


def heuristic_seconds(job: Job) -> float:
    """Expected seconds of a job from its shape alone (no recorded duration)."""
    tsan = job.interpreter.sanitizer == "thread"
    total = timings.seconds(job.settings, heuristic_profile(job), tsan)
    if tsan:
        total *= TSAN_FACTOR
    return round(total, 3)


Durations = Mapping[str, "float | timings.Profile"]  # job id -> measured seconds or phases


def _measured_seconds(job: Job, d: float | timings.Profile) -> float | None:
    if isinstance(d, timings.Profile):
        return timings.seconds(job.settings, d, job.interpreter.sanitizer == "thread")
    return float(d) if isinstance(d, int | float) and not isinstance(d, bool) and d >= 0 else None


def estimate_sources(jobs: Sequence[Job], durations: Durations | None = None) -> list[str]:
    """Where each job's expected time comes from: "durations" (a previous run's, given), "table"
    (the shipped measured times) or "heuristic" (the settings alone)."""
    table = timings.measured(jobs)
    given = durations or {}
    return ["durations" if j.job_id in given else "table" if j.job_id in table else "heuristic" for j in jobs]


def expected_seconds(jobs: Sequence[Job], durations: Durations | None = None) -> list[float]:
    """Expected seconds per job -- the one estimate ``plan``, shard sizing and the run's ETA use:
    the phases a previous run measured (``durations``: job id -> a ``timings.Profile``, or plain
    seconds), else the shipped table's, each summed for the phases the job's settings will run
    (harness.config.timings.seconds), else the heuristic.

    With some jobs measured, the heuristic of the others is scaled by how far the heuristic was
    off for the measured ones (the same machine, the same load), so the two are comparable.
    """
    guess = [heuristic_seconds(j) for j in jobs]
    # measured here and shipped (harness.config.timings), then the given report's, which wins
    known: dict[str, float | timings.Profile] = {**timings.measured(jobs), **(durations or {})}
    got = [_measured_seconds(j, known[j.job_id]) if j.job_id in known else None for j in jobs]
    scale = 1.0
    rec = [(d, g) for d, g in zip(got, guess, strict=True) if d is not None]
    if rec and sum(g for _, g in rec) > 0 and sum(d for d, _ in rec) > 0:
        scale = sum(d for d, _ in rec) / sum(g for _, g in rec)
    return [round(d, 3) if d is not None else round(g * scale, 3) for d, g in zip(got, guess, strict=True)]


def estimate_note(jobs: Sequence[Job], durations: Durations | None) -> str:
    """Where the estimate comes from, in words: "24 jobs from the shipped table, 2 guessed"."""
    words = {
        "durations": "from --durations",
        "table": "from the shipped table of measured times",
        "heuristic": "guessed from the settings",
    }
    got = estimate_sources(jobs, durations)
    return ", ".join(f"{got.count(k)} {w}" for k, w in words.items() if k in got) or "no jobs"


# --------------------------------------------------------------------------- durations


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        return None
    return float(v)


def _entry_profile(entry: JobEntry) -> float | timings.Profile | None:
    """A report entry's measured phases, else its duration (0: not measured)."""
    if any(_number(p.duration) for p in entry.phases):
        return timings.from_phases(entry.phases, entry.settings)
    return _number(entry.duration) or None


def _from_report(path: Path) -> dict[str, float | timings.Profile]:
    from ..results.load import read_report  # the one guarded reader of a report.json

    out: dict[str, float | timings.Profile] = {}
    for entry in read_report(path, "the").packages:
        got = _entry_profile(entry)
        if got is not None:
            out[entry.job_id] = got
    return out


def _from_results(files: list[Path]) -> dict[str, float | timings.Profile]:
    out: dict[str, float | timings.Profile] = {}
    for f in files:
        try:
            res = read_result(f)
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
            raise ConfigError(f"cannot read result for durations: {str(e)[:200]}", file=str(f)) from None
        out[res.job_id] = timings.from_phases(res.phases, res.settings)
    return out


RESULTS_LIMIT = 300


def durations_from_report(path: Path) -> dict[str, float | timings.Profile]:
    """job_id -> the measured phases (``timings.Profile``) of a previous run: a report.json, or a
    --out dir / results dir (a report entry with no phases: its duration in seconds).  An --out dir
    of up to RESULTS_LIMIT jobs is read from its result files, whose per-test outcomes tell which
    confirmations a targeted GIL-on run keeps; a larger one from its report.json, faster."""
    path = Path(path)
    if path.is_dir():
        results = path / "results" if (path / "results").is_dir() else path
        files = sorted(f for f in results.glob("*.json") if f != path / "report.json")
        if (path / "report.json").is_file() and not 0 < len(files) <= RESULTS_LIMIT:
            return _from_report(path / "report.json")
        if not files:
            raise ConfigError("no report.json and no result files to read durations from", file=str(path))
        return _from_results(files)
    if not path.exists():
        raise ConfigError("no such file (pass --durations REPORT.json)", file=str(path))
    return _from_report(path)
