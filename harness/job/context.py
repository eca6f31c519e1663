"""What every stage of a job shares: the job, its workspace and backend, its deadline, the
phases so far, and :func:`run_phase`, the one way a stage runs a command (its log header, the
backend's run, the parse of what it wrote).
"""

from __future__ import annotations

import json
import logging
import shlex
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import parse
from ..backends.base import Backend, Workspace
from ..config import indexclient
from ..config.plan import Job
from ..core import logcap
from ..core.errors import InfraError
from ..core.limits import LimitExceeded
from ..core.model import InterpreterInfo, Phase, PhaseKind, TestCommand
from ..core.wsfs import JobDir
from . import jobfiles

log = logging.getLogger(__name__)

Progress = Callable[[str, str], None]  # (job_id, step)


@dataclass
class JobCtx:
    """One job's running state: the stages read it and append to ``phases`` (through
    :func:`run_phase`); what a stage decides travels in the value it returns, not here."""

    job: Job
    ws: Workspace
    backend: Backend
    out: Path
    started: float  # time.monotonic() when the job opened
    budget: float  # the job's budget, seconds (settings.job_timeout)
    progress: Progress
    phases: list[Phase]
    interp: InterpreterInfo
    tarball: str = ""
    env: dict[str, str] = field(default_factory=dict)  # the install steps' env (job.start_env)
    supp: tuple[str, ...] = ()  # TSan's merged suppressions file, as the backend sees it
    store_seconds: float = 0.0  # the wheel store's time (StoreUse.seconds): not the job's
    # the end of the budget kept for the runs alone from the job's start (verdict.confirm.reserve):
    # every other phase stops before it, so the runs alone happen however long the suite runs are
    reserve: float = 0.0

    @property
    def deadline(self) -> float:
        """When the job's budget ends: its start, its budget, and the store's time, which the
        store charges to itself (harness.store.take), added once the store says what it took."""
        return self.started + self.budget + self.store_seconds

    @property
    def tsan(self) -> bool:
        return self.interp.sanitizer == "thread"

    def remaining(self, *, reserved: bool = False) -> float:
        """Seconds left to a phase: to the deadline for a run alone (``reserved``), else to the
        reserve kept for them."""
        return max(1.0, self.deadline - (0.0 if reserved else self.reserve) - time.monotonic())

    @property
    def spent(self) -> bool:
        """The job's budget, but for the reserve kept for the runs alone, is gone: a test phase
        started now would time out at once and read as a hang in a mode whose tests never ran."""
        return self.deadline - self.reserve - time.monotonic() <= 1.0

    def rel(self, host_path: Path) -> str:
        return str(host_path.relative_to(self.out))

    @property
    def fs(self) -> JobDir:
        assert self.ws.fs is not None  # run_job opens it
        return self.ws.fs


