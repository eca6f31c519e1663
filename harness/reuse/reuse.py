"""Results of earlier runs reused instead of running a job again (``run --reuse DIR``, #34).

A weekly run of the top N re-tests only what changed, the way crater re-runs only its retry
list: a job is reused when an earlier run (its ``--out`` dir, a shard's artifact, or the dir
``report --keep-results`` wrote) holds a result for the same job id, listed with its sha256 in
that dir's ``manifest.json`` (harness.results.manifest, #46), whose

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
from ..core.errors import SdistUnchecked
from ..core.model import Finding, JobResult
from ..results import manifest
from ..results.load import read_one

log = logging.getLogger(__name__)

Sha256 = Callable[[str, str], str]  # (name, version spec) -> the index's sdist sha256 now


MAX_REFUSED_SHOWN = 20


def _from_dir(d: Path, found: dict[str, tuple[JobResult, str]], conflicts: set[str]) -> list[str]:
    """Add the results ``d``'s manifest lists to ``found``; return the refused files' lines."""
    try:
        listed = manifest.read(d)
    except manifest.BadManifest as e:
        return [str(e)]
    refused: list[str] = []
    results = d / "results"
    for job_id, sha in listed.items():
        res, why = read_one(results / f"{job_id}.json", sha256=sha)
        if res is None:
            refused.append(why)
            continue
        old = found.get(job_id)
        if old is not None and old[0] != res:  # never picked by `finished`: neither is used
            refused.append(
                f"{results / f'{job_id}.json'}: refused: {old[1]} holds another result for this job; neither is reused"
            )
            conflicts.add(job_id)
        elif old is None:
            found[job_id] = (res, str(d))
    try:
        extra = sorted(p for p in results.iterdir() if p.stem not in listed) if results.is_dir() else []
    except OSError as e:
        return [*refused, f"{results}: cannot be listed ({e.strerror})"]
    refused += [f"{p}: refused: not listed in {d / manifest.NAME}" for p in extra]
    return refused


def earlier_results(dirs: Sequence[Path]) -> dict[str, tuple[JobResult, str]]:
    """job id -> (result, the dir it came from), over ``dirs`` (each an earlier run's ``--out``,
    or a ``report --keep-results`` dir): only ``DIR/results/<job id>.json`` files that
    ``DIR/manifest.json`` lists with their sha256 (harness.results.manifest), each read as a new
    result is (types checked).  Every other file there, and every file that fails a check, is
    refused and logged; a job with different results in two dirs is not reused at all."""
    found: dict[str, tuple[JobResult, str]] = {}
    conflicts: set[str] = set()
    refused: list[str] = []
    for d in dirs:
        refused += _from_dir(Path(d), found, conflicts)
    for line in refused[:MAX_REFUSED_SHOWN]:
        log.warning("--reuse: %s", line)
    if len(refused) > MAX_REFUSED_SHOWN:
        log.warning("--reuse: %d more files refused", len(refused) - MAX_REFUSED_SHOWN)
    for job_id in conflicts:
        found.pop(job_id, None)
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
    except SdistUnchecked as e:  # fetch.IndexUnavailable, fetch.NoSdist
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
    findings = tuple(
        next((replace(f, reproduce=o.reproduce, recipe=o.recipe) for o in prev.findings if _same(o, f)), f)
        for f in now.findings
    )
    return replace(
        prev,
        reused_from=where,
        verdict=now.verdict,
        qualifier=now.qualifier,
        findings=findings,
        coverage=now.coverage,
        rules_out=now.rules_out,
    )


def pick(
    todo: Sequence[tuple[Job, str]], earlier: dict[str, tuple[JobResult, str]], sha256: Sha256
) -> tuple[list[tuple[Job, str]], list[JobResult]]:
    """(jobs still to run, results reused for the others).  Each job's decision is its own: an
    earlier result that makes the check or the re-decision fail in any way is one log line, and
    that job runs afresh (the run never stops on an earlier result)."""
    run: list[tuple[Job, str]] = []
    kept: list[JobResult] = []
    for job, key in todo:
        hit = earlier.get(job.job_id)
        try:
            why = "no earlier result" if hit is None else why_not(job, key, hit[0], sha256)
            again = None if why or hit is None else redecided(hit[0], job, hit[1])
        except Exception as e:  # noqa: BLE001 - an untrusted earlier result: this job runs
            log.warning(
                "%s: runs (its earlier result in %s is unusable: %s: %s)",
                job.job_id,
                hit[1] if hit else "?",
                type(e).__name__,
                str(e)[:200],
            )
            run.append((job, key))
            continue
        if again is None:
            log.info("%s: runs (%s)", job.job_id, why)
            run.append((job, key))
            continue
        log.info("%s: reused from %s (same key and sdist)", job.job_id, hit[1] if hit else "?")
        kept.append(again)
    return run, kept
