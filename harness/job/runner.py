"""Run a plan: jobs N at a time, each result written the moment it is done.

Resume: a job whose result file exists with the same key (and is not an
``infra-error``) is skipped; the file is read through ``harness.results.load``'s guarded reader (a
FIFO, a link to a device, a huge or deeply nested file is named in one line and the job runs
again).  Any exception while one job runs -- a bug of ours, whatever a package's files make
the host code raise -- becomes that job's ``infra-error`` result, its traceback in the job's
``logs/harness-error.log``, and the run goes on (issue #29).  SIGINT/SIGTERM: running commands are killed,
in-flight jobs write nothing, finished results stay untouched.  A backend that
breaks (``healthy()`` false after an InfraError) or a result that cannot be
written stops the whole run with InfraError.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
import traceback
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from ..backends.base import Backend, Prepared
from ..config.plan import Job
from ..core import fdwalk
from ..core.errors import InfraError, Interrupted
from ..core.limits import LimitExceeded
from ..core.model import Finding, InterpreterInfo, JobResult, now_iso
from ..core.progress import NullReporter, Reporter
from ..core.wsfs import JobDir
from ..results.load import read_one
from ..reuse import reuse
from ..util.safefiles import write_json_atomic
from . import fetch
from .job import Progress, identity, run_job

__all__ = ["JobRunner", "Prepared", "RunSummary", "existing_result", "result_path", "run_plan"]

log = logging.getLogger(__name__)


class JobRunner(Protocol):
    """The steps of one job (``job.run_job``); a test of the scheduler passes a fake."""

    def __call__(
        self,
        job: Job,
        *,
        interp: InterpreterInfo,
        python: str,
        backend: Backend,
        out: Path,
        key: str,
        progress: Progress,
        tarball: str,
    ) -> JobResult: ...


@dataclass(kw_only=True)
class RunSummary:
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)  # from an earlier run's results (--reuse)
    results: list[JobResult] = field(default_factory=list)
    started: str = ""
    finished: str = ""


def result_path(out: Path, job_id: str) -> Path:
    return out / "results" / f"{job_id}.json"


def existing_result(out: Path, job_id: str, key: str) -> JobResult | None:
    """The finished result of this exact job, if a previous run wrote one."""
    path = result_path(out, job_id)
    if not path.exists() and not path.is_symlink():
        return None
    res, why = read_one(path)
    if res is None:
        log.warning("%s; the job runs again", why)
        return None
    if res.key != key or res.verdict == "infra-error":
        return None
    return res


def infra_result(job: Job, key: str, prepared: Prepared, backend: str, message: str) -> JobResult:
    now = now_iso()
    return replace(
        identity(job, key=key, interp=prepared.info, backend=backend),
        started=now,
        finished=now,
        verdict="infra-error",
        findings=(Finding(kind="infra-error", evidence="log", excerpt=message, message=message),),
    )


HARNESS_BUG_LOG = "harness-error.log"
DISK_LIMITS = ("workspace_bytes", "workspace_files", "file_bytes")
KEPT = ("logs", "junit")  # what the shard's artifact uploads


def free_workspace(root: Path) -> None:
    """Everything of a job's workspace but its logs and JUnit removed (a job that went past a
    disk limit); links removed as links, never followed, without recursion at any depth (#56:
    a deep tree no longer stops the run); never raises."""
    fdwalk.free_workspace(root, keep=KEPT)


def bug_result(job: Job, key: str, prepared: Prepared, backend: str, exc: BaseException, out: Path) -> JobResult:
    """The job's ``infra-error`` when the harness itself failed on it: the exception named, its
    traceback in the job's ``logs/harness-error.log``; never blamed on the package."""
    tb = "".join(traceback.format_exception(exc))
    root = out / "work" / job.job_id
    shown = f"work/{job.job_id}/logs/{HARNESS_BUG_LOG}"
    try:  # through the workspace's handle, as every other write into it (#46): no link followed
        root.mkdir(parents=True, exist_ok=True)
        with JobDir(root) as fs:
            fs.makedirs("logs")
            with fs.create_text(f"logs/{HARNESS_BUG_LOG}") as f:
                f.write(f"ft-harness failed on job {job.job_id} (a bug of ft-harness):\n{tb}")
    except (OSError, ValueError) as e:
        shown = f"not written: {getattr(e, 'strerror', None) or e}"
    log.error("%s: a bug of ft-harness: %s", job.job_id, tb)
    what = f"{type(exc).__name__}: {str(exc)[:500]}"
    message = (
        f"ft-harness failed on this job (a bug of ft-harness, not of the package): {what}; the traceback is in {shown}"
    )
    res = infra_result(job, key, prepared, backend, message)
    tail = "\n".join(tb.rstrip().splitlines()[-12:])
    return replace(res, findings=(replace(res.findings[0], excerpt=tail),))


