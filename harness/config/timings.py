"""Measured per-package job times shipped with the project: what ``plan`` and the run's ETA use
for a package no ``--durations`` report covers, instead of the settings' worst case.

``harness/data/durations.json`` holds, per package (PEP 503 name), the seconds one job took
here -- its phases together, on a 2-core machine, CPython 3.13.5t -- with the settings it ran
with; ``tools/durations_table.py`` writes it from result dirs.  A job with other settings gets
the measured seconds scaled by how the settings' heuristic changes (``plan.heuristic_seconds``
of the job under both), capped at the job's own budget.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from .matrix import Settings

TABLE = Path(__file__).resolve().parents[1] / "data" / "durations.json"
SETTINGS_KEYS = ("threads", "iterations", "repeat", "test_timeout", "job_timeout", "confirm")


@lru_cache(maxsize=4)
def table(path: Path = TABLE) -> dict[str, dict[str, Any]]:
    """name -> {"seconds", "settings", ...}; {} when the file is missing or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    pkgs = data.get("packages") if isinstance(data, dict) else None
    if not isinstance(pkgs, dict):
        return {}
    return {canonicalize_name(str(k)): v for k, v in pkgs.items()
            if isinstance(v, dict) and isinstance(v.get("seconds"), int | float) and v["seconds"] > 0}


def measured(jobs: Sequence[Any], heuristic: Callable[[Any], float],
             path: Path = TABLE) -> dict[str, float]:
    """job id -> expected seconds from the shipped table, for the PyPI jobs it covers (not
    TSan builds: the table is of plain free-threaded interpreters)."""
    rows = table(path)
    out: dict[str, float] = {}
    for job in jobs:
        row = rows.get(canonicalize_name(job.package.name))
        if row is None or job.package.is_local or job.interpreter.sanitizer:
            continue
        then = {k: v for k, v in (row.get("settings") or {}).items() if k in SETTINGS_KEYS}
        try:
            there = replace(job, settings=replace(job.settings, **then))
        except TypeError:
            there = job
        ratio = heuristic(job) / max(1.0, heuristic(there))
        cap = job.settings.job_timeout + job.settings.install_timeout
        out[job.job_id] = round(min(float(row["seconds"]) * ratio, cap), 1)
    return out


def row_settings(s: Settings) -> dict[str, Any]:
    """The settings a table row records."""
    return {k: getattr(s, k) for k in SETTINGS_KEYS}
