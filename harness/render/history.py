"""The site's small memory: per package, its verdict over the last N runs.

``history.json`` is written next to the site's index; the next run passes the
previous site's file back in (``--history``) and gets it extended by one run.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import ConfigError
from ..core.model import VERDICTS
from ..results.report import CompatReport

HISTORY_SCHEMA = 1
LIMIT = 10


def run_id(report: CompatReport) -> str:
    m = report.meta
    return str(m.finished or m.started or m.matrix_digest or "run")


def validate(history: Any) -> dict[str, Any]:
    if not isinstance(history, dict) or history.get("schema") != HISTORY_SCHEMA:
        raise ConfigError(f"history file: expected an object with schema {HISTORY_SCHEMA}")
    if not isinstance(history.get("runs"), list) or not isinstance(history.get("packages"), dict):
        raise ConfigError("history file: 'runs' must be a list and 'packages' an object")
    for job, entries in history["packages"].items():
        if not isinstance(entries, list) or not all(
            isinstance(e, dict) and e.get("verdict") in VERDICTS for e in entries
        ):
            raise ConfigError(f"history file: packages[{job!r}] must be a list of verdict entries")
    return history


def update(history: dict[str, Any] | None, report: CompatReport, limit: int = LIMIT) -> dict[str, Any]:
    """A new history: the old one plus this report's run, at most ``limit`` runs kept.

    Re-rendering the same report (same run id) replaces its entry instead of
    adding a second one.  Packages not seen in the last ``limit`` runs drop out.
    """
    old = validate(history) if history is not None else {"runs": [], "packages": {}}
    rid = run_id(report)
    runs = [r for r in old["runs"] if r.get("id") != rid]
    runs.append({"id": rid, "matrix_digest": report.meta.matrix_digest, "packages": len(report.packages)})
    runs = runs[-limit:]
    keep = {r["id"] for r in runs}
    packages: dict[str, list[dict[str, Any]]] = {}
    for job, entries in old["packages"].items():
        kept = [e for e in entries if e.get("run") in keep and e.get("run") != rid]
        if kept:
            packages[job] = kept
    for p in report.packages:
        packages.setdefault(p.job_id, []).append({"run": rid, "verdict": p.verdict, "version": p.version})
    for job in packages:
        packages[job] = packages[job][-limit:]
    return {"schema": HISTORY_SCHEMA, "limit": limit, "runs": runs, "packages": dict(sorted(packages.items()))}
