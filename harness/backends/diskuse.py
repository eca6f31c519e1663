"""What a job's workspace takes of the host's disk, and the watch that stops a command past it
(#46, #56: ``workspace_bytes``, ``workspace_files``; harness.core.limits).

``measure`` walks by directory file descriptor: each directory is opened relative to its
parent's fd (``O_NOFOLLOW``: a link is counted as a link, never followed) and left by its own
``..``, checked to be the directory the walk came from.  No path string is ever built, so a
tree deeper than PATH_MAX is counted like any other (the walk by path this replaced skipped
every directory past 4,096 bytes of path, and a 20 MB file under one counted 0), the walk holds
at most three fds whatever the depth, and it has no recursion.  Files are counted by the blocks
they take (a sparse terabyte takes none), a file with several hard links once (as ``du``).

Every entry is counted too, against ``workspace_files``: a million empty files fill a disk's
inodes as surely as bytes fill its blocks, and the walk's time is proportional to the entries it
visits (about 2 µs each, the 2-core test machine), so bounding them bounds how long one walk
can blind the watch.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_PATH = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
NEVER = 1 << 62


@dataclass(frozen=True, kw_only=True)
class Usage:
    """One walk: the bytes (blocks) and the entries (files, directories, links, ...) it counted.
    ``complete`` False: it stopped early, past a stop or where the tree moved under it, and the
    counts are a lower bound."""

    bytes: int = 0
    entries: int = 0
    complete: bool = True


def disk_use(root: Path, stop: int = NEVER) -> int:
    """Bytes the files under ``root`` take on disk (st_blocks), no link followed; counting stops
    once past ``stop``."""
    return measure(root, stop_bytes=stop).bytes


class _Walk:
    """One walk's counts; ``listing`` counts one open directory's entries."""

    def __init__(self, stop_bytes: int, stop_entries: int) -> None:
        self.stop_bytes, self.stop_entries = stop_bytes, stop_entries
        self.bytes = self.entries = 0
        self.linked: set[tuple[int, int]] = set()  # files of more than one link, counted once

    def full(self) -> bool:
        return self.bytes > self.stop_bytes or self.entries > self.stop_entries

    def listing(self, fd: int) -> list[str]:
        """The names of the subdirectories of the directory open at ``fd``; its entries counted.
        (Locals, not attributes, in the loop: a million entries take 2 s instead of 3.7.)"""
        dirs: list[str] = []
        n, total, linked = self.entries, self.bytes, self.linked
        stop_n, stop_b, isdir = self.stop_entries, self.stop_bytes, stat.S_ISDIR
        with contextlib.suppress(OSError), os.scandir(fd) as it:
            for e in it:
                n += 1
                try:
                    st = e.stat(follow_symlinks=False)  # fstatat(fd, name, AT_SYMLINK_NOFOLLOW)
                except OSError:
                    continue
                if isdir(st.st_mode):
                    dirs.append(e.name)
                elif st.st_nlink > 1:
                    if (st.st_dev, st.st_ino) in linked:
                        continue
                    linked.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
                if total > stop_b or n > stop_n:
                    break
        self.entries, self.bytes = n, total
        return dirs


def _ident(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _open_in(parent: int | None, name: str) -> int | None:
    """The directory ``name`` in ``parent``, open; None when it is gone or no directory (a link
    now: not the walk's to follow).  One of ours its code made unreadable (``chmod 000``, which
    hid what it holds from the host's walk when the host is not root) is given back ``u+rwx``."""
    try:
        fd = os.open(name, _DIR, dir_fd=parent)
    except PermissionError:
        if not _let_in(parent, name):
            return None
        try:
            fd = os.open(name, _DIR, dir_fd=parent)
        except OSError:
            return None
    except OSError:
        return None
    with contextlib.suppress(OSError):  # readable but not searchable: its entries could not be stat'ed
        st = os.fstat(fd)
        if st.st_uid == os.geteuid() and st.st_mode & 0o700 != 0o700:
            os.fchmod(fd, stat.S_IMODE(st.st_mode) | 0o700)
    return fd


def _let_in(parent: int | None, name: str) -> bool:
    """``u+rwx`` on the directory ``name`` (no link followed) when it is ours; True if done."""
    try:
        p = os.open(name, _PATH, dir_fd=parent)
    except OSError:
        return False
    try:
        st = os.fstat(p)
        if st.st_uid != os.geteuid() or not stat.S_ISDIR(st.st_mode):
            return False
        os.chmod(f"/proc/self/fd/{p}", stat.S_IMODE(st.st_mode) | 0o700)  # an O_PATH fd has no fchmod
        return True
    except OSError:
        return False
    finally:
        os.close(p)


def _reopen(root: int, levels: list[tuple[str, tuple[int, int], list[str]]]) -> int:
    """The directory of the last level, reached again from the root by the names that led to it,
    each checked to be the directory it was; ``levels`` cut back to the ones that still are."""
    fd = os.dup(root)
    for i in range(1, len(levels)):
        name, ident, _ = levels[i]
        child = _open_in(fd, name)
        if child is None or _ident(child) != ident:
            if child is not None:
                os.close(child)
            del levels[i:]
            break
        os.close(fd)
        fd = child
    return fd


def measure(root: Path, *, stop_bytes: int = NEVER, stop_entries: int = NEVER) -> Usage:
    """The blocks and entries under ``root`` (its own directory included), depth first by
    directory fd; stopped once past either stop."""
    root_fd = _open_in(None, str(root))
    if root_fd is None:
        return Usage()
    w, complete, fd = _Walk(stop_bytes, stop_entries), True, -1
    try:
        st = os.fstat(root_fd)
        w.bytes += st.st_blocks * 512
        fd = os.dup(root_fd)
        # each level: the name it was entered by, what it is (st_dev, st_ino), subdirs not yet walked
        levels = [("", (st.st_dev, st.st_ino), w.listing(fd))]
        while levels:
            if w.full():
                complete = False
                break
            todo = levels[-1][2]
            if todo:
                name = todo.pop()
                child = _open_in(fd, name)
                if child is None:
                    continue
                os.close(fd)
                fd = child
                levels.append((name, _ident(fd), w.listing(fd)))
                continue
            levels.pop()
            if not levels:
                break
            up = _open_in(fd, "..")
            os.close(fd)
            fd = -1
            if up is not None and _ident(up) == levels[-1][1]:
                fd = up
                continue
            if up is not None:
                os.close(up)
            # the tree moved under the walk (a directory renamed): back from the root by name;
            # what moved is counted where the walk finds it, if it does, so this walk is a lower bound
            complete = False
            fd = _reopen(root_fd, levels)
    finally:
        os.close(root_fd)
        if fd >= 0:
            os.close(fd)
    return Usage(bytes=w.bytes, entries=w.entries, complete=complete and not w.full())


class DiskWatch:
    """A running command's workspace on the host's disk: ``over()`` walks it (``measure``) when
    a walk is due and is True once it holds more than ``workspace_bytes`` or more than
    ``workspace_files`` entries (harness.core.limits).  Each walk stops counting past either
    limit, so a walk never takes longer than ``workspace_files`` entries do.

    Walks are scheduled by deadline: the next one is due ``every`` seconds after the last one
    began, or, after a walk that took longer than that, at most ``every`` after it ended.  So a
    slow walk (200,000 files a build left for a moment) delays only the next
    one, and the interval is back to ``every`` after the first quick walk; a workspace past a
    limit is seen within ``every`` plus two walks.  A quarter of a second: a process writing to
    the page cache fills 2 GB a second on an idle machine (CI, 2026-12-06: a 400-MB limit passed
    by 1.7 GB in one 1-s interval)."""

    def __init__(self, root: Path | None, every: float = 0.25) -> None:
        from ..core.limits import value

        self.root, self.every = root, every
        self.limit, self.files = value("workspace_bytes"), value("workspace_files")
        self.held = Usage()
        self.next = 0.0  # monotonic time the next walk is due (the first: at once)
        self.walks, self.took = 0, 0.0  # how many walks, and how long the last one took

    def over(self) -> bool:
        if self.root is None:
            return False
        start = time.monotonic()
        if start >= self.next:
            self.held = measure(self.root, stop_bytes=self.limit, stop_entries=self.files)
            end = time.monotonic()
            self.walks, self.took = self.walks + 1, end - start
            self.next = max(start + self.every, end + min(self.took, self.every))
        return self.held.bytes > self.limit or self.held.entries > self.files

    def due(self) -> float:
        """Seconds until the next walk (what a waiting loop may sleep at most)."""
        return float("inf") if self.root is None else max(0.0, self.next - time.monotonic())

    def note(self) -> str:
        if self.held.entries > self.files:
            return f"workspace_files: the workspace held over {self.held.entries} files and directories"
        return f"workspace_bytes: the workspace held over {self.held.bytes} bytes"
