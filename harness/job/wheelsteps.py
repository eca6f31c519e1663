"""The wheel store's steps of a job (#34; the store itself: harness.store.wheelstore).

Before the install: ``wheel-plan`` makes the venv and asks pip, in a dry run with the network
(the install's own isolation: its workspace, its pip cache), what it would install for the
same requirements; then each sdist of that plan the store lacks is built in a ``wheel-<name>-
<version>`` phase of its own (``Backend.run_isolated``: nothing writable but its output dir),
and published by the host. The install gets ``--find-links`` of the store dirs of the plan's
sdists (``StoreUse.find_links``), mounted read-only; what pip took from there is read back
from its ``--report`` (``used``). The plan's log ends with one line per sdist: in the store
already, built now, or left to the install (its build failed: the install builds it again, and
its log is the evidence). What one job adds to the store, and what the store holds, is bounded
(harness.store.storecap: ``store_entries_per_job``, ``store_bytes``); a removal or a refusal is a
line of that log too.

A build of the store is not charged to the job's budget (#43): it has its own limit
(``wheelstore.BUILD_TIMEOUT``), and the time it took, or the time this job waited on another
job building the same sdist, is given back to the job's deadline (``uncharged``). numpy's
source build (over 20 minutes on 2 cores) then costs its dependents nothing but the wait. The
dry run is the store's time too: pip builds an sdist whose backend has no metadata hook
(meson-python: numpy) to learn its requirements. So the dry run is offered the store's wheels
(``--find-links`` of its complete entries): a dependency stored before is read from its wheel,
and a wheel the plan took from the store is the install's too. The store and pip's cache are
keyed by the build environment (``Workspace.build_env``: on docker the image's tag).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shlex
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name, parse_wheel_filename

from ..core import limits
from ..core.model import Phase, PhaseKind
from ..core.stored import StoredWheel
from ..parse.buildenv import missing_piece
from ..parse.pipreport import parse_pip_report
from ..store import storecap, toolslayer, wheelstore
from ..store.wheelstore import PLAN_REPORT, Sdist
from .context import JobCtx, PhaseSpec, run_phase

log = logging.getLogger(__name__)

PLAN = "wheel-plan"  # the dry run's phase; the builds are "wheel-<name>-<version>"
KIND: PhaseKind = "wheels"  # their Phase.kind: no verdict reads them (a failed build is built by the install)


@dataclass(frozen=True, kw_only=True)
class StoreUse:
    """What the store gives one job's install."""

    planned: bool = False  # the wheel-plan phase ran (and made the venv)
    find_links: tuple[str, ...] = ()  # the store dirs of the plan's sdists, as the backend sees them
    built: tuple[StoredWheel, ...] = ()  # built by this job's own isolated steps, now in the store
    found: tuple[StoredWheel, ...] = ()  # in the store before this job
    tools_layer: str = ""  # the venv's pip and test tools: "built <digest>" / "reused <digest>" (toolslayer)
    evicted: tuple[str, ...] = ()  # entries removed to make room for this job's (storecap: store_bytes)
    refused: tuple[str, ...] = ()  # "<name> <version>: why" not stored (store_bytes, store_entries_per_job)
    failed: tuple[str, ...] = ()  # "<name> <version>: why" its build failed (the install builds it itself)


NO_STORE = StoreUse()


@dataclass(kw_only=True)
class _Tally:
    """What one job did to the store so far (its bounds: harness.store.storecap)."""

    lines: list[str] = field(default_factory=list)  # the plan log's lines
    added: int = 0  # entries this job put in the store (store_entries_per_job)
    built: list[StoredWheel] = field(default_factory=list)
    found: list[StoredWheel] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def use(self, *, planned: bool, tools_layer: str, links: Sequence[str] = ()) -> StoreUse:
        return StoreUse(
            planned=planned,
            find_links=tuple(links),
            built=tuple(self.built),
            found=tuple(self.found),
            tools_layer=tools_layer,
            evicted=tuple(self.evicted),
            refused=tuple(self.refused),
            failed=tuple(self.failed),
        )

    def room(self, store: Path) -> storecap.Room:
        return storecap.Room(root=store, removed=self.evicted)


