"""What the shared wheel store cost a run, and what it saved (issue #43): report.json's
``meta.store``, read from the results alone (pure), so a report merged from shards says it too.

- ``built``: each wheel a job of the run built into the store (``JobResult.wheels_built``), once,
  with the seconds of its ``wheel-<name>-<version>`` step (its own limit, not the job's budget);
- ``reused``: how many installs took a stored wheel instead of building it (``wheels_reused``),
  and of which distributions;
- ``seconds`` and ``charged``: the store's time over all jobs, and per job what it cost (seconds,
  bytes added), the store limits it reached and the sdists refused for provenance (#56:
  ``JobResult.store``);
- ``before_jobs``: what the store step did before the jobs (``ft-harness store``: its
  ``store.json`` in the output dir), when it ran.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.model import JobResult


def _step(name: str, version: str) -> str:
    return "wheel-" + re.sub(r"[^A-Za-z0-9_.-]", "_", f"{name}-{version}")  # harness.job.wheelsteps._build


def summary(results: Sequence[JobResult], before_jobs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    built: dict[tuple[str, str], dict[str, Any]] = {}
    for r in results:
        for w in r.wheels_built:
            step = next((p for p in r.phases if p.name == _step(w.name, w.version)), None)
            built.setdefault(
                (r.interpreter.key, w.sdist_sha256),
                {
                    "name": w.name,
                    "version": w.version,
                    "wheel": w.wheel,
                    "interpreter": r.interpreter.name,
                    "job_id": r.job_id,
                    "seconds": round(step.duration, 1) if step else 0.0,
                },
            )
    reused = Counter(f"{w.name} {w.version}" for r in results for w in r.wheels_reused)
    out: dict[str, Any] = {
        "built": list(built.values()),
        "build_seconds": round(sum(b["seconds"] for b in built.values()), 1),
        "reused": sum(reused.values()),
        "reused_by_wheel": dict(sorted(reused.items())),
        # what the store cost each job (its own time, not the job's budget) and refused it (#56)
        "seconds": round(sum(r.store.seconds for r in results), 1),
        "charged": [
            {"job_id": r.job_id, **r.store.to_dict()}
            for r in results
            if r.store.seconds >= 1 or r.store.bytes_added or r.store.limits or r.store.untrusted
        ],
    }
    if before_jobs:
        out["before_jobs"] = dict(before_jobs)
    return out


def line(store: Mapping[str, Any]) -> str:
    """One line for a run's output: "wheel store: built 1 (numpy 2.5.5, 1312 s), reused 4"."""
    built = store.get("built") or []
    names = ", ".join(f"{b['name']} {b['version']}, {b['seconds']:.0f} s" for b in built[:5])
    more = f" and {len(built) - 5} more" if len(built) > 5 else ""
    text = f"wheel store: built {len(built)}{f' ({names}{more})' if built else ''}, reused {store.get('reused', 0)}"
    pre = store.get("before_jobs")
    if pre:
        failed = f", {len(pre['failed'])} failed" if pre.get("failed") else ""
        text += (
            f"; before the jobs: {len(pre.get('built') or [])} built{failed}, {len(pre.get('reused') or [])} "
            f"reused in {pre.get('seconds', 0):.0f} s"
        )
    return text