def _split(
    jobs: Sequence[Job], out: Path, prepared: dict[str, Prepared], force: bool, summary: RunSummary
) -> list[tuple[Job, str]]:
    """The jobs still to run, with their keys; the others go to ``summary`` as reused."""
    todo: list[tuple[Job, str]] = []
    for job in jobs:
        key = job.key(prepared[job.interpreter.name].info.key)
        prev = None if force else existing_result(out, job.job_id, key)
        if prev is None:
            todo.append((job, key))
            continue
        log.info("%s: finished in an earlier run, skipped (use --force to rerun)", job.job_id)
        summary.skipped.append(job.job_id)
        summary.results.append(prev)
    return todo


def _reuse(
    todo: list[tuple[Job, str]], reuse_from: Sequence[Path], sdist_sha256: reuse.Sha256, out: Path, summary: RunSummary
) -> list[tuple[Job, str]]:
    """The jobs still to run once earlier runs' results (``--reuse``) stand for the others; those
    are written to ``out`` and go to ``summary`` as reused."""
    if not reuse_from or not todo:
        return todo
    todo, kept = reuse.pick(todo, reuse.earlier_results(reuse_from), sdist_sha256)
    for res in kept:
        try:
            write_json_atomic(result_path(out, res.job_id), res.to_dict())
        except OSError as e:
            raise InfraError(f"cannot write {result_path(out, res.job_id)}: {e.strerror or e}") from None
        summary.reused.append(res.job_id)
        summary.results.append(res)
    return todo


@dataclass(kw_only=True)
class _Workers:
    """What the worker threads of one run share: each runs one job and writes its result; a
    broken backend or an unwritable result sets ``cancelled`` and is kept in ``fatal``."""

    out: Path
    backend: Backend
    prepared: dict[str, Prepared]
    steps: JobRunner
    reporter: Reporter
    cancelled: threading.Event = field(default_factory=threading.Event)
    fatal: list[InfraError] = field(default_factory=list)

    def one(self, job: Job, key: str) -> JobResult | None:
        """Run one job and write its result; None: cancelled (nothing written)."""
        if self.cancelled.is_set():
            return None
        t0 = time.monotonic()
        res = self._result(job, key, self.prepared[job.interpreter.name])
        if res is None or self.cancelled.is_set():
            return None  # interrupted mid-job: leave no partial result
        res = self._write(job, key, res)
        if res is not None:
            self.reporter.done(res, time.monotonic() - t0)
        return res

    def _result(self, job: Job, key: str, p: Prepared) -> JobResult | None:
        """The job's result, an ``infra-error`` one when it could not run; None: cancelled."""
        name = self.backend.name
        try:
            return self.steps(
                job,
                interp=p.info,
                python=p.python,
                backend=self.backend,
                out=self.out,
                key=key,
                progress=self.reporter.step,
                tarball=p.source_tarball,
            )
        except (InfraError, OSError) as e:
            if isinstance(e, InfraError) and not self.backend.healthy():
                self.fatal.append(e)
                self.cancelled.set()
                return None
            why = str(e) if isinstance(e, InfraError) else f"{e.strerror or e} ({e.filename or 'harness I/O'})"
            return infra_result(job, key, p, name, why)
        except LimitExceeded as e:  # the package's files past a bound of the host's (harness.core.limits)
            if e.limit in DISK_LIMITS:  # what it wrote goes; its logs stay, the run goes on
                free_workspace(self.out / "work" / job.job_id)
            res = infra_result(
                job, key, p, name, f"setup: {job.package.name}: {e} (FT_HARNESS_LIMIT_{e.limit.upper()} raises it)"
            )
            return replace(res, findings=(replace(res.findings[0], evidence="setup"),))
        except Exception as e:  # noqa: BLE001 - a bug of ours: this job's result, and the run goes on
            if self.cancelled.is_set():
                return None
            return bug_result(job, key, p, name, e, self.out)

    def _write(self, job: Job, key: str, res: JobResult) -> JobResult | None:
        """Write ``res`` (a bug result instead when it cannot be serialized); None: not written,
        which stops the run."""
        where = result_path(self.out, job.job_id)
        try:
            try:
                write_json_atomic(where, res.to_dict())
            except (TypeError, ValueError, RecursionError) as e:  # not serializable: a bug of ours
                p = self.prepared[job.interpreter.name]
                res = bug_result(job, key, p, self.backend.name, e, self.out)
                write_json_atomic(where, res.to_dict())
        except OSError as e:
            self.fatal.append(InfraError(f"cannot write {where}: {e.strerror or e}"))
            self.cancelled.set()
            return None
        return res


