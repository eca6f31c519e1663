"""Directory trees walked, cleaned and removed by directory fd, with no recursion at any depth (#56).

Package code chooses the shape of its workspace.  A tree ~1,000 levels deep made the recursive
walks the host used (``os.fwalk`` on Python 3.11 and early 3.12, ``shutil.rmtree`` on 3.11)
raise RecursionError, and a path longer than PATH_MAX cannot be opened by name at all.  Here:

- each level is opened relative to its parent's fd with ``O_NOFOLLOW | O_DIRECTORY``: a link is
  never followed, and no path string longer than one name is ever opened;
- the walk's state is a list of names (a stack of data, not of Python frames), so its depth is
  bounded by memory, not by the interpreter's recursion limit;
- it holds at most three fds whatever the depth (the level it is in, the one it opens next, the
  duplicate ``os.scandir`` makes): it goes back up by opening ``..`` of the level it leaves and
  checking that it is the directory it came down from (``st_dev``, ``st_ino``).  RLIMIT_NOFILE
  is neither raised nor approached.  A level renamed away under the walk is an OSError (ESTALE),
  never a walk outside the tree.

:func:`remove_tree` and :func:`free_workspace` never raise: what they could not remove is logged
and returned as a reason, and the job that asked goes on.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

__all__ = [
    "DIR_FLAGS",
    "clear_workspace",
    "free_names",
    "free_workspace",
    "iter_dirs",
    "remove_at",
    "remove_tree",
    "scan",
    "walk",
]

log = logging.getLogger(__name__)

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
BATCH = 10_000  # entries removed per scan of one directory (scan)

# (fd of a directory, the names from the top down to it) -> the names of its subdirectories to
# go into.  ``names`` is the walk's own list: valid during the call only, never to be kept.
Visit = Callable[[int, list[str]], Iterable[str]]
# (fd of the parent, name of the directory left, depth of the parent) after the directory's
# whole subtree: where a removal removes it.
Leave = Callable[[int, str, int], None]


def iter_dirs(top: int, leave: Leave | None = None) -> Iterator[tuple[list[str], int, list[str]]]:
    """(names, fd, subdirs) for every directory from ``top`` (an fd, left open) down, parents
    before children: ``names`` the levels from the top down to it (the walk's own list: valid
    until the next step, never to be kept), ``fd`` open on it until the next step, ``subdirs`` an
    empty list the caller fills, before the next step, with the names of the subdirectories to go
    into.  ``leave`` is called for each directory below ``top`` after its subtree.  Iterative (see
    the module docstring).  A subdirectory that is gone by the time it is opened is skipped; any
    other error (a link swapped in: ELOOP/ENOTDIR, EACCES, EMFILE, a level moved: ESTALE) is
    raised."""
    cur = os.dup(top)
    try:
        st = os.fstat(cur)
        ids = [(st.st_dev, st.st_ino)]  # of each level, the top's first
        names: list[str] = []  # the levels below the top, down to cur
        subdirs: list[str] = []
        yield names, cur, subdirs
        pending = [sorted(subdirs, reverse=True)]  # each level's subdirectories still to go into
        while True:
            todo = pending[-1]
            if todo:
                name = todo.pop()
                try:
                    nxt = os.open(name, DIR_FLAGS, dir_fd=cur)
                except FileNotFoundError:
                    continue
                st = os.fstat(nxt)
                os.close(cur)
                cur = nxt
                names.append(name)
                ids.append((st.st_dev, st.st_ino))
                subdirs = []
                yield names, cur, subdirs
                pending.append(sorted(subdirs, reverse=True))
                continue
            pending.pop()
            if not names:
                return
            up = os.open("..", DIR_FLAGS, dir_fd=cur)
            st = os.fstat(up)
            os.close(cur)
            cur = up
            if (st.st_dev, st.st_ino) != ids[-2]:
                raise OSError(errno.ESTALE, "a directory was moved while it was walked", names[-1])
            ids.pop()
            name = names.pop()
            if leave is not None:
                leave(cur, name, len(names))
    finally:
        os.close(cur)


def walk(top: int, visit: Visit, leave: Leave | None = None) -> None:
    """``visit`` every directory from ``top`` down (:func:`iter_dirs`); it returns the names of
    the subdirectories to go into."""
    for names, fd, subdirs in iter_dirs(top, leave):
        subdirs.extend(visit(fd, names))


def _writable(fd: int) -> None:
    """A directory of ours that package code made read-only (``chmod 500``): made writable so its
    entries can go.  Root needs none of this."""
    if os.geteuid() == 0:
        return
    st = os.fstat(fd)
    if st.st_uid == os.geteuid() and st.st_mode & 0o700 != 0o700:
        os.fchmod(fd, stat.S_IMODE(st.st_mode) | 0o700)


def _openable(dirfd: int, name: str) -> None:
    """A subdirectory of ours without read or search permission, given them back: changed through
    an ``O_PATH`` handle on it (``/proc/self/fd``), never through a link."""
    if os.geteuid() == 0 or not os.path.isdir("/proc/self/fd"):
        return
    p = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dirfd)
    try:
        st = os.fstat(p)
        if st.st_uid == os.geteuid():
            os.chmod(f"/proc/self/fd/{p}", stat.S_IMODE(st.st_mode) | 0o700)
    finally:
        os.close(p)


def scan(fd: int, doomed: Callable[[int], bool], batch: int = BATCH) -> tuple[list[str], list[str]]:
    """(subdirectories, names to remove) of the directory ``fd``: the entries whose ``st_mode``
    (not following links) ``doomed`` picks, at most ``batch`` of them (the caller removes those and
    scans again while a batch comes back full: an entry is never removed while ``readdir`` is in
    the middle of its directory, and a million entries never become one list)."""
    subdirs: list[str] = []
    out: list[str] = []
    with os.scandir(fd) as it:
        for e in it:
            try:
                mode = e.stat(follow_symlinks=False).st_mode
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(mode):
                subdirs.append(e.name)
            elif doomed(mode):
                out.append(e.name)
                if len(out) >= batch:
                    break
    return subdirs, out


def _empty(fd: int, names: list[str]) -> list[str]:
    """A removal's visit: every entry that is not a directory unlinked; the directories returned."""
    _writable(fd)
    while True:
        subdirs, files = scan(fd, lambda mode: True)
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=fd)
        if len(files) < BATCH:
            break
    if os.geteuid() != 0:  # a subdirectory we cannot enter: given back read and search first
        for name in subdirs:
            try:
                os.close(os.open(name, DIR_FLAGS, dir_fd=fd))
            except PermissionError:
                _openable(fd, name)
    return subdirs