def prepare(
    ctx: JobCtx,
    *,
    venv_sh: str,
    vpy: str,
    requirements: Sequence[str],
    skip: str,
    tools: Sequence[str] = (),
    own_sha256: str = "",
) -> StoreUse:
    """The venv (from the store's layer of ``tools`` when it has or can build one), the dry run,
    then each missing sdist built into the store. Off (NO_STORE) with ``settings.wheel_store:
    false``, under TSan (its builds need the sanitizer's flags), or on a backend with no store.
    The package itself (``skip``) is never built here; ``own_sha256``: its sdist, the one the
    host fetched and checked, whose wheel the store may hold already (``_own``)."""
    ws, store = ctx.ws, ctx.ws.wheel_host
    if not ctx.job.settings.wheel_store or store is None or not ws.wheel_store or ctx.tsan:
        return NO_STORE
    tally = _Tally()
    layer, used_layer = _tools_layer(ctx, store, tools, tally) if tools else ("", "")
    if layer:
        venv_sh = toolslayer.seed_sh(ws.python, ws.path("venv"), ws.path("inner", "venv_layer.py"), layer)
    if not [r for r in requirements if r not in tools]:  # the tools are wheels: no sdist to plan
        return _venv_only(ctx, venv_sh, tally, used_layer, own_sha256)
    key = ws.build_env(ctx.interp.key)
    if not _dry_run(ctx, store, key, venv_sh=venv_sh, vpy=vpy, requirements=requirements).ok:
        _say(ctx, [*tally.lines, "ft-harness: no plan; the install builds whatever it needs itself"])
        return tally.use(planned=True, tools_layer=used_layer)
    report = parse_pip_report(ctx.fs.read(f"logs/{PLAN_REPORT}", 64 * 1024 * 1024))  # parsed once, read twice
    links = []
    for w in wheelstore.from_store(report, ws.wheel_store, key):  # the plan took it from the store
        if w.name != canonicalize_name(skip) and wheelstore.stored(store, key, w.sdist_sha256) == w.wheel:
            storecap.touch(wheelstore.entry(store, key, w.sdist_sha256))  # used now: the last to be evicted
            tally.found.append(w)
            tally.lines.append(f"ft-harness: wheel store: reused {w.wheel} (sdist sha256 {w.sdist_sha256})")
            links.append(f"{ws.wheel_store}/{key}/{w.sdist_sha256}")
    links += [
        f"{ws.wheel_store}/{key}/{sd.sha256}"
        for sd in wheelstore.to_build(report, skip=skip)
        if _one(ctx, store, sd, tally)
    ]
    links += _own(ctx, store, key, own_sha256, tally)
    if not links:
        tally.lines.append("ft-harness: wheel store: the install builds no sdist")
    _say(ctx, tally.lines)
    return tally.use(planned=True, tools_layer=used_layer, links=links)


def _own(ctx: JobCtx, store: Path, key: str, sha256: str, tally: _Tally) -> list[str]:
    """The store's dir of the package's own sdist, when another job's plan had it built there
    (numpy for pandas, scipy for scikit-learn): the same file (by sha256), built by the same
    isolated step in the same build environment as every stored wheel, so the install takes it
    instead of building the package again inside the job's install budget (scipy: 18 minutes on
    2 cores). Not when the package sets an ``env`` of its own: a stored build never has it
    (``shared_env``). Not stored: the install builds it, and its log is the build's evidence."""
    if not sha256 or ctx.job.package.env:
        return []
    with uncharged(ctx), wheelstore.lock(store, key, sha256):  # another job building it: wait for it
        wheel = wheelstore.stored(store, key, sha256)
        if not wheel:
            return []
        storecap.touch(wheelstore.entry(store, key, sha256))  # used now: the last to be evicted
    name, version, *_ = parse_wheel_filename(wheel)
    tally.found.append(StoredWheel(name=str(name), version=str(version), sdist_sha256=sha256, wheel=wheel))
    tally.lines.append(
        f"ft-harness: wheel store: the package itself from {wheel} (its sdist, sha256 {sha256}, built there "
        "for another job); the install does not build it"
    )
    return [f"{ctx.ws.wheel_store}/{key}/{sha256}"]


def _venv_only(ctx: JobCtx, venv_sh: str, tally: _Tally, used_layer: str, own_sha256: str) -> StoreUse:
    """The wheel-plan phase when the requirements are the test tools alone (wheels): the venv
    made, nothing to plan (the package itself may be in the store: ``_own``)."""
    phase = run_phase(
        ctx,
        PhaseSpec(
            name=PLAN,
            kind=KIND,
            command=["sh", "-c", venv_sh],
            env=ctx.env,
            cwd=ctx.ws.root,
            timeout=ctx.job.settings.install_timeout,
        ),
    )
    store = ctx.ws.wheel_host
    own = _own(ctx, store, ctx.ws.build_env(ctx.interp.key), own_sha256, tally) if phase.ok and store else []
    what = "takes the package from the store" if own else "builds only the package"
    _say(
        ctx,
        [
            *tally.lines,
            "ft-harness: wheel store: nothing to plan (no requirement but the "
            f"test tools, which are wheels); the install {what}",
        ],
    )
    return tally.use(planned=phase.ok, tools_layer=used_layer, links=own)


