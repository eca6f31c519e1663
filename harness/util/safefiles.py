"""Files the host reads and writes where package code may have been: written atomically, read
without following a planted link, created anew, appended only to a regular file."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import tempfile
from pathlib import Path
from typing import Any


def write_text_atomic(path: Path, text: str, *, fsync: bool = False) -> None:
    """Write text so a reader sees the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def read_regular(path: Path, limit: int) -> bytes | None:
    """A file the host did not write itself (package code could have), read safely: None unless
    it is a regular file, not a symlink (a planted link to a host file must not reach a report);
    at most ``limit`` bytes, head and tail kept when it is longer."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    return read_fd(fd, limit)


def read_fd(fd: int, limit: int) -> bytes | None:
    """The bytes of the regular file open at ``fd`` (closed after), head and tail when past
    ``limit``; None for anything else (a FIFO, a device, a directory)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # before fdopen, which refuses a directory (IsADirectoryError)
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as f:
        if st.st_size <= limit:
            return f.read(limit)
        head = f.read(limit // 2)
        f.seek(st.st_size - limit // 2)
        return head + b"\n[... cut ...]\n" + f.read(limit // 2)


def open_fresh(path: Path) -> Any:
    """A text file the host creates anew where package code may have written before: whatever is
    at ``path`` (a planted symlink to a host file included) is removed, never followed, and the
    parent must be a real directory."""
    parent = path.parent
    if parent.is_symlink() or not parent.is_dir():
        raise OSError(f"{parent} is not a real directory")
    with contextlib.suppress(FileNotFoundError):
        if path.is_symlink() or not path.is_dir():
            path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    return os.fdopen(fd, "w", encoding="utf-8")


def append_regular(path: Path, data: bytes) -> None:
    """Append to a log package code has had: never through a link it planted there, never to
    anything but a regular file (then the text is dropped, with a warning)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        logging.getLogger(__name__).warning("not appending to %s: %s", path, e)
        return
    with os.fdopen(fd, "ab") as f:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            f.write(data)
        else:
            logging.getLogger(__name__).warning("not appending to %s: not a regular file", path)


def write_json_atomic(path: Path, data: Any) -> None:
    """A result file: JSON, written atomically and fsynced before the rename."""
    write_text_atomic(path, json.dumps(data, indent=1, sort_keys=False) + "\n", fsync=True)