def _rmdir(parent: int, name: str, depth: int) -> None:
    os.rmdir(name, dir_fd=parent)


def remove_at(dirfd: int, name: str) -> None:
    """``name`` in the directory ``dirfd`` removed, whatever it is and however deep: a link as a
    link, a tree without recursion; missing is fine.  Raises what removing raised."""
    try:
        st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=dirfd)
        return
    try:
        sub = os.open(name, DIR_FLAGS, dir_fd=dirfd)
    except PermissionError:
        _openable(dirfd, name)
        sub = os.open(name, DIR_FLAGS, dir_fd=dirfd)
    try:
        walk(sub, _empty, _rmdir)
    finally:
        os.close(sub)
    os.rmdir(name, dir_fd=dirfd)


def _why(e: BaseException) -> str:
    return f"{type(e).__name__}: {getattr(e, 'strerror', None) or e}"[:300]


def remove_tree(path: Path | str) -> str:
    """The host path ``path`` removed (its last component never followed: a link there is removed
    as a link), without recursion; never raises.  '' when it is gone, else why not (logged)."""
    path = Path(path)
    try:
        parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return ""
    except Exception as e:  # noqa: BLE001 - freeing never stops the job that asked
        log.warning("cannot remove %s: %s", path, _why(e))
        return _why(e)
    try:
        remove_at(parent, path.name)
    except Exception as e:  # noqa: BLE001
        log.warning("cannot remove %s: %s", path, _why(e))
        return _why(e)
    finally:
        os.close(parent)
    return ""


def clear_workspace(path: Path) -> None:
    """A previous run's workspace at ``path`` gone before a job makes it anew: removed
    (:func:`remove_tree`), else moved aside to ``.stale-<name>-<hex>`` beside it (logged) so the
    job still starts; never raises (the job's own ``mkdir`` says what is still in the way)."""
    if not remove_tree(path):
        return
    aside = path.with_name(f".stale-{path.name}-{secrets.token_hex(4)}")
    try:
        os.rename(path, aside)
        log.warning("%s could not be removed: moved to %s", path, aside)
    except Exception as e:  # noqa: BLE001
        log.warning("%s could not be removed or moved aside: %s", path, _why(e))


def free_names(dirfd: int, names: Sequence[str], *, where: str = "") -> list[str]:
    """Each of ``names`` in the directory ``dirfd`` removed (missing ones are fine); never raises.
    What could not be removed, as 'name: why' (each logged)."""
    failed = []
    for name in names:
        try:
            remove_at(dirfd, name)
        except Exception as e:  # noqa: BLE001 - freeing never stops the job that asked
            log.warning("cannot remove %s/%s: %s", where, name, _why(e))
            failed.append(f"{name}: {_why(e)}")
    return failed


def free_workspace(host_root: Path | str, keep: Sequence[str] = ("logs", "junit")) -> list[str]:
    """Everything in the workspace ``host_root`` removed but the real directories named in
    ``keep`` (a link or a file of that name goes too), by fd and without recursion; never raises.
    What could not be removed, as 'name: why' ([] when all went; each logged)."""
    try:
        fd = os.open(host_root, DIR_FLAGS)
    except FileNotFoundError:
        return []
    except Exception as e:  # noqa: BLE001
        log.warning("cannot free the workspace %s: %s", host_root, _why(e))
        return [f".: {_why(e)}"]
    try:
        doomed = []
        with os.scandir(fd) as it:
            for entry in it:
                if entry.name not in keep or not entry.is_dir(follow_symlinks=False):
                    doomed.append(entry.name)
        return free_names(fd, sorted(doomed), where=str(host_root))
    except Exception as e:  # noqa: BLE001
        log.warning("cannot free the workspace %s: %s", host_root, _why(e))
        return [f".: {_why(e)}"]
    finally:
        os.close(fd)
