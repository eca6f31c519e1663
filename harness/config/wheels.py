"""Is there a free-threaded wheel for the tested release, and which one did we install?

Read from the index's JSON metadata and pip's install report, the
``packaging.utils``/``packaging.tags`` way.  A wheel counts as free-threaded
when one of its tags is one the interpreter accepts, as it said itself
(``packaging.tags.sys_tags()`` run by it, kept in InterpreterInfo.tag_pairs and
.platforms): ``cp313t``/``cp314t``/``cp315t`` and PEP 803's ``abi3t``
(``cp315-abi3t``, ``cp315-abi3.abi3t``) alike, and never a plain ``abi3``,
which free-threaded builds do not load.  A ``none`` ABI wheel (``none-any``)
is reported as ``pure`` (it runs on any build, GIL or not).

Results written before interpreters recorded their tags fall back to the tags
``packaging`` computes for that version on this machine.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import platform
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from packaging import tags as ptags
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from ..core.evidence import Probe, Wheel
from ..core.model import InterpreterInfo
from ..core.pipreport import PipReport

log = logging.getLogger(__name__)
INDEX_URL = "https://pypi.org/simple/"
INDEX_ENV = "FT_HARNESS_INDEX_URL"  # another PEP 691 index (a mirror, or a test's local index)


def redact(url: str) -> str:
    """``url`` without its user and password (an index's token): what logs, results, reports and
    package code may see."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def request(url: str, headers: dict[str, str] | None = None) -> urllib.request.Request:
    """A request for ``url`` (the index's page or a file it lists) whose credentials, its own or
    $FT_HARNESS_INDEX_URL's for the index's host, travel in an Authorization header, never in
    the URL an error message or a log line may show."""
    own, index = urlsplit(url), urlsplit(os.environ.get(INDEX_ENV, ""))
    creds = own if own.username is not None else index if (
        (index.scheme, index.hostname, index.port) == (own.scheme, own.hostname, own.port)) else None
    headers = dict(headers or {})
    if creds is not None and creds.username is not None:
        token = f"{unquote(creds.username)}:{unquote(creds.password or '')}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(token).decode("ascii")
    return urllib.request.Request(redact(url), headers=headers)


def public_index() -> str:
    """$FT_HARNESS_INDEX_URL without its credentials ('' when unset): the index package code is
    pointed at (PIP_EXTRA_INDEX_URL). Only the host's own requests use the credentials."""
    return redact(os.environ.get(INDEX_ENV, ""))


def project_url(name: str) -> str:
    """The project's page on the index: $FT_HARNESS_INDEX_URL, else pypi.org's simple API."""
    base = os.environ.get(INDEX_ENV) or INDEX_URL
    return base.rstrip("/") + f"/{canonicalize_name(name)}/"


def _absolute(data: dict[str, Any], url: str) -> dict[str, Any]:
    """A page whose file URLs are absolute (PEP 691 lets them be relative to the page)."""
    files = data.get("files")
    if isinstance(files, list):
        data["files"] = [dict(f, url=urljoin(url, f["url"])) if isinstance(f, dict)
                         and isinstance(f.get("url"), str) else f for f in files]
    return data


def ft_abi(version: str) -> str:
    """The version-specific free-threaded ABI of CPython ``version``: ``3.14.0`` -> ``cp314t``."""
    major, minor = version.split(".")[:2]
    return f"cp{major}{minor}t"


def _version_pairs(version: str) -> tuple[str, ...]:
    """The interpreter-abi pairs a free-threaded CPython ``version`` accepts, computed by
    packaging here (for results that did not record the interpreter's own sys_tags())."""
    major, minor = (int(x) for x in version.split(".")[:2])
    pv = (major, minor)
    found = [*ptags.cpython_tags(pv, abis=[ft_abi(version)], platforms=["any"]),
             *ptags.compatible_tags(pv, f"cp{major}{minor}", platforms=["any"])]
    return tuple(dict.fromkeys(f"{t.interpreter}-{t.abi}" for t in found))


def classify_wheel(filename: str, version: str = "", machine: str | None = None, *,
                   interp: InterpreterInfo | None = None) -> str:
    """'free-threaded' | 'pure' | 'gil-only' | 'other-platform' for one wheel file name.

    With ``interp`` (and its recorded tags) the interpreter decides; else ``version`` does,
    with a linux + ``machine`` platform check."""
    try:
        _, _, _, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return "other-platform"
    if interp is not None and interp.tag_pairs:
        pairs, platforms = set(interp.tag_pairs), set(interp.platforms)

        def fits(platform_: str) -> bool:
            return platform_ in platforms
    else:
        version = version or (interp.version if interp else "")
        pairs = set(_version_pairs(version))
        machine = machine or platform.machine()

        def fits(platform_: str) -> bool:
            return machine in platform_ and "linux" in platform_
    kinds = set()
    for t in tags:
        if t.abi == "none" and t.platform == "any":
            kinds.add("pure")
        elif f"{t.interpreter}-{t.abi}" in pairs:
            if fits(t.platform):
                kinds.add("pure" if t.abi == "none" else "free-threaded")
            else:
                kinds.add("other-platform")
        else:
            kinds.add("gil-only")
    # a compressed tag set (cp315-abi3.abi3t-macosx…) is told by its free-threaded half
    for k in ("free-threaded", "pure", "other-platform", "gil-only"):
        if k in kinds:
            return k
    return "other-platform"


def availability(files: Sequence[str], version: str = "", machine: str | None = None, *,
                 interp: InterpreterInfo | None = None) -> str:
    """Summarise a release's files: 'free-threaded', 'pure', 'gil-only' (wheels, none for this
    interpreter on this platform) or 'sdist-only'."""
    kinds = {classify_wheel(f, version, machine, interp=interp) for f in files if f.endswith(".whl")}
    for k in ("free-threaded", "pure"):
        if k in kinds:
            return k
    return "gil-only" if kinds else "sdist-only"


def _file_version(filename: str) -> str:
    try:
        if filename.endswith(".whl"):
            return str(parse_wheel_filename(filename)[1])
        return str(parse_sdist_filename(filename)[1])
    except (InvalidWheelFilename, InvalidSdistFilename):
        return ""


LOOPBACK = ("localhost", "127.0.0.1", "::1")


def secure_url(url: str) -> bool:
    """https, or http to a loopback host (pip's secure origins): where the host may be sent."""
    u = urlsplit(url)
    host = u.hostname or ""
    return (u.scheme == "https" and bool(host)) or (
        u.scheme == "http" and (host in LOOPBACK or host.startswith("127.")))


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Each redirect re-checked (#46): to https (or http on a loopback host) only, and the
    index's ``Authorization`` header dropped when it leaves the host (scheme, host, port) the
    credentials were given for -- urllib would send them on to any host."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str,
                         headers: Any, newurl: str) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is None:
            return None
        if not secure_url(new.full_url):
            raise urllib.error.HTTPError(redact(newurl), code, "a redirect to a URL that is not "
                                         "https (or http on a loopback host) is not followed",
                                         headers, fp)
        old, now = urlsplit(req.full_url), urlsplit(new.full_url)
        if (old.scheme, old.hostname, old.port) != (now.scheme, now.hostname, now.port):
            new.remove_header("Authorization")
        return new


_OPENER = urllib.request.build_opener(_Redirects)


def urlopen(req: urllib.request.Request, timeout: float) -> Any:
    """``urllib.request.urlopen`` with the redirect rule of ``_Redirects``: every request the
    host makes to the index and the files it lists goes through this."""
    return _OPENER.open(req, timeout=timeout)


MAX_PAGE_BYTES = 128 << 20  # the largest PyPI project pages (botocore) are tens of MiB


def simple_json(name: str, timeout: float = 20) -> dict[str, Any]:
    """A project's page from the index's JSON simple API (PEP 691); raises OSError/ValueError.
    Read with a size cap; a page nested too deeply is a ValueError like any bad page (#46)."""
    url = project_url(name)
    req = request(url, {"Accept": "application/vnd.pypi.simple.v1+json"})
    with urlopen(req, timeout=timeout) as r:
        raw = r.read(MAX_PAGE_BYTES + 1)
    if len(raw) > MAX_PAGE_BYTES:
        raise ValueError(f"{redact(url)}: the page is larger than {MAX_PAGE_BYTES >> 20} MiB")
    try:
        data = json.loads(raw)
    except RecursionError:
        raise ValueError(f"{redact(url)}: the page is nested too deeply") from None
    if not isinstance(data, dict) or not isinstance(data.get("files", []), list):
        raise ValueError(f"{redact(url)}: not a PEP 691 project page")
    return _absolute(data, redact(url))


def index_files(name: str, version: str, timeout: float = 20) -> list[str] | None:
    """File names of one release, from the index's JSON simple API (PEP 691)."""
    try:
        data = simple_json(name, timeout)
    except (urllib.error.URLError, OSError, ValueError) as e:
        log.warning("wheel availability for %s %s unknown: %s", name, version, e)
        return None
    return release_files(data, version)


def release_files(page: dict[str, Any], version: str) -> list[str]:
    """The file names of release ``version`` on a project's page (``simple_json``'s)."""
    want = str(Version(version))
    return [f["filename"] for f in page.get("files", [])
            if isinstance(f, dict) and _file_version(f.get("filename", "")) == want]


def installed_from(report: PipReport | None, name: str) -> str:
    """The file pip installed for ``name`` per its --report ('' when unknown)."""
    item = report.item(name) if report is not None else None
    return item.file if item is not None else ""


def wheel_info(name: str, *, local: bool, version: str, install_report: PipReport | None,
               interp: InterpreterInfo, probe: Probe | None = None, installed_ok: bool = True,
               fallback: str = "", index_files: Sequence[str] | None = None) -> Wheel:
    """The wheel column: what the index offers for this release (``index_files``: its file names
    on the page the fetch read, None when it read none) and what pip installed (``installed_ok``:
    the install phase succeeded; pip may write its report and then fail).
    ``install_report``: pip's --report of what is tested, as parsed onto its phase
    (``harness.verdict.artifact.tested_report``)."""
    installed = installed_from(install_report, name)
    if not installed_ok:
        how = "not installed"
    elif local:
        how = "local source"
    elif installed.endswith(".whl"):
        how = f"wheel ({classify_wheel(installed, interp.version, interp=interp)})"
    elif installed:
        how = "built from sdist"
    else:
        how = "unknown"
    if not local and version:
        available = (availability(index_files, interp.version, interp=interp) if index_files is not None
                     else "unknown")
    else:
        available = "n/a"
    warning = ""
    if probe is not None and probe.modules and how == "wheel (free-threaded)":
        warning = "the free-threaded wheel re-enables the GIL: " + ", ".join(probe.modules)
    return Wheel(installed=how, installed_file=installed, available=available, warning=warning, fallback=fallback)
