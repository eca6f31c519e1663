"""The copy of a run's output that CI uploads: regular files only, no link followed (#56).

actions/upload-artifact follows links: a link package code left in a workspace's ``logs/`` (to
``/proc/self/environ``, to any file of the runner) would upload the file it points at, and the
workspaces are package code's to shape until the last moment.  So the workflow uploads what
:func:`copy_artifacts` copied into a fresh directory, never a workspace:

- the run's own files named in ``extra`` (``manifest.json``, ``results/``, ``store.json``): a
  regular file, or the regular files directly in a directory, reached through no link; not
  capped (the harness wrote them);
- of each workspace ``<work>/<job>/``, the regular files of ``logs/`` and ``junit/``, breadth
  first (the phases' own logs before what package code wrote deeper down), each level opened
  below its parent's fd with ``O_NOFOLLOW``: no link followed at any level, no path string longer
  than one name opened.  Never copied: a link, a FIFO, a socket, a device, a file with another
  hard link.  Bounded by the limits ``artifact_file_bytes``, ``artifact_bytes_per_job``,
  ``artifact_files_per_job``, ``artifact_depth`` and ``artifact_bytes``
  (harness.core.limits); what is left out is counted, and its first paths named, in the job's
  ``logs/ft-harness-artifact-note.txt`` in the copy.

The layout is kept (``DST/<work>/<job>/logs/...`` as the run had it), so the report reads the copy
as it read the run.  ``tools/artifact-copy`` is the workflow's command for it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..util import textsafe
from . import limits
from .errors import ConfigError
from .fdwalk import DIR_FLAGS

__all__ = ["ARTIFACT_NOTE", "Copied", "copy_artifacts"]

ARTIFACT_NOTE = "ft-harness-artifact-note.txt"
_NAMED = 20  # left-out paths a note names (the rest counted)
_CHUNK = 1 << 20


class _TooBig(str):
    """Why a file was not copied: its size is past a cap."""

    def __new__(cls, size: int) -> _TooBig:
        self = super().__new__(cls, f"too big ({size} bytes)")
        self.size = size
        return self

    size: int


@dataclass(frozen=True, kw_only=True)
class Copied:
    """What :func:`copy_artifacts` copied."""

    jobs: int = 0
    files: int = 0
    bytes: int = 0
    left_out: int = 0  # files of logs/ and junit/ not copied (see the notes)
    noted: tuple[str, ...] = ()  # the jobs whose copy holds a note


@dataclass(kw_only=True)
class _Budget:
    """One job's copy: what it may still take, what it left out and why."""

    total_left: int
    bytes_left: int = field(default_factory=lambda: limits.value("artifact_bytes_per_job"))
    entries_left: int = field(default_factory=lambda: limits.value("artifact_files_per_job"))
    files: int = 0
    bytes: int = 0
    why: Counter[str] = field(default_factory=Counter)
    paths: list[str] = field(default_factory=list)

    def leave_out(self, why: str, path: str, detail: str = "") -> None:
        self.why[why] += 1
        if len(self.paths) < _NAMED:
            self.paths.append(f"{textsafe.line(path)[:500]}: {why}{detail}")


def _open_chain(root: int, parts: Sequence[str], *, make: bool = False) -> int:
    """A new fd on the directory ``parts`` below ``root``, each level opened with O_NOFOLLOW
    (``make``: in the copy, each missing level made)."""
    cur = os.dup(root)
    try:
        for name in parts:
            if make:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o755, dir_fd=cur)
            nxt = os.open(name, DIR_FLAGS, dir_fd=cur)
            os.close(cur)
            cur = nxt
    except BaseException:
        os.close(cur)
        raise
    return cur