def run_plan(
    jobs: Sequence[Job],
    *,
    out: Path,
    backend: Backend,
    prepared: dict[str, Prepared],
    workers: int = 1,
    force: bool = False,
    reporter: Reporter | None = None,
    run_one: JobRunner | None = None,
    reuse_from: Sequence[Path] = (),
    sdist_sha256: reuse.Sha256 = fetch.sdist_sha256,
) -> RunSummary:
    """Run ``jobs`` (already sharded) with ``workers`` at once; return what ran and what was reused.

    ``prepared`` has every interpreter the jobs name (``backends.open_backend`` returns it);
    ``run_one`` runs one job's steps (default: ``job.run_job``); ``reuse_from``: earlier runs'
    output dirs whose results stand for a job with the same key and sdist (harness.reuse.reuse)."""
    reporter = reporter or NullReporter()
    out = out.resolve()
    summary = RunSummary(started=now_iso())
    (out / "results").mkdir(parents=True, exist_ok=True)
    todo = _split(jobs, out, prepared, force, summary)
    todo = _reuse(todo, reuse_from, sdist_sha256, out, summary)
    reporter.start(len(jobs), len(summary.skipped) + len(summary.reused), todo=[j.job_id for j, _ in todo])
    run = _Workers(out=out, backend=backend, prepared=prepared, steps=run_one or run_job, reporter=reporter)
    _run_pool(run, todo, workers, summary, total=len(jobs))
    summary.finished = now_iso()
    return summary


def _run_pool(run: _Workers, todo: list[tuple[Job, str]], workers: int, summary: RunSummary, *, total: int) -> None:
    """Run ``todo`` on ``workers`` threads, each result into ``summary`` as it comes; SIGTERM
    (on the main thread) and SIGINT stop it with Interrupted, a fatal error with itself."""
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="job")

    def stop() -> None:
        run.cancelled.set()
        run.backend.cancel()
        pool.shutdown(wait=True, cancel_futures=True)

    with _sigterm_interrupts():
        try:
            pending: set[Future[JobResult | None]] = {pool.submit(run.one, job, key) for job, key in todo}
            while pending:
                finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for f in finished:
                    res = f.result()
                    if res is not None:
                        summary.ran.append(res.job_id)
                        summary.results.append(res)
                if run.fatal:
                    raise run.fatal[0]
        except KeyboardInterrupt:
            stop()
            raise Interrupted(
                f"interrupted: {len(summary.ran) + len(summary.skipped)} of {total} results kept "
                f"in {run.out / 'results'}; rerun the same command to finish the rest"
            ) from None
        except BaseException:  # the backend broke, a result could not be written, or a bug of ours
            stop()
            raise
        finally:
            pool.shutdown(wait=True)
            run.reporter.finish()


def _sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM (a CI runner's cancel) raises KeyboardInterrupt as SIGINT does, while in this
    block, on the main thread (the only one Python runs handlers on)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old_term = signal.signal(signal.SIGTERM, _sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old_term)


@contextlib.contextmanager
def stopped_by_signals(backend: Backend, what: str) -> Iterator[None]:
    """SIGINT and (on the main thread) SIGTERM, as a CI runner's cancel sends them, stop ``what``
    with Interrupted after ``backend.cancel()`` removed every container it runs; a SIGINT that
    the shell ignored (a background job's) is not turned on."""
    try:
        with _sigterm_interrupts():
            yield
    except KeyboardInterrupt:
        backend.cancel()
        raise Interrupted(f"interrupted: {what}") from None
