"""The package index's client: a project's page from its JSON simple API (PEP 691), and the
requests for the files it lists.

The index is PyPI's, or ``$FT_HARNESS_INDEX_URL`` (a mirror, a private index, a test's local
one). Its credentials travel in an ``Authorization`` header only (``request``), never in a URL a
log, a result or package code may see (``redact``, ``public_index``); every redirect is checked
again (``_Redirects``, #46); a page is read with a size cap (``simple_json``).
"""

from __future__ import annotations

import base64
import logging
import os
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from ..util import safejson

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
    creds = (
        own
        if own.username is not None
        else index
        if ((index.scheme, index.hostname, index.port) == (own.scheme, own.hostname, own.port))
        else None
    )
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
        data["files"] = [
            dict(f, url=urljoin(url, f["url"])) if isinstance(f, dict) and isinstance(f.get("url"), str) else f
            for f in files
        ]
    return data


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
        u.scheme == "http" and (host in LOOPBACK or host.startswith("127."))
    )


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Each redirect re-checked (#46): to https (or http on a loopback host) only, and the
    index's ``Authorization`` header dropped when it leaves the host (scheme, host, port) the
    credentials were given for -- urllib would send them on to any host."""

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is None:
            return None
        if not secure_url(new.full_url):
            raise urllib.error.HTTPError(
                redact(newurl),
                code,
                "a redirect to a URL that is not https (or http on a loopback host) is not followed",
                headers,
                fp,
            )
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
        data = safejson.loads(raw)
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
    return [
        f["filename"]
        for f in page.get("files", [])
        if isinstance(f, dict) and _file_version(f.get("filename", "")) == want
    ]
