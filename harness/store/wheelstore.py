"""The shared wheel store (#34): what pip would build from an sdist is built once per interpreter
build, in a step of its own, and reused read-only by every later job and shard of that build.

``<store>/<build env key>/<sdist sha256>/<wheel file>`` (``harness.core.stored``; the key: ``Workspace.build_env``, the interpreter image's tag on docker). Before a
job's install, a dry run of the same requirements says which sdists pip would build (its
``--report``: ``download_info.url`` and ``archive_info.hashes.sha256``, ``to_build``); each not in
the store is built alone (``build_argv``: ``pip wheel --no-deps`` of that URL, its sha256 checked
by pip before any of its code runs) where nothing but a scratch directory is writable
(``Backend.run_isolated``); the host takes the one wheel of that project and version out of it
and renames it into place (``publish``: a temp dir, then a rename; the first of two concurrent
builds wins, and ``lock`` keeps the second from building at all). The install then gets
``--find-links`` of exactly the store dirs of its plan's sdists, mounted read-only: pip takes
the stored wheel for that exact version, and no job can write into the store.

A store entry is keyed by the sdist's own bytes (its sha256), and its wheel was built by that
sdist's own code: a job can only ever be offered wheels of the very files its own plan names,
whatever another package's code did.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from ..core.pipinstalled import PipItem, PipReport
from ..core.stored import StoredWheel
from ..util.pkginfo import parse_pkg_info
from . import provenance
from .provenance import RECORD, Provenance

PLAN_REPORT = "wheel-plan.json"  # the dry run's --report, in logs/
SDIST_SUFFIXES = (".tar.gz", ".zip", ".tar.bz2", ".tgz")
SHA256_RE = re.compile(r"[0-9a-f]{64}")
KEY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
WHEEL_BYTES = 2 << 30  # a wheel past this is not stored
# The limit of one sdist's build into the store, its own, not a job's (#43): numpy 2.5.5 builds
# from source in over 20 minutes on 2 cores, past a job's install budget; what it takes is not
# charged to the job that needed it (harness.job.wheelsteps.uncharged).
BUILD_TIMEOUT = 3600


@dataclass(frozen=True, kw_only=True)
class Sdist:
    """An sdist pip would build for the install, as the dry run's report names it."""

    name: str  # canonical
    version: str
    url: str  # https: the build step downloads it, hash-checked (the index's URL once provenance checked it)
    sha256: str
    direct: bool = False  # the plan asked for it by URL (``name @ https://...``): never stored (#56)

    def stored(self, wheel: str) -> StoredWheel:
        return StoredWheel(name=self.name, version=self.version, sdist_sha256=self.sha256, wheel=wheel)


# ------------------------------------------------------------------ pure: reading reports


def _items(report: PipReport | None) -> tuple[PipItem, ...]:
    """The report's items that name a version (written in the job's venv: harness.core.pipinstalled)."""
    return tuple(i for i in report.items if i.version) if report is not None else ()


def to_build(report: PipReport | None, *, skip: str = "") -> list[Sdist]:
    """The sdists of a ``pip install --dry-run --report``: https archives (http on a loopback
    host: a local index) that are no wheel, with a sha256; ``skip``: a project left to the install itself (the package under test: its
    build log is the verdict's evidence)."""
    out: dict[str, Sdist] = {}
    for item in _items(report):
        if item.name == canonicalize_name(skip) or not item.url or not item.sha256:
            continue
        parsed = urlparse(item.url)
        if not provenance.fetchable(item.url) or not unquote(parsed.path).endswith(SDIST_SUFFIXES):
            continue
        out.setdefault(
            item.sha256,
            Sdist(
                name=item.name,
                version=item.version,
                url=item.url.split("#", 1)[0],
                sha256=item.sha256,
                direct=item.direct,
            ),
        )
    return list(out.values())


def from_store(report: PipReport | None, store_seen: str, key: str) -> list[StoredWheel]:
    """What an install's ``--report`` says pip took from the store (a ``file:`` URL below
    ``store_seen/key``, as the backend sees the store)."""
    prefix = f"{store_seen.rstrip('/')}/{key}/"
    out = []
    for item in _items(report):
        name, version, url = item.name, item.version, item.url
        if not url.startswith("file:"):
            continue
        path = unquote(urlparse(url).path)
        sha, _, wheel = path[len(prefix) :].partition("/") if path.startswith(prefix) else ("", "", "")
        if SHA256_RE.fullmatch(sha) and wheel.endswith(".whl") and "/" not in wheel:
            out.append(StoredWheel(name=name, version=version, sdist_sha256=sha, wheel=wheel))
    return out


def static_requirements(pkg_info: bytes | None, pyproject: Mapping[str, Any]) -> list[str] | None:
    """The project's requirements as its sdist states them, read by the host before any of its
    code runs (the suite setup's read of its config files: harness.testsetup.sdistfiles), so
    the dry run need not build the package to learn them (meson-python has no metadata hook:
    pip would build the whole wheel); None when they are dynamic or unread.
    PKG-INFO of metadata 2.2+ (``Requires-Dist`` not ``Dynamic``), else pyproject's
    ``[project] dependencies`` (not in ``dynamic``)."""
    msg = parse_pkg_info(pkg_info)
    if msg is not None:
        try:
            new = Version(msg.get("Metadata-Version", "0")) >= Version("2.2")
        except InvalidVersion:
            new = False
        dynamic = {d.strip().lower() for d in msg.get_all("Dynamic") or ()}
        if new and "requires-dist" not in dynamic:
            return [str(r) for r in msg.get_all("Requires-Dist") or ()]
    project = pyproject.get("project")
    if not isinstance(project, dict) or "dependencies" in (project.get("dynamic") or ()):
        return None
    deps = project.get("dependencies", [])
    return [d for d in deps if isinstance(d, str)] if isinstance(deps, list) else None


