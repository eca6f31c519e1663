"""The bounds on what the host reads of a package's own files (issue #29), each with a name.

A package's sdist and the files its code writes in the job's workspace (logs, probe.json,
JUnit) are untrusted input the host reads outside any container and outside ``job_timeout``.
Every read is bounded by one of these; a package past one gets a result that names it
(``LimitExceeded.limit``), never an exception out of the job or a host that runs out of time
or memory.  The defaults sit well above what the top 1,000 PyPI sdists need (the sweep:
``benchmarks/sweep.py``) and can be set for a run with ``FT_HARNESS_LIMIT_<NAME>`` (upper
case, e.g. ``FT_HARNESS_LIMIT_EXTRACT_BYTES=2147483648``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["LIMITS", "Limit", "LimitExceeded", "defaults", "note", "value"]


@dataclass(frozen=True, kw_only=True)
class Limit:
    name: str
    default: int
    what: str


LIMITS: dict[str, Limit] = {lim.name: lim for lim in (
    Limit(name="extract_bytes", default=1 << 30,
          what="bytes an sdist may unpack to (counted while extracting)"),
    Limit(name="extract_members", default=100_000, what="files and directories in an sdist"),
    Limit(name="tox_expansions", default=1_000,
          what="{[section]key} substitutions while reading one tox.ini value"),
    Limit(name="tox_value_bytes", default=1 << 20, what="bytes of one tox.ini value after substitution"),
    Limit(name="requirements_depth", default=10, what="depth of a -r chain of requirements files"),
    Limit(name="requirements_files", default=100, what="requirements files one -r chain reads"),
    Limit(name="nesting", default=100, what="nesting depth of a TOML or JSON document"),
    Limit(name="conftest_bytes", default=1 << 20, what="bytes of a conftest.py scanned for imports"),
    Limit(name="log_bytes", default=64 << 20,
          what="bytes of one phase's log kept (the rest is cut, and the log says so)"),
    Limit(name="tests_per_phase", default=200_000, what="per-test outcomes kept from one phase"),
)}


def value(name: str) -> int:
    """The limit in force: FT_HARNESS_LIMIT_<NAME> when set to a positive integer, else its default."""
    lim = LIMITS[name]
    raw = os.environ.get(f"FT_HARNESS_LIMIT_{name.upper()}", "")
    try:
        v = int(raw)
    except ValueError:
        return lim.default
    return v if v > 0 else lim.default


def defaults() -> dict[str, int]:
    return {name: lim.default for name, lim in LIMITS.items()}


class LimitExceeded(Exception):
    """A package's file went past a named limit: data about the package, never a harness bug."""

    def __init__(self, limit: str, detail: str) -> None:
        self.limit = limit
        self.detail = detail
        super().__init__(f"limit {limit} ({value(limit)}) exceeded: {detail}")


def note(name: str, detail: str) -> str:
    """The line a result carries when a package's file went past limit ``name``."""
    return str(LimitExceeded(name, detail))
