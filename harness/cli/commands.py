"""The subcommands: each takes the parsed arguments and returns an exit code.

With ``__main__`` (the parser, errors to exit codes) and ``progress`` (a run's live
lines) this is the command line, the only code that prints.  Each command loads its
input first and imports the heavy modules after, so bad input fails at once.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..core.errors import ConfigError, InfraError, RegressionError
from ..core.model import VERDICTS, now_iso
from ..util import textsafe
from . import outlock

if TYPE_CHECKING:
    from ..config.estimate import Durations
    from ..config.matrix import MatrixSpec
    from ..config.plan import Job
    from ..results.report import CompatReport


def _say(line: str) -> None:
    print(line, flush=True)


STORE_FILE = "store.json"  # what `ft-harness store` did before the jobs (harness.job.prebuild), in --out


# ----------------------------------------------------------------------------- run


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


def cmd_run(args: argparse.Namespace) -> int:
    from ..config import matrix
    from ..interpreters import interpreters

    spec = matrix.load(args.matrix)  # bad input fails here, before anything heavy is imported
    from .. import backends
    from ..config import estimate, plan
    from ..job.runner import run_plan
    from . import progress

    durations = estimate.durations_from_report(Path(args.durations)) if args.durations else None
    jobs = select_jobs(spec, args, durations)
    out = Path(args.out)
    reuse_from = [Path(d) for d in args.reuse or ()]
    for d in reuse_from:
        if not d.is_dir():
            raise ConfigError(
                "--reuse takes an earlier run's output dir (or a dir written by `report --keep-results`)", file=str(d)
            )
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
        f"wheel store step: {step.jobs} plans, {len(step.built)} built, {len(step.reused)} already "
        f"stored, in {step.seconds:.0f} s (each build's own limit {step.limit} s); {out / STORE_FILE}"
    )
    for line in step.not_planned:
        _say(f"  not planned: {textsafe.line(line)}")
    for line in step.evicted:  # store_bytes: the least recently used entries, removed for room
        _say(f"  removed for room (store_bytes): {textsafe.line(line)}")
    for line in step.refused:
        _say(f"  not stored: {textsafe.line(line)}")
    return 0


# ----------------------------------------------------------------------------- report


def write_report(
    dirs: list[Path],
    out: Path,
    *,
    meta: dict[str, Any],
    previous: Path | None,
    expected: list[str] | None,
    history: Path | None = None,
    require_results: bool = False,
    step_summary: bool = True,
    site_url: str = "",
    planned: Sequence[Job] | None = None,
    keep: Path | None = None,
) -> CompatReport:
    """Aggregate the result files of ``dirs`` and render every report into ``out``; with
    ``planned`` (the plan's jobs), only the results that belong to one of them; with ``keep``,
    the merged result files copied into ``keep/results/`` and listed in ``keep/manifest.json``
    (harness.results.manifest: what ``run --reuse`` accepts)."""
    from .. import render
    from ..results import aggregate, manifest
    from ..results.load import load_json, load_results, read_report, stray_results

    sources: dict[str, tuple[Path, str]] = {}
    results, problems = load_results(dirs, sources=sources)
    for p in problems:
        print(f"ft-harness: skipped {textsafe.line(p)}", file=sys.stderr)  # names a file in a results dir
    merging = [d for d in dirs if Path(d).resolve() != out.resolve()]  # shards' artifacts
    for p in stray_results(merging):  # planted in a workspace's logs: never read, listed
        print(f"ft-harness: {textsafe.line(p)}", file=sys.stderr)
    if planned is not None:
        from ..config.plan import in_plan

        results, refused = in_plan(results, planned)
        for line in refused:  # listed, never merged: a shard's artifact is not trusted
            print(f"ft-harness: {textsafe.line(line)}", file=sys.stderr)
    if keep is not None:
        try:
            for line in manifest.keep(sources, [r.job_id for r in results], keep):
                print(f"ft-harness: {textsafe.line(line)}", file=sys.stderr)
        except OSError as e:
            raise InfraError(f"cannot keep the results in {keep}: {e.strerror or e}") from None
    if require_results and not results:
        where = ", ".join(str(d) for d in dirs)
        why = f"{len(problems)} result file(s) skipped as invalid" if problems else "no results/*.json"
        raise ConfigError(f"no valid result to report in {where} ({why})")
    prev = read_report(previous, "old") if previous else None
    from ..results import storecost  # the store's cost and reuse (#43)

    before = load_json(out / STORE_FILE) if (out / STORE_FILE).is_file() else None
    meta = {**meta, "store": storecost.summary(results, before if isinstance(before, dict) else None)}
    report = aggregate.build_report(results, meta=meta, previous=prev, expected_jobs=expected)
    hist = load_json(history) if history else None
    try:
        if any(Path(d).resolve() != out.resolve() for d in dirs):
            aggregate.copy_logs(report, dirs, out)  # merged shards: the site links to logs under out/
        written = render.write_all(report, out, history=hist, step_summary=step_summary, site_url=site_url)
    except OSError as e:
        if e.errno in NO_SPACE:  # the disk, not the input: exit 4, one line
            raise InfraError(
                f"no space left to write the report in {out} ({e.strerror}); "
                "free some and run `ft-harness report` again"
            ) from None
        raise
    for path in written:
        if path.name in ("report.md", "report.json", "index.html", "junit.xml"):
            print(f"wrote {path}")
    summary = ", ".join(f"{n} {v}" for v, n in report.summary.items() if n)
    across = (
        (f" ({len(report.table)} packages on {len(report.interpreters)} interpreters, {len(report.packages)} jobs)")
        if report.several
        else ""
    )
    print(f"summary: {summary or 'no packages'}{across}")
    for row in report.table:
        if row.across:
            print(textsafe.line(f"  {row.name}: {row.across}"))  # from result files
    if report.missing:
        print(textsafe.line(f"missing results: {', '.join(report.missing)}"), file=sys.stderr)
    return report


NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # a full disk, a quota, a file-size limit


def gate(report: CompatReport, fail_on: str | None) -> int:
    """0, or RegressionError (exit 1) when a package's verdict is one of ``--fail-on``."""
    if not fail_on:
        return 0
    wanted = {v.strip() for v in fail_on.split(",") if v.strip()}
    bad = wanted - set(VERDICTS)
    if bad:
        raise ConfigError(f"--fail-on: unknown verdict {sorted(bad)[0]!r} (one of {', '.join(VERDICTS)})")
    hit = [p for p in report.packages if p.verdict in wanted]
    if hit:
        names = textsafe.line(", ".join(f"{p.name} ({p.verdict})" for p in hit))
        raise RegressionError(f"--fail-on matched: {names}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    now = now_iso()
    meta: dict[str, Any] = {
        "harness_version": __version__,
        "started": now,
        "finished": now,
        "backend": "",
        "sources": [str(d) for d in args.dirs],
    }
    out = Path(args.out) if args.out else Path(args.dirs[0])
    expected = planned = None
    if args.matrix:  # the plan: its jobs without a result are missing, results of no job of it refused
        from ..config import matrix, plan, select

        resolved = Path(args.resolved) if args.resolved else None
        spec = select.expand_spec(matrix.load(args.matrix), resolved)
        planned = plan.make_plan(spec)
        expected = [j.job_id for j in planned]
        meta["matrix"], meta["matrix_digest"] = str(args.matrix), spec.digest
    report = write_report(
        [Path(d) for d in args.dirs],
        out,
        meta=meta,
        previous=Path(args.previous) if args.previous else None,
        expected=expected,
        planned=planned,
        history=Path(args.history) if args.history else None,
        require_results=True,
        site_url=args.site_url or "",
        keep=Path(args.keep_results) if args.keep_results else None,
    )
    return gate(report, args.fail_on)


def cmd_diff(args: argparse.Namespace) -> int:
    from ..results import diff
    from ..results.load import read_report

    old = read_report(Path(args.old), "old")
    new = read_report(Path(args.new), "new")
    changes = diff.diff_reports(old, new)
    print(diff.format_changes(changes))
    return 1 if diff.has_regression(changes) else 0


# ----------------------------------------------------------------------------- the rest


def cmd_build(args: argparse.Namespace) -> int:
    from ..config import matrix
    from ..interpreters import interpreters
    from . import progress

    spec = matrix.load(args.matrix)
    cache = interpreters.cache_root(args.cache)
    for interp in spec.interpreters:
        if args.interpreter and interp.name not in args.interpreter:
            continue
        t0 = time.monotonic()
        built = interpreters.ensure_built(interp, cache, heartbeat=progress.heartbeat)
        state = built.state if built.cache_hit else f"built in {time.monotonic() - t0:.0f}s"
        print(f"{interp.name}: {state}: {built.python}")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from ..config import estimate, matrix, plan, plantext, select, sharding
    from ..testsetup.decide import planned_skips

    raw = matrix.load(args.matrix)
    spec = select.expand_spec(raw, Path(args.resolved) if args.resolved else None)
    if raw.selectors:
        named = {p.name for p in raw.packages}
        picked = [p for p in spec.packages if p.name not in named or p.unresolved]
        if not any(not p.unresolved for p in picked):  # nothing to test: not a plan
            why = next((p.unresolved for p in picked if p.unresolved), "it selected no project")
            raise ConfigError(
                f"no `top:` entry could be resolved ({len(picked)} tried; {textsafe.line(why)[:200]})",
                file=str(args.matrix),
            )
    for interp, why in plan.missing_installed(spec):  # before planning: `run` would refuse it (#44)
        if not getattr(args, "installed_elsewhere", False):
            raise interp.fail(
                f".source python:{interp.source.name or interp.source.path}: {why} "
                "(install it, or pass --installed-elsewhere when the machines that "
                "run the jobs have it)"
            )
        print(
            f"note: {interp.name}: {why} here; not checked (--installed-elsewhere): the machines "
            "that run its jobs must have it",
            file=sys.stderr,
        )
    jobs = plan.make_plan(spec)
    durations = estimate.durations_from_report(Path(args.durations)) if args.durations else None
    shards = args.shards
    if shards == AUTO:
        shards = sharding.shards_to_fit(jobs, durations, args.shard_limit)
        print(
            f"--shards auto: {shards} shard(s), each expected under {sharding.MARGIN:.0%} of "
            f"{args.shard_limit:g} min ({estimate.estimate_note(jobs, durations)})",
            file=sys.stderr,
        )
    print(plantext.render_plan(jobs, fmt=args.format, shards=shards, durations=durations))
    for line in planned_skips(jobs):  # the recipe registry's skip_versions: no run
        print(textsafe.line(line), file=sys.stdout if args.format == "table" else sys.stderr)
    if args.format == "table":
        print(_wall_line(jobs, shards, durations, args.jobs))
        if raw.selectors:  # the versions a `top:` selector picked, for a person to read
            print("\nresolved versions:")
            for p in spec.packages:
                print(
                    textsafe.line(
                        f"  {p.name} {p.version or p.path or ''}"
                        + (f"  (unresolved: {p.unresolved})" if p.unresolved else "")
                    )
                )
    if raw.selectors:
        print(
            f"resolved versions written to {args.resolved}"
            if args.resolved
            else "resolved versions not kept (pass --resolved FILE to keep them for every shard)",
            file=sys.stderr,
        )
    for warning in sharding.over_limit(jobs, shards, durations, args.shard_limit):
        print(f"warning: {warning}", file=sys.stderr)
    return 0


AUTO = 0  # --shards auto (harness.__main__ parses "auto" to it)


def _wall_line(jobs: list[Job], shards: int, durations: Durations | None, workers: int) -> str:
    """The longest shard's expected wall time at `run --jobs N` (jobs sharing the cores)."""
    from ..config import estimate, sharding

    per: dict[int, list[float]] = {}
    for s, c in zip(sharding.assign(jobs, shards, durations), estimate.expected_seconds(jobs, durations), strict=True):
        per.setdefault(s, []).append(c)
    serial = max((sum(c) for c in per.values()), default=0.0)
    ideal = max((max(sum(c) / workers, max(c)) for c in per.values()), default=0.0)
    if workers == 1:
        return f"at --jobs 1: ~{serial / 60:.1f} min" + (" a shard" if shards > 1 else "")
    return (
        f"at --jobs {workers}: ~{ideal / 60:.1f} min to {serial / 60:.1f} min"
        + (" a shard" if shards > 1 else "")
        + " (each job's plain runs already use every "
        "core, so jobs at once overlap only in part)"
    )


def cmd_image(args: argparse.Namespace) -> int:
    from ..config import matrix
    from ..interpreters import images, interpreters
    from . import progress

    spec = matrix.load(args.matrix)
    cache = interpreters.cache_root(args.cache)
    client = images.docker_client()
    base = images.ensure_base(client, cache, heartbeat=progress.heartbeat)
    print(f"base image {base.tag}: {'reused' if base.reused else 'built'}")
    for interp in spec.interpreters:
        if not interp.source.builds:  # mounted, not built: the image it is mounted into
            from ..interpreters.dockerpython import ensure_runtime_image

            ref = ensure_runtime_image(client, cache, heartbeat=progress.heartbeat)
            print(
                f"runtime image {ref.tag}: {'reused' if ref.reused else 'built'} (for "
                f"{interp.name}: {interp.source.describe()} is mounted into it read-only and "
                "checked there when a run starts)"
            )
            continue
        ref = images.ensure_interpreter_image(client, interp, cache, heartbeat=progress.heartbeat)
        print(
            f"interpreter image {ref.tag}: {'reused' if ref.reused else 'built'}"
            f" (CPython {ref.info.full_version if ref.info else interp.version})"
        )
    return 0


def cmd_clean(args: argparse.Namespace) -> int:
    from ..backends.docker import clean_caches
    from ..interpreters import images

    try:
        client = images.docker_client()
    except InfraError as e:  # one line, without the SDK's exception text
        if not str(e).startswith("docker daemon is not answering"):
            raise
        where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        raise InfraError(
            f"docker daemon is not answering at {where}: nothing to clean "
            "(containers and volumes live in the engine; start it and rerun)"
        ) from None
    removed = images.clean(client, None) + clean_caches(client)  # the jobs' pip caches too
    print(f"removed {len(removed)} leftover containers/volumes" + (": " + ", ".join(removed) if removed else ""))
    return 0