def _dry_run(ctx: JobCtx, store: Path, key: str, *, venv_sh: str, vpy: str, requirements: Sequence[str]) -> Phase:
    """The wheel-plan phase: the venv, then pip's dry run of ``requirements`` with its
    ``--report``, off the job's budget (``uncharged``)."""
    ws = ctx.ws
    # the store's wheels offered to the plan: a dependency stored before (numpy, for pandas) is
    # read from its wheel, not built again by pip to learn its metadata (#43)
    offered = [a for sha in wheelstore.complete(store, key) for a in ("--find-links", f"{ws.wheel_store}/{key}/{sha}")]
    pip = shlex.join(
        [
            vpy,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--quiet",
            "--report",
            ws.path("logs", PLAN_REPORT),
            *offered,
            *requirements,
        ]
    )
    # the store's time too: an sdist whose build backend has no metadata hook (meson-python:
    # numpy) is built whole by pip to learn its requirements, 20+ minutes for numpy on 2 cores
    with uncharged(ctx):
        return run_phase(
            ctx,
            PhaseSpec(
                name=PLAN,
                kind=KIND,
                command=["sh", "-c", f"{venv_sh} && {pip}"],
                env=ctx.env,
                cwd=ws.root,
                timeout=wheelstore.BUILD_TIMEOUT,
                network=True,
            ),
        )


def _one(ctx: JobCtx, store: Path, sd: Sdist, tally: _Tally) -> bool:
    """One sdist of the plan: in the store already (taken: used now), or built into it now
    while the job has added fewer than ``store_entries_per_job`` entries; False: not stored."""
    key, cap = ctx.ws.build_env(ctx.interp.key), limits.value("store_entries_per_job")
    with uncharged(ctx), wheelstore.lock(store, key, sd.sha256):  # another job building it: wait, reuse
        wheel = wheelstore.stored(store, key, sd.sha256)
        if wheel:
            storecap.touch(wheelstore.entry(store, key, sd.sha256))  # used now: the last to be evicted
            tally.found.append(sd.stored(wheel))
            tally.lines.append(f"ft-harness: wheel store: reused {wheel} (sdist sha256 {sd.sha256})")
            return True
        gone = len(tally.evicted)
        got, why = (
            (None, storecap.entry_cap_note(tally.added)) if tally.added >= cap else _build(ctx, store, key, sd, tally)
        )
        tally.lines += [
            f"ft-harness: wheel store: removed {e} to make room (store_bytes: the least recently used first)"
            for e in tally.evicted[gone:]
        ]
        if got is None:
            tally.lines.append(f"ft-harness: wheel store: {sd.name} {sd.version} not stored: {why}")
            (tally.refused if why.startswith("limit store_") else tally.failed).append(f"{sd.name} {sd.version}: {why}")
            return False
        tally.added += 1
        tally.built.append(got)
        tally.lines.append(f"ft-harness: wheel store: built {got.wheel} (sdist sha256 {sd.sha256})")
        return True


def shared_env(env: Mapping[str, str], package_env: Any) -> dict[str, str]:
    """The env of a step whose output every later job shares (the tools layer, a stored wheel):
    the harness's own values only.  Neither key has the package's ``env`` in it, so one
    package's PIP_INDEX_URL, CFLAGS or PIP_CONSTRAINT must not shape what others copy in (#46);
    no pip cache (--no-cache-dir)."""
    own = dict(package_env)  # the matrix's env: a mapping or its (key, value) pairs
    return {k: v for k, v in env.items() if k != "PIP_CACHE_DIR" and not (k in own and own[k] == v)}


def _tools_layer(ctx: JobCtx, store: Path, tools: Sequence[str], tally: _Tally) -> tuple[str, str]:
    """(the store's layer of ``tools`` as the backend sees it, or "" for none; "built <digest>" /
    "reused <digest>" / ""), built now in a step of its own when the store lacks it; its line
    in ``tally``, and one entry added (``store_entries_per_job``) when it was built."""
    key = ctx.interp.key
    dig = toolslayer.digest(key, tools)
    seen = toolslayer.where(ctx.ws.wheel_store, key, dig)
    try:
        with toolslayer.locked(store, key, dig):  # a job building it: wait, then reuse
            if toolslayer.ready(store, key, dig):
                storecap.touch(toolslayer.where(store, key, dig))  # used now: the last to be evicted
                tally.lines.append(f"ft-harness: tools layer: reused {seen}")
                return seen, f"reused {dig}"
            out = toolslayer.scratch(store, key)
            try:
                env = shared_env(ctx.env, ctx.job.package.env)
                phase = run_phase(
                    ctx,
                    PhaseSpec(
                        name=toolslayer.PHASE,
                        kind=KIND,
                        command=toolslayer.build_argv(ctx.ws.python, ctx.backend.isolated_out(out), tools),
                        env=env,
                        cwd=ctx.backend.isolated_out(out),
                        timeout=ctx.job.settings.install_timeout,
                        network=True,
                        isolated=out,
                    ),
                )
                room = tally.room(store)
                with storecap.locked(store):
                    why = (
                        toolslayer.publish(out, store, key, dig, lambda layer: room(storecap.tree_bytes(layer)))
                        if phase.ok
                        else f"its build failed (phase {toolslayer.PHASE})"
                    )
            finally:
                toolslayer.remove(out)
    except OSError as e:
        why = f"the store: {e}"
    tally.lines += [
        f"ft-harness: wheel store: removed {e} to make room (store_bytes: the least recently used first)"
        for e in tally.evicted
    ]
    if why:
        if why.startswith("limit store_"):
            tally.refused.append(f"tools layer {dig}: {why}")
        tally.lines.append(f"ft-harness: tools layer: none ({why}); the venv is made the ordinary way")
        return "", ""
    tally.added += 1
    tally.lines.append(f"ft-harness: tools layer: built {seen}")
    return seen, f"built {dig}"


