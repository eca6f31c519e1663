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

Walks, removals and the cleaning of what leaves a workspace (:meth:`JobDir.seal`) go by directory
fd without recursion at any depth (:mod:`harness.core.fdwalk`, #56).

``tests/unit/core/test_wsfs.py`` fails when a module other than these two opens, copies, makes,
lists or tests a workspace path by name.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import io
import logging
import os
import platform
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..util.safefiles import read_fd
from . import fdwalk
from .fdwalk import clear_workspace, free_workspace, remove_tree

__all__ = ["JobDir", "Sealed", "clear_workspace", "free_workspace", "open_beneath", "read_beneath", "remove_tree"]

log = logging.getLogger(__name__)

SYS_OPENAT2 = 437  # the same number on every Linux architecture (the generic syscall table)
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
_DIR_FLAGS = fdwalk.DIR_FLAGS
NOTE = "ft-harness-note.txt"  # what a sealed dir holds when its cleaning failed (JobDir.seal)
UNSEALED = ".ft-harness-unsealed"  # where such a dir's old tree waits for its removal
SHOWN = 100  # removed paths a Sealed names (the rest counted)


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
        """``os.fwalk`` below ``rel`` (dirpath, dirnames, filenames, dirfd; prune ``dirnames`` in
        place), without recursion at any depth (harness.core.fdwalk): links never followed, listed
        with the files; every directory reached by handle."""
        try:
            d = self._dirfd(rel)
        except (OSError, ValueError):
            return
        try:
            for names, fd, subdirs in fdwalk.iter_dirs(d):
                dirnames: list[str] = []
                filenames: list[str] = []
                with os.scandir(fd) as it:
                    for e in it:
                        (dirnames if e.is_dir(follow_symlinks=False) else filenames).append(e.name)
                yield "/".join([".", *names]), dirnames, filenames, fd
                subdirs.extend(dirnames)
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
                    fdwalk.remove_at(cur, name)
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
            fdwalk.remove_at(d, parts[-1])
        finally:
            os.close(d)

    def open_new(self, rel: str, mode: int = 0o644) -> int:
        """A file made now at ``rel`` for writing: whatever was there is removed first, its
        parent must be a real directory."""
        parts = _parts(rel)
        d = self._dirfd("/".join(parts[:-1]))
        try:
            fdwalk.remove_at(d, parts[-1])
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
        """The workspace and everything in it owned by uid:gid; links are changed themselves.
        Without recursion at any depth; an entry that cannot be changed is skipped (logged)."""
        os.chown(self.fd, uid, gid)

        def visit(fd: int, names: list[str]) -> list[str]:
            subdirs = []
            with os.scandir(fd) as it:
                for e in it:
                    try:
                        st = e.stat(follow_symlinks=False)
                        if (st.st_uid, st.st_gid) != (uid, gid):
                            os.chown(e.name, uid, gid, dir_fd=fd, follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        subdirs.append(e.name)
            return subdirs

        try:
            fdwalk.walk(self.fd, visit)
        except OSError as e:
            log.warning("%s: not every file's owner changed: %s", self.root.name, e)

    def drop_non_regular(self, dirs: tuple[str, ...]) -> list[str]:
        """Remove every link, FIFO, socket and device under each of ``dirs`` (and ``dirs``
        themselves when they are not real directories): what a job leaves there is later
        copied, uploaded and served. Returns what was removed, as paths below the workspace.
        Without recursion at any depth; raises what the walk raised (:meth:`seal` never does)."""
        removed: list[str] = []
        self._drop(dirs, removed, shown=-1)
        return removed

    def _drop(self, dirs: tuple[str, ...], removed: list[str], *, shown: int) -> int:
        """How many non-regular files were removed under ``dirs``; the first ``shown`` of them
        (-1: all) appended to ``removed``."""
        count = 0

        def note(path: str) -> None:
            nonlocal count
            count += 1
            if shown < 0 or len(removed) < shown:
                removed.append(path)

        for top in dirs:
            st = self.lstat(top)
            if st is None:
                continue
            if not stat.S_ISDIR(st.st_mode):
                self.remove(top)
                note(top)
                continue
            d = self._dirfd(top)
            try:
                for names, fd, subdirs in fdwalk.iter_dirs(d):
                    while True:
                        found, odd = fdwalk.scan(fd, lambda mode: not stat.S_ISREG(mode))
                        for name in odd:
                            with contextlib.suppress(FileNotFoundError):
                                os.unlink(name, dir_fd=fd)
                            note("/".join([top, *names, name]))
                        if len(odd) < fdwalk.BATCH:
                            break
                    subdirs.extend(found)
            finally:
                os.close(d)
        return count

    def seal(self, dirs: tuple[str, ...] = ("logs", "junit")) -> Sealed:
        """``dirs`` made fit to be copied, uploaded and served: every non-regular file below them
        removed (:meth:`drop_non_regular`), fail-closed: on any error while doing so (RecursionError,
        OSError, anything) each of ``dirs`` is replaced by a fresh directory holding only a note
        (``NOTE``) that says why.  Never raises (but re-raises KeyboardInterrupt and SystemExit,
        after the replacement); returns what it did."""
        removed: list[str] = []
        count = 0
        try:
            count = self._drop(dirs, removed, shown=SHOWN)
            return Sealed(removed=tuple(removed), removed_count=count)
        except BaseException as e:
            why = f"{type(e).__name__}: {getattr(e, 'strerror', None) or e}"[:300]
            replaced, left = self._replace(dirs, why)
            log.warning("%s: could not clean %s (%s): replaced by a note", self.root.name, ", ".join(dirs), why)
            sealed = Sealed(removed=tuple(removed), removed_count=count, replaced=replaced, why=why, not_replaced=left)
            if not isinstance(e, Exception):
                raise
            return sealed

    def _replace(self, dirs: tuple[str, ...], why: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Each of ``dirs`` moved aside (to ``UNSEALED``, then removed; removed in place when it
        cannot be moved) and made anew with only the note; (the dirs replaced, 'dir: why' of each
        that could not be).  Two fds at a time: it works where the walk ran out of them."""
        text = f"the harness could not clean this directory: {why}; its files were removed\n"
        moved = self._move_aside(dirs)
        done, left = [], []
        for top in dirs:
            try:
                if top not in moved:
                    fdwalk.remove_at(self.fd, top)
                os.mkdir(top, 0o755, dir_fd=self.fd)
                d = os.open(top, _DIR_FLAGS, dir_fd=self.fd)
                try:
                    fd = os.open(
                        NOTE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=d
                    )
                finally:
                    os.close(d)
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
                done.append(top)
            except Exception as e:  # noqa: BLE001 - said in the result; the copy to the host is the last guard
                left.append(f"{top}: {type(e).__name__}: {e}"[:300])
        fdwalk.free_names(self.fd, (UNSEALED,), where=self.root.name)  # never raises; the job's free tries again
        return tuple(done), tuple(left)

    def _move_aside(self, dirs: tuple[str, ...]) -> set[str]:
        """The ones of ``dirs`` renamed into ``UNSEALED`` (or missing): out of the way at once."""
        moved: set[str] = set()
        try:
            self.makedirs(UNSEALED)
            aside = os.open(UNSEALED, _DIR_FLAGS, dir_fd=self.fd)
        except Exception as e:  # noqa: BLE001 - they are removed in place instead
            log.warning("%s: no %s: %s", self.root.name, UNSEALED, e)
            return moved
        try:
            for top in dirs:
                try:
                    os.rename(top, f"{top}-{secrets.token_hex(4)}", src_dir_fd=self.fd, dst_dir_fd=aside)
                    moved.add(top)
                except FileNotFoundError:
                    moved.add(top)
                except OSError as e:
                    log.warning("%s: %s not moved aside: %s", self.root.name, top, e)
        finally:
            os.close(aside)
        return moved

    def free(self, names: tuple[str, ...]) -> list[str]:
        """Each of ``names`` (directly in the workspace) removed, by fd and without recursion; never
        raises. What could not be removed, as 'name: why' (each logged)."""
        return fdwalk.free_names(self.fd, names, where=self.root.name)


@dataclass(frozen=True, kw_only=True)
class Sealed:
    """What :meth:`JobDir.seal` did."""

    removed: tuple[str, ...] = ()  # non-regular files removed, paths below the workspace (the first SHOWN)
    removed_count: int = 0  # all of them
    replaced: tuple[str, ...] = ()  # dirs replaced by a note: their cleaning failed
    why: str = ""  # what made it fail ('' when it did not)
    not_replaced: tuple[str, ...] = ()  # 'dir: why' of a dir that could not even be replaced

    def summary(self) -> str:
        """One line for the log ('' when there is nothing to say)."""
        parts = []
        if self.removed_count:
            parts.append(f"removed {self.removed_count} non-regular file(s): {', '.join(self.removed[:5])}")
        if self.why:
            parts.append(f"could not clean them ({self.why}): {', '.join(self.replaced) or 'none'} replaced by a note")
        if self.not_replaced:
            parts.append(f"NOT replaced: {'; '.join(self.not_replaced)}")
        return "; ".join(parts)


def _lstat_at(dirfd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
