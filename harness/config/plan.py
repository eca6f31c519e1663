"""Spec -> jobs: one job per (interpreter, package), and which results belong to the plan.

A job's ``key`` changes whenever anything that can change its result changes (the package
entry, the interpreter's build key, the settings), so a rerun resumes by comparing keys.  How
long a job is expected to take is harness.config.estimate; how the jobs are split into shards
is harness.config.sharding; the plan as text is harness.config.plantext.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..core.jobspec import Interpreter, Package, Settings
from ..core.jobspec import job_id as make_job_id
from ..core.suiterecord import TestSetup
from ..testsetup.suitesetup import registry_skip
from ..util.stats import ALPHA, fisher_greater
from .matrix import MatrixSpec


@dataclass(frozen=True, kw_only=True)
class Job:
    job_id: str  # file-name safe: "<interpreter>--<package>"
    interpreter: Interpreter
    package: Package
    settings: Settings
    # the recipe registry's skip_versions for the job's Python (with_skips,
    # once the interpreters are prepared): the job is not run, and its test_setup says why
    skip: TestSetup | None = field(default=None, compare=False)

    def key(self, interpreter_key: str) -> str:
        """Digest of what decides this job's result; resume skips a job whose key matches."""
        blob = json.dumps(
            {
                "package": asdict(self.package),
                "interpreter": interpreter_key,
                "settings": asdict(self.settings),
                "phases": PHASES_VERSION,
            },
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:20]

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "interpreter": self.interpreter.name,
            # what the matrix asks for ("" for an installed python: that has not run yet)
            "interpreter_version": self.interpreter.version,
            "interpreter_source": self.interpreter.source.describe(),
            "package": self.package.name,
            # the version the matrix pins or a `top:` selector resolved ("" = latest at run time)
            "version": self.package.version,
            "source": "local" if self.package.is_local else "pypi",
        }


# What the test phases run (not how their output is decided: a result from another version of
# the verdict rules is decided again from its phases, harness.reuse.reuse).  Bump it when a change to
# the job's steps would make an earlier run's phases differ; results keyed before are run again.
PHASES_VERSION = 3  # 2: per-version trees and tests inside the package (harness.testsetup.testdirs); a compiled
# project's pure fallback wheel built from its sdist (harness.verdict.artifact, #35); 3: the GIL-on runs
# only of the tests red with the GIL off (settings.gil_on: targeted, harness.verdict.gilon, #34)


CLAIM_FAMILY = 10  # a claim should be able to hold among this many candidates (Holm: ALPHA / 10)


def best_p(confirm: int) -> float:
    """The smallest one-sided Fisher p that ``confirm`` runs alone a mode can reach: every run
    with the GIL off failing, none with it on (k/k against 0/k; 1.0 with none)."""
    return fisher_greater(confirm, confirm, 0, confirm)


def claim_warning(settings: Settings) -> str:
    """One line when a matrix's settings cannot hold an "only without the GIL" claim (``ft-race``,
    ``ft-crash``: decided on the runs alone, verdict.modes): the best p its ``confirm`` can reach
    is above ALPHA; "" when it can, or when the matrix runs one GIL mode (no such claim)."""
    if not {0, 1} <= set(settings.gil_modes) or best_p(settings.confirm) <= ALPHA:
        return ""
    need = next(n for n in range(1, 101) if best_p(n) <= ALPHA / CLAIM_FAMILY)
    c = settings.confirm
    has = (
        "turns the runs alone off"
        if c == 0
        else f"can reach p = {best_p(c):.2g} at best ({c}/{c} runs alone failing with the GIL off, 0/{c} with it "
        f"on), above α = {ALPHA}"
    )
    return (
        f"settings.confirm: {c} {has}: no ft-race or ft-crash can hold; an ft-race or ft-crash needs "
        f"confirm ≥ {need} (p = {best_p(need):.1g}, which holds among up to {_holds_among(best_p(need))} candidates)"
    )


def _holds_among(p: float) -> int:
    return int(ALPHA / p + 1e-9)


def missing_installed(spec: MatrixSpec) -> list[tuple[Interpreter, str]]:
    """The matrix's installed interpreters (``source: python:NAME_OR_PATH``) not found here, each
    with why: no NAME on PATH, or no executable file at PATH.  Only looked up, not run (``build``
    and ``run`` probe and check them)."""
    out = []
    for interp in spec.interpreters:
        src = interp.source
        if src.kind != "python":
            continue
        if src.path:
            if not (os.path.isfile(src.path) and os.access(src.path, os.X_OK)):
                out.append((interp, f"no executable file {src.path}"))
        elif shutil.which(src.name) is None:
            out.append((interp, f"no {src.name!r} on PATH"))
    return out


def make_plan(spec: MatrixSpec) -> list[Job]:
    """All jobs of a matrix, in a stable order (interpreter, then package as listed)."""
    jobs = []
    for it in spec.interpreters:
        for pkg in spec.packages:
            jobs.append(Job(job_id=make_job_id(it.name, pkg.name), interpreter=it, package=pkg, settings=spec.settings))
    return jobs


def in_plan(results: Sequence[Any], jobs: Sequence[Job]) -> tuple[list[Any], list[str]]:
    """(the results that belong to a planned job, one line for each that does not).

    A result belongs when its job id is planned, its interpreter came from the planned source
    (and version), and its key is the one the planned job gets with the interpreter key the
    result records: a result of another matrix, of other settings, of another package version,
    or one written by hand (or by package code) names what differs and is never published."""
    planned = {j.job_id: j for j in jobs}
    kept: list[Any] = []
    refused: list[str] = []
    for r in results:
        job = planned.get(r.job_id)
        why = ""
        if job is None:
            why = "its job is not in the plan"
        elif r.interpreter.source != job.interpreter.source.describe():
            why = (
                f"its interpreter came from {str(r.interpreter.source)[:80]!r}, the plan's "
                f"from {job.interpreter.source.describe()!r}"
            )
        elif (
            job.interpreter.version
            and r.interpreter.version != job.interpreter.version
            and not str(r.interpreter.version).startswith(job.interpreter.version + ".")
        ):
            why = f"its interpreter is {str(r.interpreter.version)[:40]}, the plan's {job.interpreter.version}"
        elif r.key != job.key(str(r.interpreter.key)):
            why = "its key is not the planned job's (another package entry, version or settings)"
        if why:
            refused.append(f"{str(r.job_id)[:120]}: not published: {why}")
        else:
            kept.append(r)
    return kept, refused


def with_skips(jobs: Sequence[Job], versions: dict[str, str]) -> list[Job]:
    """The jobs, each with the recipe registry's skip for its interpreter's version (``versions``:
    interpreter name -> the version the prepared interpreter reports), decided once before any
    job runs or anything is fetched; the job and the store step read ``Job.skip``."""
    out = []
    for j in jobs:
        v = versions.get(j.interpreter.name, "")
        skip = (
            registry_skip(j.package, j.settings, ".".join(v.split(".")[:2])) if v and not j.package.unresolved else None
        )
        out.append(replace(j, skip=skip) if skip is not None else j)
    return out
