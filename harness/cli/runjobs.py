"""``ft-harness run`` and ``ft-harness store``: the commands that open a backend on the plan's
jobs (``select_jobs``: the shard, then ``--interpreter`` and ``--package``) and run them: every
job, then the report (harness.cli.reporting); or, before the jobs, the builds of the shared wheel
store (harness.job.prebuild), recorded in ``--out``'s store.json.

Each command loads its input first and imports the heavy modules after, so bad input fails at once.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .. import __version__
from ..core.errors import ConfigError
from ..core.model import now_iso
from ..util import textsafe
from . import outlock
from .reporting import STORE_FILE, feed_inputs, gate, write_report

if TYPE_CHECKING:
    from ..config.estimate import Durations
    from ..config.matrix import MatrixSpec
    from ..config.plan import Job


def _say(line: str) -> None:
    print(line, flush=True)


def select_jobs(spec: MatrixSpec, args: argparse.Namespace, durations: Durations | None = None) -> list[Job]:
    """The plan's jobs that ``--shard``, ``--interpreter`` and ``--package`` leave (``durations``:
    the --durations report's times, which balance the shards)."""
    from ..config import plan, select, sharding

    out = getattr(args, "out", None)
    resolved = getattr(args, "resolved", None) or (Path(out) / "resolved.json" if out else None)
    spec = select.expand_spec(spec, Path(resolved) if resolved else None)
    jobs = plan.make_plan(spec)
    if args.shard:  # shard the whole plan first, so the split is the one `ft-harness plan` prints
        i, n = sharding.parse_shard(args.shard)
        jobs = sharding.shard(jobs, i, n, durations)
    if args.interpreter:
        jobs = [j for j in jobs if j.interpreter.name in args.interpreter]
    if args.package:
        unknown = set(args.package) - {p.name for p in spec.packages}
        if unknown:
            raise ConfigError(f"--package {sorted(unknown)[0]!r} is not in {args.matrix}")
        jobs = [j for j in jobs if j.package.name in args.package]
    return jobs


def _expected(jobs: list[Job], durations: Durations | None) -> dict[str, float]:
    """Each job's expected seconds (estimate.expected_seconds: an earlier run's phases, --durations,
    else the shipped table's measured ones, else the settings' guess): what the ETA counts down."""
    from ..config import estimate

    return {j.job_id: s for j, s in zip(jobs, estimate.expected_seconds(jobs, durations), strict=True)}


KEEP_ENV = "FT_HARNESS_KEEP_WORKSPACES"  # harness.job.job.KEEP_ENV


def _reuse_dirs(given: list[str] | None) -> list[Path]:
    """``--reuse``'s dirs, each checked to be one."""
    for d in given or ():
        if not Path(d).is_dir():
            raise ConfigError(
                "--reuse takes an earlier run's output dir (or a dir written by `report --keep-results`)", file=str(d)
            )
    return [Path(d) for d in given or ()]


def _warn_claims(spec: MatrixSpec) -> None:
    """One line on stderr when the matrix's ``confirm`` cannot hold an ft-race or ft-crash."""
    from ..config.plan import claim_warning

    if claim_warning(spec.settings):
        print(f"ft-harness: warning: {claim_warning(spec.settings)}", file=sys.stderr)


