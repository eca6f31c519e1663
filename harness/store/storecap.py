"""The shared wheel store's bounds (#46): what one job may add to it and what it may hold.

Package code decides what goes into the store: a job's plan (``logs/wheel-plan.json``) is
written in its venv, where a dependency's build backend runs, and each sdist it names is
built and stored. So both are named limits (``harness.core.limits``, set for a run with
``FT_HARNESS_LIMIT_<NAME>``):

- ``store_entries_per_job``: the entries (stored wheels, the tools layer) one job may add.
  Past it the job stores nothing more; its install builds the rest itself, in its own
  isolation, as with the store off (``harness.job.wheelsteps``).
- ``store_bytes``: the bytes one backend's store (``<cache>/wheels/<backend>``) may hold in its
  entries. Before a new entry is renamed into place, under the store's own lock, ``Room``
  counts them; when the entry would take them past the limit, the least
  recently used entries are removed until it fits -- never one this run has used (a job of it
  may be installing from it), nor one whose lock a job holds. When it cannot fit even so,
  nothing is removed and the entry is not stored: the install builds it itself (``POLICY``).

An entry is a stored wheel's dir (``<key>/<sha256>``) or a tools layer (``<key>/tools/<digest>``);
its dir's mtime is when a job last used it: the time it was stored, set again each time a job
takes it (``touch``). A build's scratch dir is not counted while it lasts; what builds of a
killed run left is removed once a day old (``leftovers``). What was removed or refused is a line in the job's plan log, in the
harness's log, and in the store step's record (``store.json``: ``evicted``, ``refused``).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..core import limits
from .wheelstore import KEY_RE, SHA256_RE, flocked

log = logging.getLogger(__name__)

STARTED = time.time()  # this run's start: an entry used since is not removed
POLICY = (
    "past store_bytes the least recently used entries this run has not used are removed; "
    "a new entry that still does not fit is not stored (the install builds it itself)"
)
LOCKS = ".locks"  # <root>/.locks/store.lock; each entry's own lock: <root>/<key>/.locks/<name>.lock
TOOLS = "tools"  # harness.store.toolslayer.SUBDIR
LEFTOVERS = (".build-", ".tmp-", ".evict-")  # scratch dirs (wheelstore.scratch, publish), entries being removed
STALE = 24 * 3600  # seconds a leftover is untouched before it is taken for a killed build's


@dataclass(frozen=True, kw_only=True)
class Entry:
    path: Path
    rel: str  # "<key>/<sha256>" or "<key>/tools/<digest>"
    size: int  # bytes of its files
    used: float  # its dir's mtime: when a job last took it


def tree_bytes(top: Path) -> int:
    """Bytes of the regular files below ``top`` (links not followed, not counted)."""
    total, stack = 0, [str(top)]
    while stack:
        with contextlib.suppress(OSError), os.scandir(stack.pop()) as it:
            for e in it:
                with contextlib.suppress(OSError):
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
                    elif e.is_file(follow_symlinks=False):
                        total += e.stat(follow_symlinks=False).st_size
    return total


def _dirs(top: Path, pattern: re.Pattern[str]) -> list[Path]:
    with contextlib.suppress(OSError):
        return [Path(e.path) for e in os.scandir(top) if pattern.fullmatch(e.name) and e.is_dir(follow_symlinks=False)]
    return []


def entries(root: Path) -> list[Entry]:
    """Every stored wheel's dir and tools layer below ``root``, with its size and last use."""
    out: list[Entry] = []
    for key in _dirs(root, KEY_RE):
        for path in [*_dirs(key, SHA256_RE), *_dirs(key / TOOLS, SHA256_RE)]:
            with contextlib.suppress(OSError):
                out.append(
                    Entry(
                        path=path, rel=str(path.relative_to(root)), size=tree_bytes(path), used=os.lstat(path).st_mtime
                    )
                )
    return out


def touch(path: Path | str) -> None:
    """An entry a job takes: used now (its dir's mtime; the owner may set it on a read-only dir)."""
    with contextlib.suppress(OSError):
        os.utime(path)


