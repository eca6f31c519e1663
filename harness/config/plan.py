"""Spec -> jobs; shard(jobs, i, n) deterministic and pure.

One job per (interpreter, package).  A job's ``key`` changes whenever
anything that can change its result changes (the package entry, the
interpreter's build key, the settings), so a rerun resumes by comparing keys.
"""

from __future__ import annotations

import functools
import hashlib
import heapq
import json
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import ConfigError
from ..core.model import read_result
from . import timings
from .matrix import Interpreter, MatrixSpec, Package, Settings

if TYPE_CHECKING:
    from ..results.report import JobEntry


@dataclass(frozen=True, kw_only=True)
class Job:
    job_id: str  # file-name safe: "<interpreter>--<package>"
    interpreter: Interpreter
    package: Package
    settings: Settings

    def key(self, interpreter_key: str) -> str:
        """Digest of what decides this job's result; resume skips a job whose key matches."""
        blob = json.dumps(
            {
                "package": asdict(self.package),
                "interpreter": interpreter_key,
                "settings": asdict(self.settings),
                "phases": PHASES_VERSION,
            },
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:20]

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "interpreter": self.interpreter.name,
            # what the matrix asks for ("" for an installed python: that has not run yet)
            "interpreter_version": self.interpreter.version,
            "interpreter_source": self.interpreter.source.describe(),
            "package": self.package.name,
            # the version the matrix pins or a `top:` selector resolved ("" = latest at run time)
            "version": self.package.version,
            "source": "local" if self.package.is_local else "pypi",
        }


# What the test phases run (not how their output is decided: a result from another version of
# the verdict rules is decided again from its phases, harness.reuse.reuse).  Bump it when a change to
# the job's steps would make an earlier run's phases differ; results keyed before are run again.
PHASES_VERSION = 3  # 2: per-version trees and tests inside the package (harness.testsetup.testdirs); a compiled
# project's pure fallback wheel built from its sdist (harness.verdict.artifact, #35); 3: the GIL-on runs
# only of the tests red with the GIL off (settings.gil_on: targeted, harness.verdict.gilon, #34)


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "x"


def missing_installed(spec: MatrixSpec) -> list[tuple[Interpreter, str]]:
    """The matrix's installed interpreters (``source: python:NAME_OR_PATH``) not found here, each
    with why: no NAME on PATH, or no executable file at PATH.  Only looked up, not run (``build``
    and ``run`` probe and check them)."""
    out = []
    for interp in spec.interpreters:
        src = interp.source
        if src.kind != "python":
            continue
        if src.path:
            if not (os.path.isfile(src.path) and os.access(src.path, os.X_OK)):
                out.append((interp, f"no executable file {src.path}"))
        elif shutil.which(src.name) is None:
            out.append((interp, f"no {src.name!r} on PATH"))
    return out


def make_plan(spec: MatrixSpec) -> list[Job]:
    """All jobs of a matrix, in a stable order (interpreter, then package as listed)."""
    jobs = []
    for it in spec.interpreters:
        for pkg in spec.packages:
            jobs.append(
                Job(
                    job_id=f"{_safe(it.name)}--{_safe(pkg.name)}",
                    interpreter=it,
                    package=pkg,
                    settings=spec.settings,
                )
            )
    return jobs


# --------------------------------------------------------------------------- sharding
#
# A plan is split by longest-processing-time-first: jobs sorted by expected
# seconds (longest first, ties by plan order), each given to the shard with the
# least work so far (ties to the lowest shard).  Nothing depends on hashing or
# on the machine, so every runner computes the same split from the same input.

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


def _check_count(count: int) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ConfigError(f"--shards must be a positive integer, got {count!r}")


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
        probe=PROBE_SECONDS, collect=COLLECT_SECONDS,
        plain={m: plain for m in s.gil_modes}, threads={m: threaded for m in s.gil_modes},
        confirm=CONFIRM_SHARE * s.confirm_budget, confirm_off=CONFIRM_SHARE * s.confirm_budget,
        off_failed=OFF_FAILED, settings=timings.row_settings(s) | {"gil_on": timings.FULL})


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
    return ["durations" if j.job_id in given else "table" if j.job_id in table else "heuristic"
            for j in jobs]


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


def assign(
    jobs: Sequence[Job], count: int, durations: Durations | None = None
) -> list[int]:
    """The 1-based shard of every job (same order as ``jobs``), by LPT."""
    _check_count(count)
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


def shard(
    jobs: Sequence[Job],
    index: int,
    count: int,
    durations: Durations | None = None,
) -> list[Job]:
    """Shard ``index`` of ``count`` (1-based), in plan order.  Pure and deterministic."""
    _check_shard(index, count)
    where = assign(jobs, count, durations)
    return [j for j, s in zip(jobs, where, strict=True) if s == index]


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
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise ConfigError(f"cannot read result for durations: {e}", file=str(f)) from None
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