def base_env(job: Job) -> dict[str, str]:
    env = dict(job.package.env)
    env.update(
        {
            "PYTHONFAULTHANDLER": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_NO_INPUT": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    if indexclient.public_index():  # the index the plan resolved against: pip looks there too; never
        # its credentials, which package code and every log header (the env) would show (#30)
        env["PIP_EXTRA_INDEX_URL"] = indexclient.public_index()
    return env


def _open_log(ctx: JobCtx, name: str, argv: list[str], env: dict[str, str], cwd: str, tsan_dir: str) -> None:
    try:  # package code may have left a link at logs/, at the log, or at junit/: never followed
        ctx.fs.makedirs("logs")
        ctx.fs.makedirs("junit")
        with ctx.fs.create_text(f"logs/{name}.log") as f:
            f.write(f"$ {shlex.join(argv)}\n# cwd: {cwd}\n# env: {json.dumps(env, sort_keys=True)}\n")
        if tsan_dir:
            ctx.fs.makedirs(tsan_dir)
    except (OSError, ValueError) as e:
        raise InfraError(f"{ctx.job.job_id}: cannot create {name}.log in its workspace: {e}") from None


@dataclass(frozen=True, kw_only=True)
class PhaseSpec:
    """One command of the job, as a stage asks for it: all :func:`run_phase` needs to run it and
    to write its Phase (the run's outcome and the parse of what it wrote are added there)."""

    name: str  # its log's name, logs/<name>.log
    kind: PhaseKind
    command: list[str] | tuple[str, ...] | TestCommand  # argv, or the pytest/tox command in parts
    env: Mapping[str, str]
    cwd: str
    timeout: float
    network: bool = False
    gil: int | None = None
    rep: int = 0
    junit: str = ""  # where --junitxml writes, relative to the workspace
    tsan_dir: str = ""  # TSan's reports, relative to the workspace ("" no TSan)
    idle: float = 0  # silent this long: frozen (0: never asked)
    subset: int = 0  # > 0: the run is given only this many test ids (harness.verdict.gilon)
    isolated: Path | None = None  # in a step of its own where only that host dir is writable (Backend.run_isolated)
    own_budget: bool = False  # the store's step: its own limit (harness.store.take), not cut to the job's deadline
    reserved: bool = False  # a run alone: it may use the end of the budget kept for them (JobCtx.reserve)


def run_phase(ctx: JobCtx, spec: PhaseSpec, *, then: Callable[[Phase], Phase] | None = None) -> Phase:
    """Run one command of the job in the backend; the phase, parsed, is appended and returned.
    ``then``: what the stage adds to the parsed phase before it is appended (what only the
    command's own output says: the install's pure fallback wheel, in pip's report)."""
    name, cmd, env, cwd, tsan_dir = spec.name, spec.command, dict(spec.env), spec.cwd, spec.tsan_dir
    test_command = cmd if isinstance(cmd, TestCommand) else None
    argv = list(cmd.argv()) if isinstance(cmd, TestCommand) else list(cmd)
    ctx.progress(ctx.job.job_id, name)
    log_host = ctx.ws.host("logs", f"{name}.log")  # a name for the backend; made through fs
    _open_log(ctx, name, argv, env, cwd, tsan_dir)
    timeout = spec.timeout if spec.own_budget else min(spec.timeout, ctx.remaining(reserved=spec.reserved))
    if spec.isolated is not None:
        ex = ctx.backend.run_isolated(ctx.ws, argv, env=env, timeout=timeout, log=log_host, out=spec.isolated)
    else:
        ex = ctx.backend.run(
            ctx.ws, argv, env=env, cwd=cwd, timeout=timeout, log=log_host, network=spec.network, idle=spec.idle
        )
    junit = spec.junit
    phase = Phase(
        name=name,
        kind=spec.kind,
        gil=spec.gil,
        rep=spec.rep,
        command=tuple(argv),
        test_command=test_command,
        env=dict(env),
        cwd=cwd,
        exit_code=ex.exit_code,
        signal=ex.signal,
        timed_out=ex.timed_out,
        oom_killed=ex.oom_killed,
        duration=round(ex.duration, 3),
        log=ctx.rel(log_host),
        junit=ctx.rel(ctx.ws.host(*junit.split("/"))) if junit and ctx.fs.is_file(junit) else "",
        infra=ex.infra,
        subset=spec.subset,
    )
    cut = logcap.cap_log(ctx.fs.fd, f"logs/{name}.log")  # a log past log_bytes: head and tail kept
    phase = parse.parse_phase(phase, ctx.out)  # reads below ctx.out through no link (wsfs)
    if cut:  # said in the result too, not only in the middle of the log
        phase = replace(phase, excerpt=f"{phase.excerpt}\n{cut}".strip())
    if tsan_dir:
        phase = replace(phase, tsan=tuple(jobfiles.tsan_reports(ctx.fs, tsan_dir)))
    if then is not None:
        phase = then(phase)
    ctx.phases.append(phase)
    log.info("%s %s: exit %s in %.1fs", ctx.job.job_id, name, ex.exit_code, ex.duration)
    if ex.limit:  # the package filled the host's disk past a named bound: the job stops here
        limit, _, detail = ex.limit.partition(": ")
        raise LimitExceeded(limit, f"in phase {name}: {detail}")
    return phase