@contextlib.contextmanager
def locked(root: Path) -> Iterator[None]:
    """The store's own lock, held while it is counted and an entry removed or renamed in."""
    with flocked(root / LOCKS / "store.lock"):
        yield


def _remove(root: Path, e: Entry) -> bool:
    """Take ``e`` out of the store (renamed aside at once, then deleted), unless a job holds its
    lock (``wheelstore.lock``: it is looking it up or building it)."""
    locks = root / e.rel.split("/")[0] / LOCKS
    try:
        locks.mkdir(exist_ok=True)
        fd = os.open(locks / f"{e.path.name}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as err:
        log.warning("wheel store: cannot remove %s: %s", e.rel, err)
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        grave = Path(tempfile.mkdtemp(prefix=".evict-", dir=root))
        os.chmod(e.path, 0o755)  # moved to another dir: its ".." is rewritten
        os.rename(e.path, grave / "entry")
    except OSError as err:  # BlockingIOError: a job holds it
        log.info("wheel store: %s not removed: %s", e.rel, err)
        return False
    finally:
        os.close(fd)
    _rmtree(grave)
    return True


def _rmtree(top: Path) -> None:
    for d, dirs, _ in os.walk(top):
        for name in dirs:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(d, name), 0o755)
    shutil.rmtree(top, ignore_errors=True)


def leftovers(root: Path, now: float | None = None) -> list[str]:
    """Remove what builds of killed runs left below ``root`` (a build's scratch dir, a half-copied
    entry, an entry being removed) untouched for ``STALE`` seconds: no build lasts that long
    (``wheelstore.BUILD_TIMEOUT``); listed as removed."""
    now = time.time() if now is None else now
    out = []
    for top in [root, *_dirs(root, KEY_RE)]:
        with contextlib.suppress(OSError), os.scandir(top) as it:
            for e in list(it):
                if (
                    e.name.startswith(LEFTOVERS)
                    and e.is_dir(follow_symlinks=False)
                    and now - e.stat(follow_symlinks=False).st_mtime > STALE
                ):
                    size = tree_bytes(Path(e.path))
                    os.chmod(e.path, 0o755)
                    _rmtree(Path(e.path))
                    out.append(f"{Path(e.path).relative_to(root)} ({size} bytes, left by a killed build)")
    return out


@dataclass(kw_only=True)
class Room:
    """Called with a new entry's bytes right before it is renamed into the store (under
    ``locked``): "" when it fits within ``store_bytes`` (least recently used entries removed
    to make it fit, each listed in ``removed``), else why it is not stored."""

    root: Path
    since: float = STARTED  # entries used at or after this are not removed
    removed: list[str] = field(default_factory=list)

    def __call__(self, need: int) -> str:
        cap = limits.value("store_bytes")
        self.removed += leftovers(self.root)
        held = entries(self.root)
        total = sum(e.size for e in held)
        over = total + need - cap
        if over <= 0:
            return ""
        old = sorted((e for e in held if e.used < self.since), key=lambda e: e.used)
        if sum(e.size for e in old) < over:
            return (
                limits.note(
                    "store_bytes",
                    f"the store holds {total} bytes, this entry is {need}; the entries "
                    f"this run has not used hold {sum(e.size for e in old)}",
                )
                + "; not stored, the install builds it itself"
            )
        for e in old:
            if over <= 0:
                break
            if _remove(self.root, e):
                over -= e.size
                when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(e.used))
                self.removed.append(f"{e.rel} ({e.size} bytes, last used {when} UTC)")
                log.info(
                    "wheel store: removed %s (%d bytes, least recently used): limit store_bytes (%d)",
                    e.rel,
                    e.size,
                    cap,
                )
        if over > 0:
            return (
                limits.note("store_bytes", f"{over} bytes more than it holds; the entries left are in use")
                + "; not stored, the install builds it itself"
            )
        return ""


def entry_cap_note(added: int) -> str:
    """Why a job stores nothing more: it added ``store_entries_per_job`` entries already."""
    return (
        limits.note("store_entries_per_job", f"this job added {added} entries to the store")
        + "; not stored, the install builds it itself"
    )
