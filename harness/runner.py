"""Run a plan: interpreters first, then jobs N at a time, each result written the moment it is done.

Resume: a job whose result file exists with the same key (and is not an
``infra-error``) is skipped.  SIGINT/SIGTERM: running commands are killed,
in-flight jobs write nothing, finished results stay untouched.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from . import __version__
from .errors import InfraError, Interrupted
from .job import run_job
from .matrix import MatrixSpec
from .model import Finding, InterpreterInfo, JobResult, read_result, write_json_atomic
from .plan import Job

log = logging.getLogger(__name__)


class Reporter(Protocol):
    def start(self, total: int, skipped: int) -> None: ...
    def step(self, job_id: str, step: str) -> None: ...
    def done(self, result: JobResult, elapsed: float) -> None: ...
    def finish(self) -> None: ...


class NullReporter:
    def start(self, total: int, skipped: int) -> None: ...
    def step(self, job_id: str, step: str) -> None: ...
    def done(self, result: JobResult, elapsed: float) -> None: ...
    def finish(self) -> None: ...


@dataclass(frozen=True, kw_only=True)
class Prepared:
    """An interpreter ready for jobs: its facts and the python path as the backend sees it."""

    info: InterpreterInfo
    python: str
    cache_hit: bool
    source_tarball: str = ""  # the CPython source it was built from (TSan suppressions come from it)


@dataclass(kw_only=True)
class RunSummary:
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    results: list[JobResult] = field(default_factory=list)
    started: str = ""
    finished: str = ""


def result_path(out: Path, job_id: str) -> Path:
    return out / "results" / f"{job_id}.json"


def existing_result(out: Path, job_id: str, key: str) -> JobResult | None:
    """The finished result of this exact job, if a previous run wrote one."""
    path = result_path(out, job_id)
    if not path.exists():
        return None
    try:
        res = read_result(path)
    except (OSError, ValueError) as e:
        log.warning("%s: unreadable (%s); the job runs again", path, e)
        return None
    if res.key != key or res.verdict == "infra-error":
        return None
    return res


def infra_result(job: Job, key: str, prepared: Prepared, backend: str, message: str) -> JobResult:
    now = datetime.now(UTC).isoformat(timespec="seconds")
    return JobResult(
        job_id=job.job_id, key=key, package=job.package.name,
        requested=job.package.path or job.package.version,
        source="local" if job.package.is_local else "pypi", interpreter=prepared.info,
        backend=backend, started=now, finished=now, harness_version=__version__,
        verdict="infra-error",
        findings=(Finding(kind="infra-error", evidence="log", excerpt=message, message=message),),
        notes=job.package.notes, links=job.package.links,
    )


def run_plan(spec: MatrixSpec, jobs: Sequence[Job], *, out: Path, backend: Any,
             prepared: dict[str, Prepared], workers: int = 1, force: bool = False,
             reporter: Reporter | None = None) -> RunSummary:
    """Run ``jobs`` (already sharded) with ``workers`` at once; return what ran and what was reused."""
    reporter = reporter or NullReporter()
    out = out.resolve()
    summary = RunSummary(started=datetime.now(UTC).isoformat(timespec="seconds"))
    (out / "results").mkdir(parents=True, exist_ok=True)
    todo: list[tuple[Job, str]] = []
    for job in jobs:
        key = job.key(prepared[job.interpreter.name].info.key)
        prev = None if force else existing_result(out, job.job_id, key)
        if prev is not None:
            summary.skipped.append(job.job_id)
            summary.results.append(prev)
        else:
            todo.append((job, key))
    reporter.start(len(jobs), len(summary.skipped))
    for job_id in summary.skipped:
        log.info("%s: finished in an earlier run, skipped (use --force to rerun)", job_id)
    cancelled = threading.Event()
    fatal: list[InfraError] = []

    def one(job: Job, key: str) -> JobResult | None:
        if cancelled.is_set():
            return None
        p = prepared[job.interpreter.name]
        t0 = time.monotonic()
        try:
            res = run_job(job, interp=p.info, python=p.python, backend=backend, out=out, key=key,
                          progress=reporter.step, tarball=p.source_tarball)
        except (InfraError, OSError) as e:
            if isinstance(e, InfraError) and _backend_broken(backend):
                fatal.append(e)
                cancelled.set()
                return None
            why = str(e) if isinstance(e, InfraError) else f"{e.strerror or e} ({e.filename or 'harness I/O'})"
            res = infra_result(job, key, p, backend.name, why)
        if cancelled.is_set():
            return None  # interrupted mid-job: leave no partial result
        try:
            write_json_atomic(result_path(out, job.job_id), res.to_dict())
        except OSError as e:
            fatal.append(InfraError(f"cannot write {result_path(out, job.job_id)}: {e.strerror or e}"))
            cancelled.set()
            return None
        reporter.done(res, time.monotonic() - t0)
        return res

    old_term = signal.getsignal(signal.SIGTERM)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _sigterm)
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="job")
    futures: dict[Future, str] = {}
    try:
        for job, key in todo:
            futures[pool.submit(one, job, key)] = job.job_id
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for f in finished:
                res = f.result()
                if res is not None:
                    summary.ran.append(res.job_id)
                    summary.results.append(res)
            if fatal:
                raise fatal[0]
    except KeyboardInterrupt:
        cancelled.set()
        _cancel(backend)
        pool.shutdown(wait=True, cancel_futures=True)
        raise Interrupted(
            f"interrupted: {len(summary.ran) + len(summary.skipped)} of {len(jobs)} results kept in "
            f"{out / 'results'}; rerun the same command to finish the rest"
        ) from None
    except InfraError:
        cancelled.set()
        _cancel(backend)
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, old_term)
        reporter.finish()
    summary.finished = datetime.now(UTC).isoformat(timespec="seconds")
    return summary


def _sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _cancel(backend: Any) -> None:
    cancel = getattr(backend, "cancel", None)
    if cancel is not None:
        cancel()


def _backend_broken(backend: Any) -> bool:
    check = getattr(backend, "healthy", None)
    return check is not None and not check()
