"""Local backend: a venv per job and plain subprocesses, each in its own process group.

No isolation beyond that: use it for quick work on your own packages; the
docker backend is the one for untrusted code.  ``network=False`` cannot be
enforced here and is only recorded.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Literal

from ..core import limits
from ..core.model import Exec
from .base import (
    STACKS_GAP,
    STACKS_MAX,
    STACKS_SIGNAL,
    STACKS_WAIT,
    Quiet,
    Workspace,
    asked_note,
    file_limit,
    job_dir,
    killed_note,
)
from .diskuse import DiskWatch

POLL = 1.0  # seconds between checks of a running command's log (``idle``)

# Variables of the harness's own environment that must not leak into a job.
_DROP_PREFIXES = ("PYTHON", "VIRTUAL_ENV", "PIP_", "CONDA", "PYTEST_", "COV_")
# ... except how the user reaches the package index.
_KEEP = ("PIP_CERT", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST", "PIP_FIND_LINKS")


def clean_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROP_PREFIXES)}
    for k in _KEEP:
        if k in os.environ:  # how the user reaches the index is theirs to keep
            env[k] = os.environ[k]
    env.update(extra)
    return env


class LocalBackend:
    name = "local"

    @property
    def base_path(self) -> str:
        return os.environ.get("PATH", os.defpath)

    def __init__(
        self,
        *,
        mem_limit: int | None | Literal["memory_bytes"] = "memory_bytes",
        pip_cache: Path | None = None,
        wheel_store: Path | None = None,
    ) -> None:
        """``mem_limit``: RLIMIT_DATA per process in bytes (the default: the limit ``memory_bytes``;
        None: none, TSan needs none).
        ``pip_cache``: the root of the jobs' pip caches (one per interpreter build below it).
        ``wheel_store``: the local backend's own wheel store (harness.store.wheelstore; read-only by
        convention only, and never read by a docker run: harness.core.stored.store_root)."""
        self.mem_limit = limits.value(mem_limit) if isinstance(mem_limit, str) else mem_limit
        self.pip_cache = pip_cache
        self.wheel_store = wheel_store
        self._procs: dict[int, subprocess.Popen] = {}
        self._lock = threading.Lock()
        self._cancelled = threading.Event()

    def open(self, job_id: str, host_root: Path, python: str, source: str) -> Workspace:
        return Workspace(
            host_root=host_root,
            root=str(host_root),
            python=python,
            source=source,
            pip_cache=str(self.pip_cache) if self.pip_cache else "",
            wheel_store=str(self.wheel_store or ""),
            wheel_host=self.wheel_store,
        )

    def run(
        self,
        ws: Workspace,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: str,
        timeout: float,
        log: Path,
        network: bool,
        idle: float = 0,
    ) -> Exec:
        if self._cancelled.is_set():
            return Exec(exit_code=None, infra="cancelled")
        start = time.monotonic()
        try:  # the log the host just created (job._run), through no link at any component
            with job_dir(ws) as fs:
                fd = fs.open_append(fs.rel(log))
        except (OSError, ValueError) as e:
            return Exec(exit_code=None, infra=f"cannot open the log {log.name}: {e}")
        with os.fdopen(fd, "ab") as out:
            try:
                proc = subprocess.Popen(
                    argv,
                    cwd=cwd,
                    env=clean_env(env),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            except OSError as e:
                return Exec(exit_code=None, infra=f"cannot start {argv[0]}: {e}", duration=time.monotonic() - start)
            self._limit(proc.pid)
            with self._lock:
                self._procs[proc.pid] = proc
            if self._cancelled.is_set():  # cancel() came before it was registered: it did not see it
                _kill_group(proc)
            timed_out, stalled, full = False, False, False
            quiet, deadline = Quiet(fd, idle), start + timeout
            disk = DiskWatch(ws.host_root)
            try:
                while True:
                    try:
                        proc.wait(timeout=max(0.05, min(POLL, disk.due(), deadline - time.monotonic())))
                        break
                    except subprocess.TimeoutExpired:
                        stalled = quiet.stalled()
                        full = disk.over()
                        if full or stalled or time.monotonic() >= deadline:
                            timed_out = not full
                            if stalled:  # its stacks first, from outside: the process cannot help
                                out.write(asked_note(idle))
                                out.flush()
                                _ask_stacks(proc)
                            _kill_group(proc)
                            proc.wait()
                            break
            finally:
                with self._lock:
                    self._procs.pop(proc.pid, None)
                _kill_group(proc)  # leftovers of the group (daemonised children)
            if timed_out:  # through the fd opened above, never the name again
                out.write(killed_note(time.monotonic() - start, timeout, idle if stalled else 0))
            rc = proc.returncode
            sig = -rc if rc is not None and rc < 0 else None
            limit = disk.note() if full else file_limit(fd, sig)
            if full:
                out.write(f"\n[ft-harness] killed: limit {limit}\n".encode())
        return Exec(
            exit_code=None if timed_out else rc,
            signal=None if timed_out else sig,
            timed_out=timed_out,
            duration=time.monotonic() - start,
            infra="cancelled" if self._cancelled.is_set() else "",
            limit=limit,
        )

    def isolated_out(self, out: Path) -> str:
        return str(out)

    def run_isolated(
        self, ws: Workspace, argv: list[str], *, env: dict[str, str], timeout: float, log: Path, out: Path
    ) -> Exec:
        """In ``out``, as any local command: no isolation here (use docker for untrusted code)."""
        return self.run(ws, argv, env=env, cwd=str(out), timeout=timeout, log=log, network=True)

    def reproduce_command(self, ws: Workspace, command: str, *, network: bool) -> str:
        return command

    def close(self, ws: Workspace) -> None:
        return None

    def _limit(self, pid: int) -> None:
        """Cap the data segment of the new process, and the size of any file it writes
        (``file_bytes``: its log too, refused at write time); its children inherit both."""
        fsize = limits.value("file_bytes")
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            resource.prlimit(pid, resource.RLIMIT_FSIZE, (fsize, fsize))
        if self.mem_limit:
            with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
                resource.prlimit(pid, resource.RLIMIT_DATA, (self.mem_limit, self.mem_limit))

    def cancel(self) -> None:
        """End every running command (SIGINT/SIGTERM of the harness)."""
        self._cancelled.set()
        with self._lock:
            procs = list(self._procs.values())
        for p in procs:
            _kill_group(p)

    def healthy(self) -> bool:
        """Always: the local machine has no daemon that could go away under a run."""
        return True


def group_pids(pgid: int) -> list[int]:
    """The processes of a process group, oldest first (a test run's: pytest, then its workers)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":  # state, ppid, pgrp
            out.append(int(name))
    return sorted(out)


def _ask_stacks(proc: subprocess.Popen) -> None:
    """Send STACKS_SIGNAL to each process of the command's group, one at a time (faulthandler in
    each writes its threads' stacks to the log), then give the last dump STACKS_WAIT seconds."""
    for pid in group_pids(proc.pid)[:STACKS_MAX]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, STACKS_SIGNAL)
        time.sleep(STACKS_GAP)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=STACKS_WAIT)


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
