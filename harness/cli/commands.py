"""The subcommands that run no job: ``plan`` (the jobs of a matrix, in shards), ``build`` and
``image`` (the interpreters and docker images a run needs, made ahead of it) and ``clean`` (what
runs left in the docker engine).  The others: harness.cli.runjobs (run, store),
harness.cli.reporting (report, diff) and harness.cli.reproduce.

Each takes the parsed arguments and returns an exit code.  With ``__main__`` (the parser, errors
to exit codes), ``cliargs`` (the subcommands' options) and ``progress`` (a run's live lines)
these are the command line, the only code that prints.  Each command loads its input first and
imports the heavy modules after, so bad input fails at once.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import ConfigError, InfraError
from ..util import textsafe

if TYPE_CHECKING:
    from ..config.estimate import Durations
    from ..config.plan import Job


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
    from ..testsetup.suitesetup import planned_skips

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
    if plan.claim_warning(spec.settings):  # a warning, not an error: the plan is still made
        print(f"warning: {plan.claim_warning(spec.settings)}", file=sys.stderr)
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


AUTO = 0  # --shards auto (harness.cli.cliargs parses "auto" to it)


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