@contextlib.contextmanager
def uncharged(ctx: JobCtx) -> Iterator[None]:
    """The store's time, not the job's: while inside, the job's deadline is at least the store's
    own limit away (a build started with 30 s of budget left still gets its ``BUILD_TIMEOUT``);
    after, the job has the budget it had before, plus nothing taken."""
    left = ctx.deadline - time.monotonic()
    started = time.monotonic()
    ctx.deadline = max(ctx.deadline, started + wheelstore.BUILD_TIMEOUT)
    try:
        yield
    finally:
        ctx.deadline = time.monotonic() + left
        took = time.monotonic() - started
        if took >= 1:
            log.info("%s: %.0f s in the wheel store, not charged to the job's budget", ctx.job.job_id, took)


def _build(ctx: JobCtx, store: Path, key: str, sd: Sdist, tally: _Tally) -> tuple[StoredWheel | None, str]:
    """One sdist built where only a fresh scratch dir is writable, its wheel published (when the
    store has room: storecap); its limit is the store's (``wheelstore.BUILD_TIMEOUT``), the caller
    keeps it off the job's budget."""
    out = wheelstore.scratch(store, key)
    try:
        name = "wheel-" + re.sub(r"[^A-Za-z0-9_.-]", "_", f"{sd.name}-{sd.version}")
        env = shared_env(ctx.env, ctx.job.package.env)
        phase = run_phase(
            ctx,
            PhaseSpec(
                name=name,
                kind=KIND,
                command=wheelstore.build_argv(ctx.ws.python, sd, ctx.backend.isolated_out(out)),
                env=env,
                cwd=ctx.backend.isolated_out(out),
                timeout=wheelstore.BUILD_TIMEOUT,
                network=True,
                isolated=out,
            ),
        )
        if not phase.ok:
            return None, f"its build failed (phase {name}{_why(phase)}); the install builds it itself"
        with storecap.locked(store):
            return wheelstore.publish(out, store, key, sd, tally.room(store))
    except OSError as e:
        return None, f"the store: {e}"
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _why(phase: Phase) -> str:
    """What a failed build of the store lacked, when it says (", " first), else ""."""
    if phase.timed_out:
        return f", past the store's limit of {wheelstore.BUILD_TIMEOUT} s"
    found = None if phase.infra else missing_piece(phase.excerpt)
    return f", {found.cause}" if found else ""


def _say(ctx: JobCtx, lines: list[str]) -> None:
    """The plan's outcome, at the end of its log (through the workspace's handle) and in ours."""
    for line in lines:
        log.info("%s: %s", ctx.job.job_id, line.removeprefix("ft-harness: "))
    try:
        fd = ctx.fs.open_append(f"logs/{PLAN}.log")
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write("\n" + "\n".join(lines) + "\n")
    except (OSError, ValueError) as e:
        log.warning("%s: cannot append to %s.log: %s", ctx.job.job_id, PLAN, e)


def used(ctx: JobCtx, use: StoreUse) -> tuple[tuple[StoredWheel, ...], tuple[StoredWheel, ...]]:
    """(reused, built): what the install took from the store per its ``--report``, split into
    wheels this job found there and ones it built itself."""
    if not use.planned or not ctx.ws.wheel_store:
        return (), ()
    report = next((p.pip_report for p in ctx.phases if p.name == "install"), None)  # parsed onto it
    taken = wheelstore.from_store(report, ctx.ws.wheel_store, ctx.ws.build_env(ctx.interp.key))
    mine = {w.sdist_sha256 for w in use.built}
    return tuple(w for w in taken if w.sdist_sha256 not in mine), use.built