def cmd_run(args: argparse.Namespace) -> int:
    from ..config import matrix
    from ..interpreters import interpreters

    spec = matrix.load(args.matrix)  # bad input fails here, before anything heavy is imported
    _warn_claims(spec)  # said at the start: a run of hours that can hold no claim
    os.environ[KEEP_ENV] = "1" if args.keep_workspaces else ""  # harness.job.job reads it at each result
    from .. import backends
    from ..config import estimate, plan
    from ..job.runner import run_plan
    from . import progress

    durations = estimate.durations_from_report(Path(args.durations)) if args.durations else None
    reported = feed_inputs(args.reported, None)[0]  # reported.yaml: checked before any job
    jobs = select_jobs(spec, args, durations)
    out = Path(args.out)
    reuse_from = _reuse_dirs(args.reuse)
    cache = interpreters.cache_root(args.cache)
    backend_name, note = backends.choose(args.backend)
    if note:
        print(f"ft-harness: {note}", file=sys.stderr)
    if backend_name == "local" and jobs:  # said once, plainly (issue #17)
        print(
            "ft-harness: the local backend runs every package's build and tests as you, with "
            "your files and network: no isolation (use --backend docker for packages you do "
            "not trust)",
            file=sys.stderr,
        )
    with outlock.hold(out):  # a second run on this --out would remove this one's workspaces
        opened = backends.open_backend(
            backend_name,
            jobs,
            cache=cache,
            run_id=f"{int(time.time())}-{os.getpid()}",
            workers=args.jobs,
            say=_say,
            heartbeat=progress.heartbeat,
        )
        jobs = plan.with_skips(jobs, {n: p.info.version for n, p in opened.prepared.items()})
        summary = run_plan(
            jobs,
            out=out,
            backend=opened.backend,
            prepared=opened.prepared,
            workers=args.jobs,
            force=args.force,
            reporter=progress.make_reporter(_expected(jobs, durations), args.jobs),
            reuse_from=reuse_from,
        )
        print(
            f"{len(summary.ran)} jobs ran, {len(summary.skipped)} reused from {out / 'results'}"
            + (f", {len(summary.reused)} from --reuse" if reuse_from else "")
        )
        meta = {
            "harness_version": __version__,
            "matrix": str(args.matrix),
            "matrix_digest": spec.digest,
            "started": summary.started,
            "finished": summary.finished,
            "backend": backend_name,
            "shard": args.shard or "",
        }
        # a shard's report is partial: the step summary is the merged report's alone
        # out/manifest.json lists the results of out/results/ for a later `run --reuse out` (#46)
        report = write_report(
            [out],
            out,
            meta=meta,
            previous=None,
            expected=[j.job_id for j in jobs],
            step_summary=not args.shard,
            keep=out,
            feed_in=(reported, None),  # the previous feed: the findings.json of --out, from an earlier run
        )
    from ..results import storecost

    print(f"ft-harness: {storecost.line(report.meta.extra.get('store') or {})}")
    return gate(report, args.fail_on)


def cmd_store(args: argparse.Namespace) -> int:
    """The store step before the jobs (harness.job.prebuild): its record in DIR/store.json."""
    import json

    from ..config import matrix, plan
    from ..interpreters import interpreters

    spec = matrix.load(args.matrix)
    from .. import backends
    from ..core.stored import store_root
    from ..job.prebuild import prebuild
    from ..job.runner import stopped_by_signals
    from . import progress

    jobs = select_jobs(spec, args)
    out = Path(args.out)
    cache = interpreters.cache_root(args.cache)
    backend_name, note = backends.choose(args.backend)
    if note:
        print(f"ft-harness: {note}", file=sys.stderr)
    with outlock.hold(out):
        opened = backends.open_backend(
            backend_name,
            jobs,
            cache=cache,
            run_id=f"{int(time.time())}-{os.getpid()}",
            workers=1,
            say=_say,
            heartbeat=progress.heartbeat,
        )
        started = now_iso()
        jobs = plan.with_skips(jobs, {n: p.info.version for n, p in opened.prepared.items()})
        kept = f"the wheels built so far stay in {store_root(cache, backend_name)}; rerun to build the rest"
        with stopped_by_signals(opened.backend, kept):
            step = prebuild(
                jobs,
                out=out,
                backend=opened.backend,
                prepared=opened.prepared,
                progress=lambda job_id, what: _say(f"store: {job_id}: {what}"),
            )
        record = {
            "schema": 1,
            "started": started,
            "finished": now_iso(),
            "backend": backend_name,
            "store": str(store_root(cache, backend_name)),
            **step.to_dict(),
        }
        tmp = out / f".{STORE_FILE}.tmp"
        tmp.write_text(json.dumps(record, indent=1) + "\n")
        os.replace(tmp, out / STORE_FILE)
    _say(
        f"wheel store step: {step.jobs} plans, {len(step.built)} built, {len(step.failed)} failed, {len(step.reused)} already "
        f"stored, in {step.seconds:.0f} s (each build's own limit {step.limit} s); {out / STORE_FILE}"
    )
    for line in step.not_planned:
        _say(f"  not planned: {textsafe.line(line)}")
    for line in step.evicted:  # store_bytes: the least recently used entries, removed for room
        _say(f"  removed for room (store_bytes): {textsafe.line(line)}")
    for line in step.refused:
        _say(f"  not stored: {textsafe.line(line)}")
    for line in step.failed:  # the jobs that need it build it themselves, in their budget
        _say(f"  not built: {textsafe.line(line)}")
    return 0
