"""The shared wheel store's name and its record in a result (#34): wheels built from an sdist
once, in a step of their own, and reused read-only by every later job of that interpreter build
on that backend.

Layout (``harness.store.wheelstore`` writes it, the backends mount it read-only)::

    <cache>/wheels/<backend>/<build env key>/<sdist sha256>/<wheel file>
    <cache>/wheels/<backend>/<interpreter key>/tools/<digest>/       (harness.store.toolslayer)

One store per backend (#46): on ``local`` the builds run on the host unconfined, so what a
local run stored is never offered to a docker job (nor the other way round). Entries of the
layout before that (``<cache>/wheels/<interpreter key>/...``) are not read.
``$FT_HARNESS_WHEEL_STORE`` puts the stores elsewhere (``$FT_HARNESS_WHEEL_STORE/<backend>``;
the tests give each run an empty one).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

IN_CONTAINER = "/cache/wheels"  # where the docker backend mounts the store, read-only


BACKENDS = ("docker", "local")  # a store each: harness.backends.BACKENDS


def store_root(cache: Path, backend: str) -> Path:
    """The wheel store of ``backend`` below the harness's cache root (or below
    ``$FT_HARNESS_WHEEL_STORE``): ``<cache>/wheels/<backend>``."""
    if backend not in BACKENDS:
        raise ValueError(f"no wheel store for backend {backend!r}")
    value = os.environ.get("FT_HARNESS_WHEEL_STORE")
    return (Path(value).expanduser().resolve() if value else Path(cache) / "wheels") / backend


@dataclass(frozen=True, kw_only=True)
class StoredWheel:
    """One wheel of the store a job used or built: the project, its version, the sdist it was
    built from (by sha256) and the wheel's file name."""

    name: str
    version: str
    sdist_sha256: str
    wheel: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "sdist_sha256": self.sdist_sha256, "wheel": self.wheel}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StoredWheel:
        """Tolerant: a missing or non-string field reads as ""."""

        def s(k: str) -> str:
            return v if isinstance(v := d.get(k), str) else ""

        return cls(name=s("name"), version=s("version"), sdist_sha256=s("sdist_sha256"), wheel=s("wheel"))


def wheels_from(raw: Any) -> tuple[StoredWheel, ...]:
    """A result file's list of stored wheels (anything else: none)."""
    return tuple(StoredWheel.from_dict(x) for x in raw if isinstance(x, dict)) if isinstance(raw, list) else ()


@dataclass(frozen=True, kw_only=True)
class StoreCharge:
    """What the wheel store cost one job and what it refused (#56), in its result: the store's
    seconds (charged to the store's limits, not the job's budget), the bytes of the entries it
    added, the store limits it reached (as ``limits.note`` says them) and the sdists the store
    would not take or offer because the job's index does not list them ("name version: why")."""

    seconds: float = 0.0
    bytes_added: int = 0
    limits: tuple[str, ...] = ()
    untrusted: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds,
            "bytes_added": self.bytes_added,
            "limits": list(self.limits),
            "untrusted": list(self.untrusted),
        }

    @classmethod
    def from_dict(cls, d: Any) -> StoreCharge:
        """Tolerant: anything of another shape reads as nothing charged."""
        if not isinstance(d, Mapping):
            return cls()

        def strings(k: str) -> tuple[str, ...]:
            v = d.get(k)
            return tuple(x for x in v if isinstance(x, str)) if isinstance(v, list) else ()

        seconds, size = d.get("seconds"), d.get("bytes_added")
        return cls(
            seconds=float(seconds) if isinstance(seconds, int | float) and not isinstance(seconds, bool) else 0.0,
            bytes_added=size if isinstance(size, int) and not isinstance(size, bool) else 0,
            limits=strings("limits"),
            untrusted=strings("untrusted"),
        )
