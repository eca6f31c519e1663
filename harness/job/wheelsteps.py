"""A job's side of the wheel store (#34, #56): the ``Port`` through which the store's one verb
(``harness.store.take.take_or_build``: the policy and the mechanism, all in store/) runs its
steps as the job's phases, reads the job's plan and index, and writes the plan's log.

Before the install, ``prepare`` asks the store once; what it returns (``StoreUse``) gives the
install its ``--find-links`` (the store dirs of the plan's sdists, mounted read-only) and says
what the store cost: its seconds, which the job adds to its deadline (the store's time is
charged to the store's own limits, ``store_seconds_per_job`` and ``store_seconds_per_run``),
and the store limits it reached, which go into the job's result. After the install, ``used``
reads back from pip's ``--report`` what the install took from the store.

Each store step is a phase of kind ``wheels`` (no verdict reads it): ``wheel-plan`` (the venv
and pip's dry run, in the job's env, with the network), ``tools-layer`` and ``wheel-<name>-
<version>`` (builds where only a scratch dir is writable, in the harness's own env:
``shared_env``). Each runs to its own limit (``PhaseSpec.own_budget``), never cut to the
job's deadline. The store is off (NO_STORE) with ``settings.wheel_store: false``, under TSan
(its builds need the sanitizer's flags), on a backend with no store, and for a package whose
``env`` points pip at another index (the store's wheels are vouched for by the harness's
index only).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..config import indexclient
from ..core.model import Phase, PhaseKind
from ..core.pipinstalled import PipReport
from ..core.stored import StoredWheel
from ..parse.buildenv import missing_piece
from ..parse.pipreport import parse_pip_report
from ..store.take import NO_STORE, PLAN, PLAN_REPORT, Ran, Step, StoreUse, Want, from_store, take_or_build
from .context import JobCtx, PhaseSpec, run_phase

log = logging.getLogger(__name__)

__all__ = ["KIND", "NO_STORE", "PLAN", "StoreUse", "prepare", "shared_env", "used"]

KIND: PhaseKind = "wheels"  # the store's phases: no verdict reads them (a failed build is built by the install)
# A package's env that sends pip to another index: the store's wheels are vouched for by ours only.
OTHER_INDEX = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX")


def index() -> str:
    """The index the harness reads (and the store's provenance names), without credentials."""
    return indexclient.redact(os.environ.get(indexclient.INDEX_ENV) or indexclient.INDEX_URL)


_PAGES: dict[tuple[str, str], Mapping[str, Any] | str] = {}
_PAGES_LOCK = threading.Lock()


def page(project: str) -> Mapping[str, Any]:
    """The project's page on the harness's index, read once a run (the store checks every
    entry it offers against it); OSError when it cannot be read."""
    key = (index(), project)
    with _PAGES_LOCK:
        got = _PAGES.get(key)
    if got is None:
        try:
            got = indexclient.simple_json(project)
        except (OSError, ValueError) as e:
            got = str(e)[:300] or type(e).__name__
        with _PAGES_LOCK:
            _PAGES[key] = got
    if isinstance(got, str):
        raise OSError(got)
    return got


class JobPort:
    """The store's ``Port`` for one job (harness.store.take.Port)."""

    def __init__(self, ctx: JobCtx, store: Path) -> None:
        self.ctx = ctx
        self.job_id = ctx.job.job_id
        self.store = store
        self.seen = ctx.ws.wheel_store
        self.key = ctx.ws.build_env(ctx.interp.key)
        self.interp_key = ctx.interp.key
        self.index = index()
        self.python = ctx.ws.python
        self.report = ctx.ws.path("logs", PLAN_REPORT)

    def page(self, project: str) -> Mapping[str, Any]:
        return page(project)

    def run(self, step: Step) -> Ran:
        ctx = self.ctx
        out = step.isolated
        phase = run_phase(
            ctx,
            PhaseSpec(
                name=step.name,
                kind=KIND,
                command=step.command,
                env=shared_env(ctx.env, ctx.job.package.env) if out is not None else ctx.env,
                cwd=ctx.backend.isolated_out(out) if out is not None else ctx.ws.root,
                timeout=step.timeout,
                network=True,
                isolated=out,
                own_budget=True,
            ),
        )
        return Ran(ok=phase.ok, timed_out=phase.timed_out, why="" if phase.ok else _why(phase))

    def plan(self) -> PipReport | None:
        return parse_pip_report(self.ctx.fs.read(f"logs/{PLAN_REPORT}", 64 * 1024 * 1024))

    def say(self, lines: Sequence[str]) -> None:
        """The plan's outcome, at the end of its log (through the workspace's handle) and in ours."""
        for line in lines:
            log.info("%s: %s", self.job_id, line.removeprefix("ft-harness: "))
        try:
            fd = self.ctx.fs.open_append(f"logs/{PLAN}.log")
            with os.fdopen(fd, "a", encoding="utf-8") as f:
                f.write("\n" + "\n".join(lines) + "\n")
        except (OSError, ValueError) as e:
            log.warning("%s: cannot append to %s.log: %s", self.job_id, PLAN, e)

    def isolated_out(self, out: Path) -> str:
        return self.ctx.backend.isolated_out(out)


def prepare(
    ctx: JobCtx,
    *,
    venv_sh: str,
    vpy: str,
    requirements: Sequence[str],
    skip: str,
    tools: Sequence[str] = (),
    own_sha256: str = "",
    own_version: str = "",
    build_own: bool = False,
) -> StoreUse:
    """Ask the store once (``take_or_build``) for the venv, the plan and the wheels it needs;
    ``build_own``: the store step's, for a compiled package's own sdist (harness.job.prebuild)."""
    ws, store = ctx.ws, ctx.ws.wheel_host
    if not ctx.job.settings.wheel_store or store is None or not ws.wheel_store or ctx.tsan:
        return NO_STORE
    other = sorted(k for k, _ in dict(ctx.job.package.env).items() if k in OTHER_INDEX)
    if other:
        log.info("%s: the wheel store is off for it: its env sets %s", ctx.job.job_id, ", ".join(other))
        return NO_STORE
    want = Want(
        venv_sh=venv_sh,
        venv=ws.path("venv"),
        seeder=ws.path("inner", "venv_layer.py"),
        vpy=vpy,
        requirements=tuple(requirements),
        skip=skip,
        tools=tuple(tools),
        own_sha256=own_sha256,
        own_env=bool(ctx.job.package.env),
        own_version=own_version,
        build_own=build_own,
        install_timeout=ctx.job.settings.install_timeout,
    )
    use = take_or_build(JobPort(ctx, store), want)
    if use.seconds >= 1:
        log.info("%s: %.0f s in the wheel store, charged to the store's limits", ctx.job.job_id, use.seconds)
    return use


def shared_env(env: Mapping[str, str], package_env: Any) -> dict[str, str]:
    """The env of a step whose output every later job shares (the tools layer, a stored wheel):
    the harness's own values only.  Neither key has the package's ``env`` in it, so one
    package's PIP_INDEX_URL, CFLAGS or PIP_CONSTRAINT must not shape what others copy in (#46);
    no pip cache (--no-cache-dir)."""
    own = dict(package_env)  # the matrix's env: a mapping or its (key, value) pairs
    return {k: v for k, v in env.items() if k != "PIP_CACHE_DIR" and not (k in own and own[k] == v)}


def _why(phase: Phase) -> str:
    """What a failed build of the store lacked, when it says (", " first), else ""."""
    found = None if phase.infra else missing_piece(phase.excerpt)
    return f", {found.cause}" if found else ""


def used(ctx: JobCtx, use: StoreUse) -> tuple[tuple[StoredWheel, ...], tuple[StoredWheel, ...]]:
    """(reused, built): what the install took from the store per its ``--report``, split into
    wheels this job found there and ones it built itself."""
    if not use.planned or not ctx.ws.wheel_store:
        return (), ()
    report = next((p.pip_report for p in ctx.phases if p.name == "install"), None)  # parsed onto it
    taken = from_store(report, ctx.ws.wheel_store, ctx.ws.build_env(ctx.interp.key))
    mine = {w.sdist_sha256 for w in use.built}
    return tuple(w for w in taken if w.sdist_sha256 not in mine), use.built
