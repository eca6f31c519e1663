"""pip's ``--report`` (its installation report, JSON), as the harness reads it: per item it
installs (or, in a dry run, would install), the project, its version, where the file came from.

pip writes the report inside the package's venv, after package code ran (a build backend, a
setup.py): every field is type-checked (#29) and anything of another shape is left out, so a
reader never meets a value the report should not have held. ``harness.parse.pipreport`` turns the
file into a ``PipReport`` once, onto the phase that wrote it; the readers (the pure fallback
wheel: ``harness.verdict.artifact``; the wheel column: ``harness.config.wheels``; the wheel
store: ``harness.store.wheelstore``) take this value, never the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote, urlparse

from packaging.utils import canonicalize_name

_SHA256_RE = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, kw_only=True)
class PipItem:
    """One item of the report's ``install`` list."""

    name: str  # canonical (``metadata.name``)
    version: str = ""  # ``metadata.version``; "" when it is not a string
    url: str = ""  # ``download_info.url``: "" when it is not a string
    sha256: str = ""  # ``download_info.archive_info.hashes.sha256`` when it is 64 lowercase hex digits
    direct: bool = False  # ``is_direct``: asked for by URL (``name @ https://...``), not found on the index

    @property
    def file(self) -> str:
        """The installed file's name, the URL path's last part (``six-1.17.0-py2.py3-none-any.whl``,
        ``msgpack-1.2.4.tar.gz``), '' when the report gives no URL."""
        return PurePosixPath(unquote(urlparse(self.url).path)).name if self.url else ""

    @property
    def is_wheel(self) -> bool:
        return self.file.endswith(".whl")

    @classmethod
    def from_dict(cls, item: Any) -> PipItem | None:
        """An item of the report as pip writes it; None when it names no project."""
        meta = item.get("metadata") if isinstance(item, dict) else None
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            return None
        info = item.get("download_info")
        info = info if isinstance(info, dict) else {}
        archive = info.get("archive_info")
        hashes = archive.get("hashes") if isinstance(archive, dict) else None
        sha = hashes.get("sha256") if isinstance(hashes, dict) else None
        return cls(
            name=str(canonicalize_name(meta["name"])),
            version=meta["version"] if isinstance(meta.get("version"), str) else "",
            url=info["url"] if isinstance(info.get("url"), str) else "",
            sha256=sha if isinstance(sha, str) and _SHA256_RE.fullmatch(sha) else "",
            direct=item.get("is_direct") is True,
        )


@dataclass(frozen=True)
class PipReport:
    """The items of one ``--report``, in its order; empty when it was unreadable or of another shape."""

    items: tuple[PipItem, ...] = ()

    def item(self, name: str) -> PipItem | None:
        """The first item for project ``name`` (any spelling), None when the report has none."""
        want = canonicalize_name(name)
        return next((i for i in self.items if i.name == want), None)

    @classmethod
    def from_dict(cls, report: Any) -> PipReport:
        items = report.get("install") if isinstance(report, dict) else None
        read = (PipItem.from_dict(i) for i in (items if isinstance(items, list) else ()))
        return cls(tuple(i for i in read if i is not None))