def build_argv(python: str, sdist: Sdist, out: str) -> list[str]:
    """The build of one sdist: the exact file (pip checks its sha256 before unpacking it), its
    project alone, no cache (nothing but ``out`` is writable)."""
    return [
        python,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-cache-dir",
        "--wheel-dir",
        out,
        f"{sdist.name} @ {sdist.url}#sha256={sdist.sha256}",
    ]


# ------------------------------------------------------------------ the store on the host


def entry(store: Path, key: str, sha256: str) -> Path:
    if not KEY_RE.fullmatch(key) or not SHA256_RE.fullmatch(sha256):
        raise ValueError(f"not a store entry: {key!r}/{sha256!r}")
    return store / key / sha256


def stored(store: Path, key: str, sha256: str) -> str:
    """The wheel of a complete entry (a real dir with one regular ``.whl``, and at most its
    provenance record beside it), else ""."""
    d = entry(store, key, sha256)
    try:
        if not stat.S_ISDIR(os.lstat(d).st_mode):
            return ""
        found = [(e.name, e.is_file(follow_symlinks=False)) for e in os.scandir(d)]
    except OSError:
        return ""
    wheels = [n for n, regular in found if regular and n.endswith(".whl")]
    others = [n for n, regular in found if not (regular and (n.endswith(".whl") or n == RECORD))]
    return wheels[0] if len(wheels) == 1 and not others else ""


def complete(store: Path, key: str, most: int = 500) -> list[str]:
    """The sdist sha256s of the complete entries of ``key`` (``stored``), the most recently used
    first, at most ``most``."""
    try:
        found = [
            (e.stat(follow_symlinks=False).st_mtime, e.name)
            for e in os.scandir(store / key)
            if SHA256_RE.fullmatch(e.name) and e.is_dir(follow_symlinks=False)
        ]
    except OSError:
        return []
    return [sha for _, sha in sorted(found, reverse=True) if stored(store, key, sha)][:most]


@contextlib.contextmanager
def lock(store: Path, key: str, sha256: str) -> Iterator[None]:
    """Held while one sdist is looked up and built: a second job (thread or process) wanting
    the same sdist waits, then finds it stored."""
    with flocked(entry(store, key, sha256).parent / ".locks" / f"{sha256}.lock"):
        yield


@contextlib.contextmanager
def flocked(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` (made, with its dir, when missing; no link followed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def scratch(store: Path, key: str) -> Path:
    """A fresh directory for one build's output (the only thing the build can write)."""
    d = store / key
    d.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=".build-", dir=d))


def _the_wheel(out: Path, sdist: Sdist) -> tuple[Path | None, str]:
    """The one regular wheel file of ``sdist``'s project and version in ``out`` (written by
    its build code: links and anything else are not taken)."""
    found: list[Path] = []
    for e in os.scandir(out):
        if not e.name.endswith(".whl") or not e.is_file(follow_symlinks=False):
            continue
        try:
            name, version, _, _ = parse_wheel_filename(e.name)
        except InvalidWheelFilename:
            continue
        with contextlib.suppress(InvalidVersion):
            if name == canonicalize_name(sdist.name) and version == Version(sdist.version):
                found.append(Path(e.path))
    if len(found) != 1:
        return None, f"{len(found)} wheels of {sdist.name} {sdist.version} in the build's output"
    return found[0], ""


def publish(
    out: Path,
    store: Path,
    key: str,
    sdist: Sdist,
    room: Callable[[int], str] = lambda size: "",
    record: Provenance | None = None,
) -> tuple[StoredWheel | None, str]:
    """Copy the build's wheel into the store: a temp dir, then renamed into place (read-only),
    with its provenance ``record`` beside it (harness.store.provenance). When another build got
    there first, its wheel is kept. (None, why) when nothing fit, or when ``room`` (called with
    the wheel's bytes right before the rename: harness.store.storecap) says why the store takes
    no more."""
    src, why = _the_wheel(out, sdist)
    if src is None:
        return None, why
    target = entry(store, key, sdist.sha256)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f, open(tmp / src.name, "xb") as w:
            if not stat.S_ISREG(os.fstat(fd).st_mode) or os.fstat(fd).st_size > WHEEL_BYTES:
                return None, f"{src.name} is no regular file, or past {WHEEL_BYTES} bytes"
            shutil.copyfileobj(f, w)
        os.chmod(tmp / src.name, 0o444)
        if record is not None:
            provenance.write(tmp, record)
        os.chmod(tmp, 0o555)
        if stored(store, key, sdist.sha256):  # another build's: kept, nothing added
            return sdist.stored(stored(store, key, sdist.sha256)), ""
        full = room(os.stat(tmp / src.name).st_size)
        if full:
            return None, full
        try:
            os.rename(tmp, target)
        except OSError as e:
            if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            won = stored(store, key, sdist.sha256)  # another build won the rename
            return (sdist.stored(won), "") if won else (None, f"{target} exists and is incomplete")
        return sdist.stored(src.name), ""
    finally:
        if tmp.exists():
            os.chmod(tmp, 0o755)
            shutil.rmtree(tmp, ignore_errors=True)
