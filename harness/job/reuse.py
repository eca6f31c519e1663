"""Results of earlier runs reused instead of running a job again (``run --reuse DIR``, #34).

A weekly run of the top N re-tests only what changed, the way crater re-runs only its retry
list: a job is reused when an earlier run (a ``--out`` dir, a shard's artifact, a results dir)
holds a result for the same job id whose

* key is equal -- matrix entry (package, exact version spec), interpreter build, settings and
  the version of the harness's test phases (``plan.PHASES_VERSION``): ``Job.key``;
* sdist is the one the index serves for that version now (its sha256, asked again: a release
  whose files were replaced is tested again);
* verdict is not ``infra-error`` (the harness's failure is never kept).

A local package is never reused from another run (its tree is not in the key); resuming a run
into its own ``--out`` is unchanged (``runner.existing_result``).  A reused result is written
into the new run's results with ``reused_from`` naming where it came from, and its verdict is
decided again from its stored phases (``verdict.decide`` is pure over them): when only the
verdict rules changed, the verdict follows the new rules without running anything.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from .. import verdict
from ..config.plan import Job
from ..core.model import Finding, JobResult
from ..results.load import read_one
from . import fetch

log = logging.getLogger(__name__)

Sha256 = Callable[[str, str], str]  # (name, version spec) -> the index's sdist sha256 now


def earlier_results(dirs: Sequence[Path]) -> dict[str, tuple[JobResult, str]]:
    """job id -> (result, the dir it came from), over ``dirs`` (each a run's ``--out``, a
    results dir or a dir of shards' artifacts); a file that cannot be read is logged and
    skipped; of one job id in several places, the one that finished last."""
    found: dict[str, tuple[JobResult, str]] = {}
    for d in dirs:
        d = Path(d)
        files = sorted((d / "results").glob("*.json")) if (d / "results").is_dir() else \
            sorted(d.rglob("results/*.json")) or sorted(d.glob("*.json"))
        for f in files:
            res, why = read_one(f)
            if res is None:
                log.warning("--reuse: %s", why)
                continue
            old = found.get(res.job_id)
            if old is None or res.finished > old[0].finished:
                found[res.job_id] = (res, str(d))
    return found


def why_not(job: Job, key: str, prev: JobResult, sha256: Sha256) -> str:
    """'' when ``prev`` may stand for ``job`` now, else why it may not (one phrase)."""
    if prev.key != key:
        return "its key differs (version spec, interpreter build, settings or test phases)"
    if prev.verdict == "infra-error":
        return "it was an infra-error"
    if job.package.is_local:
        return "a local package is never reused from another run"
    if not prev.sdist_sha256:
        return "it records no sdist sha256"
    try:
        now = sha256(job.package.name, job.package.version)
    except (fetch.IndexUnavailable, fetch.NoSdist) as e:
        return f"the index's sdist could not be checked ({e})"
    if now != prev.sdist_sha256:
        return f"the index's sdist is another file now (sha256 {now[:12]}…, was {prev.sdist_sha256[:12]}…)"
    return ""


def _same(a: Finding, b: Finding) -> bool:
    return (a.kind, a.test_id, a.phase, a.modes) == (b.kind, b.test_id, b.phase, b.modes)


def redecided(prev: JobResult, job: Job, where: str) -> JobResult:
    """``prev`` as the new run's result: marked reused, its verdict decided again from its
    phases.  A finding the earlier rules made too keeps its reproduce line and recipe (written
    where that run ran); a new one keeps the phase's own command."""
    if prev.verdict == "skipped" or not prev.phases:  # decided without phases (registry, no release)
        return replace(prev, reused_from=where)
    now = verdict.decide(prev.phases, settings=job.settings)
    findings = tuple(next((replace(f, reproduce=o.reproduce, recipe=o.recipe)
                           for o in prev.findings if _same(o, f)), f) for f in now.findings)
    return replace(prev, reused_from=where, verdict=now.verdict, qualifier=now.qualifier,
                   findings=findings, coverage=now.coverage, rules_out=now.rules_out)


def pick(todo: Sequence[tuple[Job, str]], earlier: dict[str, tuple[JobResult, str]],
         sha256: Sha256 = fetch.sdist_sha256) -> tuple[list[tuple[Job, str]], list[JobResult]]:
    """(jobs still to run, results reused for the others)."""
    run: list[tuple[Job, str]] = []
    kept: list[JobResult] = []
    for job, key in todo:
        hit = earlier.get(job.job_id)
        why = "no earlier result" if hit is None else why_not(job, key, hit[0], sha256)
        if why or hit is None:
            log.info("%s: runs (%s)", job.job_id, why)
            run.append((job, key))
            continue
        log.info("%s: reused from %s (same key and sdist)", job.job_id, hit[1])
        kept.append(redecided(hit[0], job, hit[1]))
    return run, kept
