"""The store step before the jobs (issue #43): the union of the sdists the jobs' wheel plans
need, built once per interpreter build into the shared wheel store, before any job runs.

Each job's chain is started as a job starts (``job.open_job``, ``job.start_env``) and run up
to its wheel store stage (fetch, the suite's setup read from the tree, then the store's one
verb, ``harness.store.take.take_or_build``: the venv, the dry run, each sdist the index vouches
for built in its isolated step), in a workspace of its own under ``<out>/store/``. The step's
time is bounded by ``store_seconds_per_run`` (each job's by ``store_seconds_per_job``), so it
ends within the workflow's store job whatever one package's metadata hook or build does; one
job adds at most ``store_bytes_per_job`` to the store. A second job needing the same sdist finds it stored. No result
is written: the jobs run after this, and their own plans find every wheel in the store, so no
job's budget pays for a dependency's build. What the step did is ``store.json`` in ``--out``
(``StoreStep``), which the report's ``meta.store.before_jobs`` carries: with the store's bounds
in force (``bounds``: ``store_entries_per_job``, ``store_bytes`` and what happens past it,
harness.store.storecap) and what they did (``evicted``: entries removed for room; ``refused``:
wheels not stored; ``limits``: a store limit a job reached), the sdists refused because the
index does not list them (``untrusted``: a direct URL, another host), and the builds that failed
(``failed``, with what the build lacked when its log says: ``memory (the limit memory_bytes)``,
a toolchain; the jobs then build it themselves).

In the workflow one store job runs this (``ft-harness store``) and saves the store to the
Actions cache; every shard restores it read-only (.github/workflows/matrix.yml).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..backends.base import Backend, Prepared
from ..config.plan import Job
from ..core import limits
from ..core.stored import StoredWheel
from ..store.take import BUILD_TIMEOUT, NO_STORE, POLICY, StoreUse
from . import stages
from .context import Progress
from .job import end_job, free_job, open_job, start_env
from .source import Unfetched, source

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class StoreStep:
    """What the store step did: per interpreter build, the wheels it built and found."""

    jobs: int = 0  # jobs whose plan it ran
    built: tuple[StoredWheel, ...] = ()
    reused: tuple[StoredWheel, ...] = ()  # in the store before (an earlier run, another week)
    not_planned: tuple[str, ...] = ()  # "job id: why" (no sdist, no plan, no store)
    seconds: float = 0.0
    limit: int = BUILD_TIMEOUT  # each build's own limit
    evicted: tuple[str, ...] = ()  # "job id: entry (bytes, last used)" removed for room (store_bytes)
    refused: tuple[str, ...] = ()  # "job id: name version: why" not stored (store_bytes, store_entries_per_job)
    failed: tuple[str, ...] = ()  # "job id: name version: why" its build failed; the jobs build it themselves
    untrusted: tuple[str, ...] = ()  # "job id: name version: why" refused: the index does not vouch for it (#56)
    limits: tuple[str, ...] = ()  # "job id: limit ..." a store limit a job reached (store_seconds_*, store_bytes_*)

    def to_dict(self) -> dict[str, Any]:
        return {
            "jobs": self.jobs,
            "built": [w.to_dict() for w in self.built],
            "reused": [w.to_dict() for w in self.reused],
            "not_planned": list(self.not_planned),
            "seconds": round(self.seconds, 1),
            "limit": self.limit,
            "bounds": {
                "store_entries_per_job": limits.value("store_entries_per_job"),
                "store_bytes": limits.value("store_bytes"),
                "store_bytes_per_job": limits.value("store_bytes_per_job"),
                "store_seconds_per_job": limits.value("store_seconds_per_job"),
                "store_seconds_per_run": limits.value("store_seconds_per_run"),
                "policy": POLICY,
            },
            "evicted": list(self.evicted),
            "refused": list(self.refused),
            "failed": list(self.failed),
            "untrusted": list(self.untrusted),
            "limits": list(self.limits),
        }


def _one(job: Job, prepared: Prepared, backend: Backend, out: Path, progress: Progress) -> tuple[StoreUse, str]:
    ctx = open_job(
        job,
        interp=prepared.info,
        python=prepared.python,
        backend=backend,
        out=out,
        progress=progress,
        tarball=prepared.source_tarball,
    )
    try:
        ctx.env, ctx.supp = start_env(ctx)
        src = source(ctx)
        if isinstance(src, Unfetched):
            return NO_STORE, "its sdist could not be fetched"
        use = stages.wheel_store(ctx, src, stages.suite_setup(ctx, src), build_own=True)
        return use, "" if use.planned else "no plan (the wheel store is off for it)"
    finally:
        try:
            end_job(ctx)  # logs/ and junit/ sealed, fail-closed: the store job uploads a copy of them
        finally:
            free_job(ctx)  # the venv, sdist and tmp freed, without recursion; the logs stay


def prebuild(
    jobs: Sequence[Job],
    *,
    out: Path,
    backend: Backend,
    prepared: Mapping[str, Prepared],
    progress: Progress = lambda job_id, step: None,
) -> StoreStep:
    """Run every job's plan and build what the store lacks, once; the step's record."""
    started = time.monotonic()
    out = out.resolve()  # the job's paths are said relative to it (JobContext.rel)
    built: dict[str, StoredWheel] = {}
    reused: dict[str, StoredWheel] = {}
    skipped: list[str] = []
    evicted: list[str] = []
    refused: list[str] = []
    failed: list[str] = []
    untrusted: list[str] = []
    reached: list[str] = []
    ran = 0
    for job in jobs:
        p = prepared[job.interpreter.name]
        if job.package.unresolved or p.info.sanitizer == "thread" or not job.settings.wheel_store:
            skipped.append(f"{job.job_id}: {'unresolved' if job.package.unresolved else 'no store'}")
            continue
        if job.skip is not None:  # config.plan.with_skips
            skipped.append(f"{job.job_id}: not run on this Python (recipe registry)")
            continue
        use, why = _one(job, p, backend, out / "store", progress)
        ran += 1
        if why:
            skipped.append(f"{job.job_id}: {why}")
        for w in use.built:
            built.setdefault(f"{p.info.key}/{w.sdist_sha256}", w)
        for w in use.found:
            reused.setdefault(f"{p.info.key}/{w.sdist_sha256}", w)
        evicted += [f"{job.job_id}: {e}" for e in use.evicted]
        refused += [f"{job.job_id}: {r}" for r in use.refused]
        failed += [f"{job.job_id}: {r}" for r in use.failed]
        untrusted += [f"{job.job_id}: {r}" for r in use.untrusted]
        reached += [f"{job.job_id}: {r}" for r in use.limits]
    step = StoreStep(
        jobs=ran,
        built=tuple(built.values()),
        reused=tuple(w for k, w in reused.items() if k not in built),
        not_planned=tuple(skipped),
        seconds=time.monotonic() - started,
        evicted=tuple(evicted),
        refused=tuple(refused),
        failed=tuple(failed),
        untrusted=tuple(untrusted),
        limits=tuple(reached),
    )
    log.info(
        "store step: %d jobs planned, %d built, %d failed, %d reused, %d removed for room, %d not stored "
        "(store_bytes, store_entries_per_job) in %.0f s",
        step.jobs,
        len(step.built),
        len(step.failed),
        len(step.reused),
        len(step.evicted),
        len(step.refused),
        step.seconds,
    )
    return step
