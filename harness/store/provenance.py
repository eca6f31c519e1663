"""Where a stored wheel's sdist came from (#56), and the one check that lets a job take it.

A store entry is keyed by the sha256 of the sdist it was built from. The key says which bytes
were built, not whether a job should trust them: any job's plan can name any https sdist (a
direct URL in a dependency's metadata, or a plan rewritten by the package's own build code),
and a ``numpy 99.0`` or a second ``numpy 2.5.5`` built from it would be offered to every later
job that allows that version. So an sdist is stored only when **the index itself** lists it:
the host reads the project's page on the index (PEP 691, the harness's own client; never the
plan's word) and finds a file of that project and version, an sdist, with that sha256. The
build then downloads the file the index lists (its URL, hash-checked), not the plan's URL.
Anything else -- a direct URL, another host, a file the index does not list -- is built by the
job that asked, in its own install, and never stored.

Each entry holds its ``Provenance`` (``provenance.json`` beside the wheel, written by the host
before the entry is renamed into place). An entry is offered to a job (to its dry run, to its
install, as the package itself) only when its record names this job's index, the entry's build
environment and sdist, and the index still lists that file: the same check as when it was
stored. An entry without a record (stored before #56) is taken only after that check, and its
record is written then.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from packaging.utils import InvalidSdistFilename, canonicalize_name, parse_sdist_filename
from packaging.version import InvalidVersion, Version

from ..util import safejson

RECORD = "provenance.json"
RECORD_BYTES = 64 << 10
FORMAT = 1

# The project's page on the job's index (harness.config.indexclient.simple_json, memoized by the
# caller); raises OSError/ValueError when it cannot be read.
Page = Callable[[str], Mapping[str, Any]]


@dataclass(frozen=True, kw_only=True)
class Provenance:
    """Where one stored wheel came from: the index that lists its sdist, the sdist, the build
    environment it was built in, and the job whose plan asked for it."""

    index: str  # the index's base URL, without credentials (indexclient.redact)
    project: str  # canonical
    version: str
    sdist_sha256: str
    filename: str  # the sdist's file name on the index
    url: str  # the file's URL as the index lists it (what the build downloaded)
    build_env: str  # the store key: the interpreter image's tag on docker
    asked_by: str  # the job id whose plan named it
    format: int = FORMAT

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Any) -> Provenance | None:
        """A record as ``write`` left it; None for anything of another shape."""
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            return None
        fields = ("index", "project", "version", "sdist_sha256", "filename", "url", "build_env", "asked_by")
        if not all(isinstance(d.get(k), str) for k in fields):
            return None
        return cls(**{k: d[k] for k in fields})


def _is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


def fetchable(url: str) -> bool:
    """https, or http on a loopback host (a test's local index): where a store build may
    download from (the build checks the sha256 before any of the file's code runs)."""
    u = urlsplit(url)
    return (u.scheme == "https" and bool(u.hostname)) or (u.scheme == "http" and _is_loopback(u.hostname or ""))


def listed(page: Mapping[str, Any], project: str, version: str, sha256: str) -> tuple[Mapping[str, Any] | None, str]:
    """(the index's file entry, "") when ``page`` lists an sdist of ``project`` ``version`` with
    ``sha256`` that is not yanked and has a fetchable URL; else (None, why not)."""
    want = canonicalize_name(project)
    try:
        want_version = Version(version)
    except InvalidVersion:
        return None, f"{version!r} is not a version"
    files = page.get("files")
    same_sha = False
    for f in files if isinstance(files, list) else ():
        if not isinstance(f, dict) or not isinstance(f.get("filename"), str):
            continue
        hashes = f.get("hashes")
        if not isinstance(hashes, dict) or str(hashes.get("sha256", "")).lower() != sha256:
            continue
        same_sha = True
        try:
            name, ver = parse_sdist_filename(f["filename"])
        except InvalidSdistFilename:
            continue
        if canonicalize_name(name) != want or ver != want_version:
            continue
        if f.get("yanked"):
            return None, f"the index lists {f['filename']} as yanked"
        if not isinstance(f.get("url"), str) or not fetchable(f["url"]):
            return None, f"the index gives {f['filename']} no https URL"
        return f, ""
    if same_sha:
        return None, f"the index lists that sha256 for another project or version than {project} {version}"
    return None, f"the index lists no sdist of {project} {version} with sha256 {sha256}"


def check(page: Page, project: str, version: str, sha256: str) -> tuple[Mapping[str, Any] | None, str]:
    """``listed`` on the project's page as the index serves it now; an unreadable page is a
    refusal (nothing stored or offered on a guess)."""
    try:
        data = page(project)
    except (OSError, ValueError, RecursionError) as e:
        return None, f"the index's page for {project} could not be read ({str(e)[:200]})"
    return listed(data, project, version, sha256)


def read(entry: Path) -> Provenance | None:
    """The record of a store entry (a regular file, no link followed, size-capped), or None."""
    try:
        fd = os.open(entry / RECORD, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > RECORD_BYTES:
            return None
        raw = os.read(fd, RECORD_BYTES + 1)
    finally:
        os.close(fd)
    try:
        return Provenance.from_dict(safejson.loads(raw))
    except (ValueError, RecursionError):
        return None


def write(directory: Path, record: Provenance) -> None:
    """The record into a directory that is not yet an entry (the temp dir ``publish`` renames),
    or into an entry the host owns (its mode and mtime restored after: the mtime is when a job
    last used it, harness.store.storecap)."""
    st = os.lstat(directory)
    mode = st.st_mode
    os.chmod(directory, 0o755)
    try:
        target = directory / RECORD
        if target.is_symlink() or target.exists():
            target.unlink()
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(record.to_dict(), f, sort_keys=True)
    finally:
        os.chmod(directory, stat.S_IMODE(mode))
        os.utime(directory, ns=(st.st_atime_ns, st.st_mtime_ns))


def matches(record: Provenance | None, *, index: str, build_env: str, sha256: str) -> str:
    """ "" when ``record`` is of this index, build environment and sdist; else why not."""
    if record is None:
        return "no provenance record"
    if record.index != index:
        return f"stored for another index ({record.index})"
    if record.build_env != build_env or record.sdist_sha256 != sha256:
        return "its record is of another entry"
    return ""
