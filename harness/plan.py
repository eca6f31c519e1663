"""Spec -> jobs; shard(jobs, i, n) deterministic and pure.

One job per (interpreter, package).  A job's ``key`` changes whenever
anything that can change its result changes (the package entry, the
interpreter's build key, the settings), so a rerun resumes by comparing keys.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from typing import Any

from .matrix import Interpreter, MatrixSpec, Package, Settings


@dataclass(frozen=True, kw_only=True)
class Job:
    job_id: str  # file-name safe: "<interpreter>--<package>"
    interpreter: Interpreter
    package: Package
    settings: Settings

    def key(self, interpreter_key: str) -> str:
        """Digest of what decides this job's result; resume skips a job whose key matches."""
        blob = json.dumps(
            {
                "package": asdict(self.package),
                "interpreter": interpreter_key,
                "settings": asdict(self.settings),
            },
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:20]

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "interpreter": self.interpreter.name,
            "package": self.package.name,
            "source": "local" if self.package.is_local else "pypi",
        }


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "x"


def make_plan(spec: MatrixSpec) -> list[Job]:
    """All jobs of a matrix, in a stable order (interpreter, then package as listed)."""
    jobs = []
    for it in spec.interpreters:
        for pkg in spec.packages:
            jobs.append(
                Job(
                    job_id=f"{_safe(it.name)}--{_safe(pkg.name)}",
                    interpreter=it,
                    package=pkg,
                    settings=spec.settings,
                )
            )
    return jobs