def _copy_file(src_dir: int, name: str, dst_dir: int, cap: int) -> int | str:
    """The bytes copied of the regular file ``name``, or why it was not: never through a link,
    never a file with another hard link, never more than ``cap`` bytes."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=src_dir)
    except OSError as e:
        return f"cannot open: {e.strerror or e}"
    with os.fdopen(fd, "rb") as src:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file"
        if st.st_nlink > 1:
            return "a hard link"
        if st.st_size > cap:
            return _TooBig(st.st_size)
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dst_dir)
        n = 0
        with os.fdopen(out, "wb") as dst:
            while n < st.st_size:  # what it held when looked at: a file still growing is cut there
                chunk = src.read(min(_CHUNK, st.st_size - n))
                if not chunk:
                    break
                dst.write(chunk)
                n += len(chunk)
        return n


def _copy_dir(src: int, dst: int, parts: list[str], b: _Budget, depth_left: int) -> list[str]:
    """The regular files of one directory copied; its subdirectories returned (none past
    ``artifact_depth``)."""
    files: list[str] = []
    subdirs: list[str] = []
    with os.scandir(src) as it:
        for e in it:
            if b.entries_left <= 0:
                b.leave_out("past artifact_files_per_job", "/".join([*parts, e.name]))
                continue
            b.entries_left -= 1
            try:
                mode = e.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode):
                if depth_left > 0:
                    subdirs.append(e.name)
                else:
                    b.leave_out("past artifact_depth", "/".join([*parts, e.name]))
            elif stat.S_ISREG(mode):
                files.append(e.name)
            else:
                b.leave_out("not a regular file", "/".join([*parts, e.name]))
    for name in sorted(files):
        file_cap = limits.value("artifact_file_bytes")
        got = _copy_file(src, name, dst, min(file_cap, b.bytes_left, b.total_left))
        if isinstance(got, str):
            path = "/".join([*parts, name])
            if isinstance(got, _TooBig):
                past = (
                    "artifact_file_bytes"
                    if got.size > file_cap
                    else "artifact_bytes_per_job"
                    if got.size > b.bytes_left
                    else "artifact_bytes"
                )
                b.leave_out(f"past {past}", path, f" ({got.size} bytes)")
            else:
                b.leave_out(got, path)
            continue
        b.files += 1
        b.bytes += got
        b.bytes_left -= got
        b.total_left -= got
    return sorted(subdirs)


def _copy_job(src_job: int, dst_job: int, keep: Sequence[str], b: _Budget) -> None:
    """A job's ``keep`` dirs copied breadth first (each directory reached again from the job's fd,
    level by level: at most ``artifact_depth`` opens); a note when anything was left out."""
    depth = limits.value("artifact_depth")
    queue: list[list[str]] = [[top] for top in keep]
    while queue:
        parts = queue.pop(0)
        try:
            s = _open_chain(src_job, parts)
        except FileNotFoundError:
            continue
        except OSError as e:  # a link (ELOOP, ENOTDIR), a level gone: not followed
            b.leave_out(f"not a directory reached through no link ({e.strerror})", "/".join(parts))
            continue
        try:
            d = _open_chain(dst_job, parts, make=True)
            try:
                subs = _copy_dir(s, d, parts, b, depth - (len(parts) - 1))
            finally:
                os.close(d)
        finally:
            os.close(s)
        queue += [[*parts, name] for name in subs]
    if b.why:
        _note(dst_job, keep[0] if keep else "logs", b)


def _note(dst_job: int, where: str, b: _Budget) -> None:
    d = _open_chain(dst_job, [where], make=True)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(ARTIFACT_NOTE, dir_fd=d)  # a file of that name the job wrote: the note wins
        fd = os.open(
            ARTIFACT_NOTE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=d
        )
    finally:
        os.close(d)
    counts = ", ".join(f"{n} {why}" for why, n in sorted(b.why.items()))
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(f"ft-harness left files of this job out of the artifact: {counts}\n")
        f.write("(limits: harness.core.limits, FT_HARNESS_LIMIT_<NAME> raises one)\n")
        f.writelines(f"{p}\n" for p in b.paths)


def _copy_extra(src: int, dst: int, rel: str) -> int:
    """A run's own file, or the regular files directly in one of its directories; files copied."""
    parts = [p for p in PurePosixPath(rel).parts if p not in ("", ".")]
    if not parts or ".." in parts or PurePosixPath(rel).is_absolute():
        raise ConfigError(f"{rel!r}: not a path below the output directory")
    try:
        parent = _open_chain(src, parts[:-1])
    except OSError:
        return 0
    try:
        try:
            st = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return 0
        if stat.S_ISREG(st.st_mode):
            d = _open_chain(dst, parts[:-1], make=True)
            try:
                return 1 if isinstance(_copy_file(parent, parts[-1], d, st.st_size), int) else 0
            finally:
                os.close(d)
        if not stat.S_ISDIR(st.st_mode):
            return 0
        s, d = _open_chain(parent, parts[-1:]), _open_chain(dst, parts, make=True)
        try:
            n = 0
            with os.scandir(s) as it:
                for e in it:
                    if e.is_file(follow_symlinks=False):
                        size = e.stat(follow_symlinks=False).st_size
                        n += isinstance(_copy_file(s, e.name, d, size), int)
            return n
        finally:
            os.close(s)
            os.close(d)
    finally:
        os.close(parent)


def copy_artifacts(
    src: Path,
    dst: Path,
    *,
    work: str = "work",
    keep: Sequence[str] = ("logs", "junit"),
    extra: Sequence[str] = (),
) -> Copied:
    """The regular files of ``src/<work>/*/<keep>/`` and ``src/<extra>`` copied into ``dst``, a
    new (or empty) directory, as the module docstring says.  ConfigError when ``src`` is not a
    directory or ``dst`` is not new."""
    dst = Path(dst)
    if dst.exists() and (not dst.is_dir() or dst.is_symlink() or any(dst.iterdir())):
        raise ConfigError(f"{dst}: the copy goes to a new or empty directory")
    try:
        s = os.open(src, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise ConfigError(f"{src}: not a directory to copy from ({e.strerror})") from None
    dst.mkdir(parents=True, exist_ok=True)
    d = os.open(dst, DIR_FLAGS)
    try:
        files = sum(_copy_extra(s, d, rel) for rel in extra)
        return _copy_work(s, d, work, keep, files)
    finally:
        os.close(s)
        os.close(d)


def _copy_work(src: int, dst: int, work: str, keep: Sequence[str], files: int) -> Copied:
    parts = [p for p in PurePosixPath(work).parts if p not in ("", ".")]
    try:
        w = _open_chain(src, parts)
    except OSError:  # no workspaces (a run that ran no job), or a link: nothing to copy
        return Copied(files=files)
    total_left = limits.value("artifact_bytes")
    jobs = total = left_out = 0
    noted = []
    try:
        with os.scandir(w) as it:
            names = sorted(e.name for e in it if e.is_dir(follow_symlinks=False) and not e.name.startswith("."))
        for job in names:
            try:
                sj = os.open(job, DIR_FLAGS, dir_fd=w)
            except OSError:
                continue
            try:
                dj = _open_chain(dst, [*parts, job], make=True)
                try:
                    b = _Budget(total_left=total_left)
                    _copy_job(sj, dj, keep, b)
                finally:
                    os.close(dj)
            finally:
                os.close(sj)
            jobs += 1
            files += b.files
            total += b.bytes
            total_left = b.total_left
            left_out += sum(b.why.values())
            if b.why:
                noted.append(job)
    finally:
        os.close(w)
    return Copied(jobs=jobs, files=files, bytes=total, left_out=left_out, noted=tuple(noted))
