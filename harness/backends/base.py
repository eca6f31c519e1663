"""The boundary between a job's steps and where they run."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..core.model import Exec, InterpreterInfo
from ..core.wsfs import JobDir
from .diskuse import DiskWatch as DiskWatch  # the workspace's watch, where it was (harness.backends.diskuse)
from .diskuse import disk_use as disk_use

Say = Callable[[str], None]  # one line for the user (the CLI prints it; the default logs it)


class Quiet:
    """Whether a running command's log has stopped growing for ``seconds`` (0: never asked).

    A test run prints a line per test; a process whose log stays silent well past the
    watchdog's time is frozen in a way even faulthandler cannot dump (a stop-the-world that never
    completes holds the lock it needs): the backends end it then, not at the job timeout."""

    def __init__(self, log: int, seconds: float) -> None:
        self.log, self.seconds = log, seconds  # log: an fd the host holds on the log (wsfs)
        self.size, self.since = -1, time.monotonic()

    def stalled(self) -> bool:
        if self.seconds <= 0:
            return False
        try:
            size = os.fstat(self.log).st_size
        except OSError:
            size = -1
        now = time.monotonic()
        if size != self.size:
            self.size, self.since = size, now
            return False
        return now - self.since >= self.seconds


STACKS_SIGNAL = 10  # SIGUSR1: the watchdog plugin's faulthandler.register (_inner/ft_harness_watchdog.py)
STACKS_GAP = 0.3  # seconds between two processes asked: one dump at a time in the log
STACKS_WAIT = 2.0  # after the last one asked: for its dump to reach the log, before the kill
STACKS_MAX = 16  # processes asked at most, oldest first (pytest and its xdist workers come first)


def asked_note(stalled: float, signal: int = STACKS_SIGNAL) -> bytes:
    """The line a backend appends to a silent command's log before it asks each of its processes
    for its stacks (``harness.parse.hang`` reads the dumps that follow it)."""
    return (
        f"\n[ft-harness] no output for {stalled:.0f}s: asked every process for its stacks (signal {signal})\n".encode()
    )


FILE_SIGNAL = 25  # SIGXFSZ: a write past RLIMIT_FSIZE (file_bytes); Python ignores it (EFBIG)


def file_limit(log_fd: int, signal: int | None) -> str:
    """'' or the ``file_bytes`` limit a command ran into: its log (the host's fd on it) reached
    the size, or the kernel's SIGXFSZ ended it (a Python process gets EFBIG instead)."""
    from ..core.limits import value

    try:
        size = os.fstat(log_fd).st_size
    except OSError:
        size = 0
    if size >= value("file_bytes"):
        return f"file_bytes: its log reached {size} bytes; the rest was refused"
    if signal == FILE_SIGNAL:
        return "file_bytes: a file it wrote reached the size limit (SIGXFSZ)"
    return ""


def killed_note(after: float, timeout: float, stalled: float) -> bytes:
    """The line a backend appends to a log when it ended the command (``harness.parse.hang``)."""
    if stalled:
        return f"\n[ft-harness] killed after {after:.0f}s: no output for {stalled:.0f}s (stalled)\n".encode()
    return f"\n[ft-harness] killed after {timeout:.0f}s (job timeout)\n".encode()


@dataclass(frozen=True, kw_only=True)
class Workspace:
    """A job's private directory, seen from the host and from the backend."""

    host_root: Path  # OUT/work/<job_id> on the host
    root: str  # the same directory as the backend's commands see it
    python: str  # the free-threaded interpreter, as the backend sees it
    source: str = ""  # a local package's source tree, as the backend sees it
    pip_cache: str = ""  # the shared pip cache root, as the backend sees it ("" = pip's default)
    image: str = ""  # the image its commands run in (docker); never keyed by the python path,
    #                  which two builds of one series share (/opt/python/bin/python3.13t)
    wheel_store: str = ""  # the shared wheel store, read-only, as the backend sees it ("" none)
    wheel_host: Path | None = None  # the same on the host (harness.store.wheelstore writes it)
    # the release the job tests, as the host knows it ("2.3.1"; "local" for a local tree; "" not
    # known yet): the docker backend's pip cache is one per job and release (harness.job.job)
    release: str = ""
    fs: JobDir | None = field(default=None, compare=False, repr=False)  # the handle job.py opened

    def path(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

    def build_env(self, interp_key: str) -> str:
        """What a wheel built from an sdist here depends on besides the sdist: the interpreter
        build and, on docker, the image's build dependencies, which its tag names both
        (``cpython-3.13.15-ft-0dc8cebd3d78-9708ac6f``); elsewhere the interpreter build. pip's
        cache and the wheel store are keyed by it: a wheel built before the images had libyaml
        (pyyaml 6.0.4's pure half) must not come back in one that has it (#43)."""
        return self.image.rpartition(":")[2] if self.image else interp_key

    def host(self, *parts: str) -> Path:
        """A name for messages and for the backends' mounts; files are reached through ``fs``."""
        return self.host_root.joinpath(*parts)


@contextlib.contextmanager
def job_dir(ws: Workspace) -> Iterator[JobDir]:
    """The workspace's handle (``harness.core.wsfs``): the job's own, else one opened for this use."""
    if ws.fs is not None:
        yield ws.fs
        return
    with JobDir(ws.host_root) as d:
        yield d


@dataclass(frozen=True, kw_only=True)
class Prepared:
    """An interpreter ready for jobs: its facts and the python path as the backend sees it."""

    info: InterpreterInfo
    python: str
    cache_hit: bool
    source_tarball: str = ""  # the CPython source it was built from (TSan suppressions read it)
    image: str = ""  # the image holding it (docker backend), else ""


class Backend(Protocol):
    name: str

    @property
    def base_path(self) -> str:
        """PATH where a command runs, before the job's venv is put first on it."""
        ...

    def open(self, job_id: str, host_root: Path, python: str, source: str) -> Workspace:
        """Prepare a job's workspace (dirs, container, volumes)."""
        ...

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
        """Run argv; stdout+stderr go to ``log`` (a host path). Never raises for the
        command's own failure; raises InfraError only when the backend itself broke.
        Ended at ``timeout``, or once ``log`` has not grown for ``idle`` seconds (``Quiet``)."""
        ...

    def isolated_out(self, out: Path) -> str:
        """``out`` (a host dir) as a ``run_isolated`` command sees it."""
        ...

    def run_isolated(
        self, ws: Workspace, argv: list[str], *, env: dict[str, str], timeout: float, log: Path, out: Path
    ) -> Exec:
        """Run argv, with the network, where nothing but ``out`` is writable: not the workspace,
        not a pip cache, not the wheel store (docker: a container of its own; local: no
        isolation, as every local command). Its output goes to ``log``, as ``run``'s."""
        ...

    def reproduce_command(self, ws: Workspace, command: str, *, network: bool) -> str:
        """``command`` (a shell line) as a user runs it by hand where this backend ran it."""
        ...

    def close(self, ws: Workspace) -> None:
        """Remove whatever open() made (containers, volumes); idempotent."""
        ...

    def cancel(self) -> None:
        """SIGINT/SIGTERM of the harness: start nothing new, end every running command.
        A run() in flight returns soon after with ``Exec.infra`` set."""
        ...

    def healthy(self) -> bool:
        """False once the backend itself is broken (a daemon gone): the runner then stops the
        whole run instead of recording an infra-error for every job left."""
        ...


@dataclass(frozen=True, kw_only=True)
class Opened:
    """What ``open_backend`` returns: the backend and every interpreter the jobs need."""

    backend: Backend
    prepared: dict[str, Prepared]  # interpreter name -> Prepared
