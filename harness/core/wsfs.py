"""Every host access to a job's workspace, through no link at any component (issue #30).

Package code (a build, a test run) can write anywhere in its workspace: it can leave a link
at any path the host later touches, or at a directory on the way to one (``logs``, ``inner``,
``logs/tsan``), pointing at a host path.  A host that followed it would overwrite, create or
read host files as itself (root, on the docker backend and in CI).  So the host never reaches
a workspace path by name from ``/``: a :class:`JobDir` holds a directory handle on the
workspace, opened at job start, and resolves every path below it with ``openat2(2)``'s
``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`` where the kernel has it (Linux 5.6), else with a
walk that opens each component with ``O_NOFOLLOW``.  A link anywhere on a path is an
``OSError`` (ELOOP/ENOTDIR), never followed.  The harness's own files (probe.py, the
watchdog plugin, the TSan helpers) are copied in before any package code runs
(:meth:`JobDir.copy_in`); a later step that needs one again finds it as a regular file or
says the job is broken.

:func:`read_beneath` is the same walk for a reader that has only the output directory and a
path below it (``harness.parse`` reads a phase's log and JUnit XML that way).

``tests/unit/core/test_wsfs.py`` fails when a module other than this one opens, copies, makes,
lists or tests a workspace path by name.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import io
import os
import platform
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from ..util.safefiles import read_fd

SYS_OPENAT2 = 437  # the same number on every Linux architecture (the generic syscall table)
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _libc() -> Any:
    if platform.system() != "Linux":
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _libc()
_OPENAT2: bool | None = None if _LIBC is not None else False  # None: not tried yet


def _openat2(dirfd: int, rel: str, flags: int, mode: int) -> int | None:
    """openat2 beneath ``dirfd`` with no link anywhere; None when the kernel lacks it."""
    global _OPENAT2
    if _OPENAT2 is False:
        return None
    how = _OpenHow(flags | os.O_CLOEXEC, mode if flags & os.O_CREAT else 0, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)
    fd = _LIBC.syscall(
        ctypes.c_long(SYS_OPENAT2),
        ctypes.c_long(dirfd),
        ctypes.c_char_p(rel.encode()),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    if fd >= 0:
        _OPENAT2 = True
        return int(fd)
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EPERM) and _OPENAT2 is None:  # no openat2, or a seccomp filter
        _OPENAT2 = False
        return None
    raise OSError(err, os.strerror(err), rel)


def _parts(rel: str | PurePosixPath) -> list[str]:
    parts = [p for p in PurePosixPath(rel).parts if p not in ("", ".")]
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
        raise ValueError(f"not a path below the workspace: {rel!r}")
    return parts


def _walk_open(dirfd: int, parts: list[str], flags: int, mode: int) -> int:
    """The per-component fallback: each directory opened with O_NOFOLLOW below the last."""
    cur = dirfd
    try:
        for name in parts[:-1]:
            nxt = os.open(name, _DIR_FLAGS, dir_fd=cur)
            if cur != dirfd:
                os.close(cur)
            cur = nxt
        return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=cur)
    finally:
        if cur != dirfd:
            os.close(cur)


def open_beneath(dirfd: int, rel: str | PurePosixPath, flags: int, mode: int = 0o644) -> int:
    """An fd for ``rel`` below the directory ``dirfd``; OSError when any component is a link."""
    parts = _parts(rel)
    fd = _openat2(dirfd, "/".join(parts), flags | os.O_NOFOLLOW, mode)
    return fd if fd is not None else _walk_open(dirfd, parts, flags, mode)


def read_beneath(root: Path, rel: str, limit: int) -> bytes | None:
    """A regular file at ``rel`` below ``root`` (the output directory), reached through no link;
    None when it is missing, not a regular file, or any component of ``rel`` is a link."""
    try:
        dirfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fd = open_beneath(dirfd, rel, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    finally:
        os.close(dirfd)
    return read_fd(fd, limit)


class JobDir:
    """A job's workspace, held by a directory handle opened when the job starts."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.fd = os.open(self.root, _DIR_FLAGS)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:  # a job that raised: its handle goes with its last reference
        with contextlib.suppress(OSError, AttributeError):
            self.close()

    def __enter__(self) -> JobDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def rel(self, path: Path | str) -> str:
        """A host path under the workspace as a path below it (never resolving a link)."""
        return str(PurePosixPath(Path(path).relative_to(self.root)))

    # ---------------------------------------------------------------- looking

    def _dirfd(self, rel: str) -> int:
        """A new fd on the directory ``rel`` ('' or '.': the workspace itself)."""
        if rel in ("", "."):
            return os.dup(self.fd)
        return open_beneath(self.fd, rel, os.O_RDONLY | os.O_DIRECTORY)

    def lstat(self, rel: str) -> os.stat_result | None:
        """What is at ``rel`` (a link there is reported as a link), None when nothing is or a
        directory on the way is a link."""
        parts = _parts(rel)
        try:
            d = self._dirfd("/".join(parts[:-1]))
        except OSError:
            return None
        try:
            return os.stat(parts[-1], dir_fd=d, follow_symlinks=False)
        except OSError:
            return None
        finally:
            os.close(d)

    def is_file(self, rel: str) -> bool:
        st = self.lstat(rel)
        return st is not None and stat.S_ISREG(st.st_mode)

    def is_dir(self, rel: str) -> bool:
        st = self.lstat(rel)
        return st is not None and stat.S_ISDIR(st.st_mode)

    def listdir(self, rel: str) -> list[tuple[str, int]]:
        """(name, st_mode) of each entry of the directory ``rel``, links as links; [] when it
        is not a real directory."""
        try:
            d = self._dirfd(rel)
        except (OSError, ValueError):
            return []
        out = []
        with os.scandir(d) as it:
            for e in it:
                try:
                    out.append((e.name, e.stat(follow_symlinks=False).st_mode))
                except OSError:
                    continue
        os.close(d)
        return sorted(out)

    def walk(self, rel: str = ".") -> Iterator[tuple[str, list[str], list[str], int]]:
        """os.fwalk below ``rel``: links never followed, every directory reached by handle."""
        try:
            d = self._dirfd(rel)
        except (OSError, ValueError):
            return
        try:
            yield from os.fwalk(".", dir_fd=d, follow_symlinks=False)
        finally:
            os.close(d)

    # ---------------------------------------------------------------- reading

    def read(self, rel: str, limit: int) -> bytes | None:
        """A regular file's bytes (head and tail past ``limit``); None for a missing file, a
        non-regular one, or a link at any component."""
        try:
            fd = open_beneath(self.fd, rel, os.O_RDONLY | os.O_NONBLOCK)
        except (OSError, ValueError):
            return None
        return read_fd(fd, limit)

    # ---------------------------------------------------------------- writing

    def makedirs(self, rel: str) -> None:
        """``rel`` and its parents as real directories: a link or a file package code left
        where one should be is removed (never followed) and the directory made anew."""
        cur = os.dup(self.fd)
        try:
            for name in _parts(rel):
                st = _lstat_at(cur, name)
                if st is not None and not stat.S_ISDIR(st.st_mode):  # a link, a file: not ours
                    _remove_at(cur, name)
                    st = None
                if st is None:
                    os.mkdir(name, 0o755, dir_fd=cur)
                nxt = os.open(name, _DIR_FLAGS, dir_fd=cur)  # fails if swapped meanwhile
                os.close(cur)
                cur = nxt
        finally:
            os.close(cur)

    def remove(self, rel: str) -> None:
        """Whatever is at ``rel`` (a file, a link, a tree) removed, never followed."""
        parts = _parts(rel)
        d = self._dirfd("/".join(parts[:-1]))
        try:
            _remove_at(d, parts[-1])
        finally:
            os.close(d)

    def open_new(self, rel: str, mode: int = 0o644) -> int:
        """A file made now at ``rel`` for writing: whatever was there is removed first, its
        parent must be a real directory."""
        parts = _parts(rel)
        d = self._dirfd("/".join(parts[:-1]))
        try:
            _remove_at(d, parts[-1])
            return os.open(
                parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=d
            )
        finally:
            os.close(d)

    def create_text(self, rel: str) -> io.TextIOWrapper:
        """A text file made now (``open_new``), open for writing."""
        return os.fdopen(self.open_new(rel), "w", encoding="utf-8")

    def write_new(self, rel: str, data: bytes, mode: int = 0o644) -> None:
        with os.fdopen(self.open_new(rel, mode), "wb") as f:
            f.write(data)

    def open_append(self, rel: str) -> int:
        """An fd appending to the regular file at ``rel`` (made when missing); OSError when a
        link is anywhere on the way or it is not a regular file."""
        fd = open_beneath(self.fd, rel, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(errno.EINVAL, "not a regular file", rel)
        os.set_blocking(fd, True)
        return fd

    def append(self, rel: str, data: bytes) -> bool:
        """Append to a log package code has had; False (nothing written) when it is not a
        regular file reached through no link."""
        try:
            fd = self.open_append(rel)
        except (OSError, ValueError):
            return False
        with os.fdopen(fd, "ab") as f:
            f.write(data)
        return True

    def copy_in(self, src: Path, rel: str) -> None:
        """One of the harness's own files, copied to ``rel`` (its directories made)."""
        parent = str(PurePosixPath(rel).parent)
        if parent != ".":
            self.makedirs(parent)
        self.write_new(rel, Path(src).read_bytes())

    def chown_all(self, uid: int, gid: int) -> None:
        """The workspace and everything in it owned by uid:gid; links are changed themselves."""
        os.chown(self.fd, uid, gid)
        for _, dirnames, filenames, dfd in self.walk():
            for name in dirnames + filenames:
                try:
                    st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                    if (st.st_uid, st.st_gid) != (uid, gid):
                        os.chown(name, uid, gid, dir_fd=dfd, follow_symlinks=False)
                except OSError:
                    continue

    def drop_non_regular(self, dirs: tuple[str, ...]) -> list[str]:
        """Remove every link, FIFO, socket and device under each of ``dirs`` (and ``dirs``
        themselves when they are not real directories): what a job leaves there is later
        copied, uploaded and served. Returns what was removed, as paths below the workspace."""
        removed: list[str] = []
        for top in dirs:
            st = self.lstat(top)
            if st is None:
                continue
            if not stat.S_ISDIR(st.st_mode):
                self.remove(top)
                removed.append(top)
                continue
            for dirpath, dirnames, filenames, dfd in self.walk(top):
                for name in [*filenames, *dirnames]:
                    try:
                        mode = os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode
                    except OSError:
                        continue
                    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                        _remove_at(dfd, name)
                        removed.append(os.path.normpath(f"{top}/{dirpath}/{name}"))
        return removed


def _lstat_at(dirfd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _remove_at(dirfd: int, name: str) -> None:
    """Remove ``name`` in ``dirfd`` whatever it is, never following a link; missing is fine."""
    try:
        st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=dirfd)
        return
    sub = os.open(name, _DIR_FLAGS, dir_fd=dirfd)
    try:
        for entry in os.listdir(sub):
            _remove_at(sub, entry)
    finally:
        os.close(sub)
    os.rmdir(name, dir_fd=dirfd)
