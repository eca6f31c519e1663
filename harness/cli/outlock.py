"""One run at a time per output directory (#30): a second ``ft-harness run --out DIR`` while
one is going would remove the first's workspaces mid-job (each job starts from a fresh one).

The lock is ``fcntl.flock`` on ``DIR/.ft-harness.lock``: held for the whole run, released by
the kernel when the process ends however it ends, so a killed run leaves no stale lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from ..core.errors import ConfigError

LOCK_NAME = ".ft-harness.lock"


@contextlib.contextmanager
def hold(out: Path) -> Iterator[None]:
    """Hold ``out``'s lock for the block; ConfigError (one line, exit 2) when another run has it."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise ConfigError(f"cannot lock the output directory: {e.strerror}", file=str(path)) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            who = f" (pid {holder})" if holder.isdigit() else ""
            raise ConfigError(
                f"another ft-harness run is using this output directory{who}; wait for "
                "it to finish or give another --out",
                file=str(out),
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)
