"""A release's sdist, straight from the index's JSON simple API (PEP 691), with no build.

``pip download --no-binary`` prepares an sdist's metadata before it saves the file, and for a
meson-python or scikit-build project that is a whole build of the package (numpy 2.5.5 did not
finish downloading in 420 s here; it compiles again at install).  The tests only need the
file, so the host reads the project's page, picks the newest release the spec allows that has
a non-yanked sdist, downloads it and checks its sha256.  Nothing of the package runs.  A page
the host cannot read (another index, no network on the host) is an ``IndexUnavailable`` and the
job falls back to ``pip download`` in the backend.

What the page says is not trusted (#30): the file's URL must be https (http only on a loopback
host, as pip's secure origins allow; ``file:`` only when the index itself is a ``file:`` URL),
and the page must give its sha256; otherwise nothing is fetched (``NoSdist``, said in the job's
fetch log).  A URL's credentials never reach a log: ``indexclient.redact``.
"""

from __future__ import annotations

import hashlib
import shutil
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidSdistFilename, canonicalize_name, parse_sdist_filename
from packaging.version import Version

from ..config import indexclient
from ..core.errors import SdistUnchecked

Page = Callable[[str], dict[str, Any]]
MAX_BYTES = 512 * 1024 * 1024


class IndexUnavailable(SdistUnchecked):
    """The host cannot read the index: fall back to pip in the backend."""


class NoSdist(SdistUnchecked):
    """The index answered, and no release the spec allows has a usable sdist."""

    page: dict[str, Any] | None = None  # the page read (``sdist`` sets it): what else the index lists


@dataclass(frozen=True, kw_only=True)
class Fetched:
    version: str
    path: Path
    url: str
    sha256: str
    size: int
    files: tuple[str, ...] = ()  # the release's file names on the page read (its wheels: the wheel column)


def _sdists(page: dict[str, Any], name: str) -> list[tuple[Version, dict[str, Any]]]:
    out = []
    for f in page.get("files", []):
        if not isinstance(f, dict) or f.get("yanked"):
            continue
        try:
            pname, ver = parse_sdist_filename(str(f.get("filename", "")))
        except InvalidSdistFilename:
            continue
        if canonicalize_name(pname) == canonicalize_name(name) and isinstance(f.get("url"), str):
            out.append((ver, f))
    return out


LOOPBACK = ("localhost", "127.0.0.1", "::1")


def allowed_url(url: str, index: str) -> str:
    """'' when the host may fetch ``url`` (a file the page of ``index`` lists), else why not."""
    u, i = urlsplit(url), urlsplit(index)
    if u.scheme == "https" and u.hostname:
        return ""
    if u.scheme == "http" and (u.hostname in LOOPBACK or (u.hostname or "").startswith("127.")):
        return ""
    if u.scheme == "file" and i.scheme == "file":
        return ""
    return (
        f"the index gives a {u.scheme or 'relative'}: URL; only https is fetched "
        "(http on a loopback host; file: only from a file: index)"
    )


def _read(name: str, page: Page) -> dict[str, Any]:
    """The project's page, read once; ``IndexUnavailable`` when it cannot be read."""
    try:
        data = page(name)
        if not isinstance(data, dict) or not isinstance(data.get("files", []), list):
            raise ValueError("not a PEP 691 project page")
    except (OSError, ValueError, RecursionError) as e:
        raise IndexUnavailable(f"the index's page for {name}: {str(e)[:300]}") from None
    return data


def _pick(name: str, spec: str, data: dict[str, Any]) -> tuple[Version, dict[str, Any], str]:
    """(version, file entry, sha256) of the newest non-yanked sdist ``spec`` allows on the page."""
    try:
        allowed = SpecifierSet(spec)
    except InvalidSpecifier as e:
        raise NoSdist(f"bad version spec {spec!r}: {e}") from None
    files = [(v, f) for v, f in _sdists(data, name) if allowed.contains(v, prereleases=bool(spec))]
    if not files:
        raise NoSdist(
            f"no release of {name}{spec} has a non-yanked sdist on the index (No matching distribution found)"
        )
    version, f = max(files, key=lambda vf: vf[0])
    hashes = f.get("hashes")
    want = str(hashes.get("sha256", "") if isinstance(hashes, dict) else "").lower()
    if not want:
        raise NoSdist(f"{Path(str(f['filename'])).name}: the index gives no sha256 for it; not fetched")
    return version, f, want


def sdist_sha256(name: str, spec: str, *, page: Page = indexclient.simple_json) -> str:
    """The sha256 of the sdist ``fetch.sdist`` would download now (nothing downloaded); raises
    ``IndexUnavailable`` / ``NoSdist`` as it does."""
    return _pick(name, spec, _read(name, page))[2]


def sdist(
    name: str,
    spec: str,
    dest: Path,
    *,
    page: Page = indexclient.simple_json,
    timeout: float = 300,
    index: str | None = None,
) -> Fetched:
    """Download the newest sdist ``spec`` allows into ``dest``; its sha256 checked; with the
    release's file names on the page, read once (``Fetched.files``; when no sdist is fetched,
    the page rides on the ``NoSdist``). ``index``: the page's URL (default:
    ``indexclient.project_url``), which decides the schemes allowed."""
    data = _read(name, page)
    try:
        return _download(name, spec, dest, data, timeout=timeout, index=index or indexclient.project_url(name))
    except NoSdist as e:
        e.page = data
        raise


def _download(name: str, spec: str, dest: Path, data: dict[str, Any], *, timeout: float, index: str) -> Fetched:
    version, f, want = _pick(name, spec, data)
    filename = Path(str(f["filename"])).name
    why = allowed_url(str(f["url"]), index)
    if why:
        raise NoSdist(f"{filename}: {why}; not fetched")
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / filename
    h = hashlib.sha256()
    size = 0
    try:
        with indexclient.urlopen(indexclient.request(str(f["url"])), timeout=timeout) as r, open(target, "wb") as out:
            while chunk := r.read(1 << 20):
                size += len(chunk)
                if size > MAX_BYTES:
                    raise NoSdist(f"{target.name} is larger than {MAX_BYTES >> 20} MiB")
                h.update(chunk)
                out.write(chunk)
    except (urllib.error.URLError, OSError) as e:
        target.unlink(missing_ok=True)
        raise IndexUnavailable(f"downloading {indexclient.redact(str(f['url']))}: {e}") from None
    got = h.hexdigest()
    if got != want:
        target.unlink(missing_ok=True)
        raise NoSdist(f"{target.name}: sha256 {got} does not match the index's {want}")
    return Fetched(
        version=str(version),
        path=target,
        url=indexclient.redact(str(f["url"])),
        sha256=got,
        size=size,
        files=tuple(indexclient.release_files(data, str(version))),
    )


def clear(dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)