# --------------------------------------------------------------------------- rendering

PLAN_SCHEMA = 1
FORMATS = ("json", "github", "table")
RUNNER_LIMIT_MIN = 360  # a GitHub-hosted job may run 6 h


def render_plan(
    jobs: Sequence[Job],
    *,
    fmt: str,
    shards: int = 1,
    durations: Durations | None = None,
) -> str:
    """The plan as text: ``json`` (every job with its shard), ``github`` (a strategy.matrix) or
    ``table`` (for a person: one line a shard, then one a job)."""
    if fmt not in FORMATS:
        raise ConfigError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    _check_count(shards)
    where, cost, totals = _layout(jobs, shards, durations)
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
        lines = [f"{len(jobs)} jobs in {shards} shard(s), expected {_minutes(sum(cost))} in all"
                 + f" ({estimate_note(jobs, durations)})",
                 f"{'shard':>7}  {'jobs':>4}  {'expected':>9}  interpreters"]
        lines += [f"{f'{i}/{shards}':>7}  {counts[i - 1]:>4}  {_minutes(totals[i - 1]):>9}  "
                  + ", ".join(needs[i - 1]) for i in range(1, shards + 1)]
        lines += ["", f"{'shard':>7}  {'expected':>9}  job"]
        lines += [f"{f'{sh}/{shards}':>7}  {_minutes(c):>9}  {j.job_id}"
                  for sh, c, j in sorted(zip(where, cost, jobs, strict=True), key=lambda x: x[0])]
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


def estimate_note(jobs: Sequence[Job], durations: Durations | None) -> str:
    """Where the estimate comes from, in words: "24 jobs from the shipped table, 2 guessed"."""
    words = {"durations": "from --durations", "table": "from the shipped table of measured times",
             "heuristic": "guessed from the settings"}
    got = estimate_sources(jobs, durations)
    return ", ".join(f"{got.count(k)} {w}" for k, w in words.items() if k in got) or "no jobs"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


MARGIN = 0.8  # --shards auto keeps every shard under this share of --shard-limit
MAX_SHARDS = 256  # a GitHub strategy matrix runs at most 256 jobs


def shards_to_fit(jobs: Sequence[Job], durations: Durations | None,
                  limit_min: float = RUNNER_LIMIT_MIN, margin: float = MARGIN) -> int:
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
        _, _, totals = _layout(jobs, n, durations)
        if max(totals) <= budget or max(totals) <= max(cost):
            break
        n += 1
    return n


def over_limit(jobs: Sequence[Job], shards: int, durations: Durations | None,
               limit_min: float = RUNNER_LIMIT_MIN) -> list[str]:
    """One warning per shard whose expected time is over a runner's limit (minutes)."""
    _, _, totals = _layout(jobs, shards, durations)
    return [f"shard {i}/{shards} is expected to take {_minutes(t)}, over the runner's limit of "
            f"{limit_min:g} min (--shard-limit): plan more --shards"
            for i, t in enumerate(totals, 1) if t > limit_min * 60]


def _layout(jobs: Sequence[Job], shards: int, durations: Durations | None
            ) -> tuple[list[int], list[float], list[float]]:
    """(each job's shard, each job's expected seconds, each shard's total)."""
    where = assign(jobs, shards, durations)
    cost = expected_seconds(jobs, durations)
    totals = [0.0] * shards
    for s, c in zip(where, cost, strict=True):
        totals[s - 1] += c
    return where, cost, totals


def in_plan(results: Sequence[Any], jobs: Sequence[Job]) -> tuple[list[Any], list[str]]:
    """(the results that belong to a planned job, one line for each that does not).

    A result belongs when its job id is planned, its interpreter came from the planned source
    (and version), and its key is the one the planned job gets with the interpreter key the
    result records: a result of another matrix, of other settings, of another package version,
    or one written by hand (or by package code) names what differs and is never published."""
    planned = {j.job_id: j for j in jobs}
    kept: list[Any] = []
    refused: list[str] = []
    for r in results:
        job = planned.get(r.job_id)
        why = ""
        if job is None:
            why = "its job is not in the plan"
        elif r.interpreter.source != job.interpreter.source.describe():
            why = (f"its interpreter came from {str(r.interpreter.source)[:80]!r}, the plan's "
                   f"from {job.interpreter.source.describe()!r}")
        elif job.interpreter.version and r.interpreter.version != job.interpreter.version \
                and not str(r.interpreter.version).startswith(job.interpreter.version + "."):
            why = f"its interpreter is {str(r.interpreter.version)[:40]}, the plan's {job.interpreter.version}"
        elif r.key != job.key(str(r.interpreter.key)):
            why = "its key is not the planned job's (another package entry, version or settings)"
        if why:
            refused.append(f"{str(r.job_id)[:120]}: not published: {why}")
        else:
            kept.append(r)
    return kept, refused
