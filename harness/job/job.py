"""One job: its workspace, the chain of its stages, its result.

``_steps`` chains the stages (harness.job.source, harness.job.stages, harness.job.testruns):
source -> suite setup -> install -> probe -> test deps -> probe again -> test runs -> confirm, each taking the value the one
before returned, and stops where a later stage would mean nothing. Only commands go through the
backend; the raw phases go to ``harness.parse`` (in ``context.run_phase``) and ``harness.verdict``.
A package's failure comes back as data in the JobResult, never as an exception.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from packaging.utils import canonicalize_name

from .. import __version__, parse, verdict
from ..backends.base import Backend, Workspace
from ..config import wheels
from ..config.plan import Job
from ..core import limits
from ..core.gilonrecord import GilOn
from ..core.model import Finding, InterpreterInfo, JobResult, Phase, now_iso
from ..core.stored import StoreCharge
from ..core.suiterecord import TestSetup
from ..core.threadplan import ThreadPlan
from ..core.wsfs import UNSEALED, JobDir, clear_workspace
from ..verdict import artifact, clean
from ..verdict.confirm import reserve as confirm_reserve
from ..verdict.latergil import LATER_PROBE, later_gil
from . import datalinks, jobfiles, stages, testruns, tsanenv
from .context import JobCtx, Progress, base_env
from .laptoprecipe import recipe
from .source import LOCAL_RELEASE, Unfetched, pinned_version, source
from .suite import TOOLS
from .wheelsteps import NO_STORE, StoreUse, used

__all__ = [
    "FREED",
    "KEPT",
    "Progress",
    "end_job",
    "free_job",
    "identity",
    "open_job",
    "pinned_version",
    "run_job",
    "start_env",
]

log = logging.getLogger(__name__)

KEEP_ENV = "FT_HARNESS_KEEP_WORKSPACES"  # "1": FREED stays (run --keep-workspaces)
KEPT = ("logs", "junit")  # what reports copy from and CI uploads (the host's copy of them): sealed
# freed once the result is made (#56): everything but KEPT -- the venv, the sdist and its tree,
# the commands' TMPDIR (docker), a sealed dir's old tree, the harness's own files, and whatever
# package code left at the workspace's top
FREED = ("venv", "src", "sdist", ".tmp", UNSEALED)  # always among them


@dataclass(frozen=True, kw_only=True)
class Done:
    """What the chain leaves for the result, as far as it got."""

    sdist_version: str = ""  # the fetched sdist's (the result's version: result_version)
    test_setup: TestSetup = field(default_factory=TestSetup)  # what the tests ran with, and from where
    tools: tuple[str, ...] = TOOLS  # the pinned test tools
    sdist_sha256: str = ""  # the fetched sdist's, checked against the index (reuse compares it)
    index_files: tuple[str, ...] | None = None  # the release's files on the index page the fetch read (Source's)
    store: StoreUse = NO_STORE  # what the shared wheel store gave the install (harness.job.wheelsteps)
    data_links: tuple[str, ...] = ()  # sdist dirs linked beside the installed package (harness.job.datalinks)
    gil_on: GilOn | None = None  # what the GIL-on runs ran, and why (harness.verdict.gilon)
    thread_plan: ThreadPlan | None = None  # the threaded runs planned to the budget (harness.job.budgetplan)


def start_env(ctx: JobCtx) -> tuple[dict[str, str], tuple[str, ...]]:
    """The install steps' env and, under TSan, the merged suppressions file (the marker
    plugin is in inner/: run_job)."""
    ws, env = ctx.ws, base_env(ctx.job)
    supp: tuple[str, ...] = ()
    if ctx.tsan:
        ctx.fs.write_new(
            "tsan.supp", tsanenv.suppressions(Path(ctx.tarball), ctx.job.package.tsan_suppressions or None).encode()
        )
        supp = (ws.path("tsan.supp"),)
        env = {**env, **tsanenv.install_env(ws.path("logs", "tsan", "install"), list(supp))}
    if ws.pip_cache:
        env["PIP_CACHE_DIR"] = pip_cache_dir(ws, ctx.interp.key)
    return env, supp


def pip_cache_dir(ws: Workspace, interp_key: str) -> str:
    """The job's pip cache: one per build environment (``Workspace.build_env``). pip reuses a
    wheel it built from an sdist whatever headers the build saw: pyyaml 6.0.4's pure half, built
    before the images had libyaml, came back in the new image ("Using cached
    pyyaml-6.0.4-cp313-cp313t-linux_x86_64.whl") without ``yaml.CLoader``."""
    return f"{ws.pip_cache}/{ws.build_env(interp_key)}"


def _steps(ctx: JobCtx) -> Done:
    """The chain of stages; each early return is a stop where a later stage would mean nothing."""
    ctx.env, ctx.supp = start_env(ctx)
    if ctx.job.package.unresolved:  # the plan could not pick a release: nothing to fetch
        return Done()
    src = source(ctx)
    if isinstance(src, Unfetched):  # the sdist could not be fetched (the fetch phase says why)
        return Done(index_files=src.index_files)
    ctx.ws = replace(ctx.ws, release=src.release)  # the pip cache of this release (docker)
    setup = stages.suite_setup(ctx, src)  # read from the tree before any package code runs
    done = Done(
        sdist_version=src.version,
        test_setup=setup.at_source.record,
        tools=setup.tools,
        sdist_sha256=src.sha256,
        index_files=src.index_files,
    )
    store = stages.wheel_store(ctx, src, setup)  # built once per interpreter, shared read-only (#34)
    ctx.store_seconds = store.seconds  # the store's time, which it charged to itself (#56)
    done = replace(done, store=store)
    installed = stages.install(ctx, src, setup, store)
    if installed is None:  # the package (or its extension's rebuild) did not install
        return done
    stages.probe(ctx, installed)  # always: the GIL probe of the package as a user installs it
    if stages.test_deps(ctx, setup, store) or setup.tox:  # what they bring is a note (verdict.latergil)
        stages.probe(ctx, installed, name=LATER_PROBE)
    if not setup.has_tests:
        log.info("%s: no tests in the source", ctx.job.job_id)
        return done
    run = testruns.suite_run(ctx, src, setup, installed)
    record, links = datalinks.link(ctx, src, setup.data_dirs, run.record)  # dulwich's testdata/
    run = testruns.run_tests(ctx, replace(run, record=record))
    testruns.confirm(ctx, run)
    return replace(done, test_setup=run.record, data_links=links, gil_on=run.gil_on, thread_plan=run.thread_plan)


def run_job(
    job: Job,
    *,
    interp: InterpreterInfo,
    python: str,
    backend: Backend,
    out: Path,
    key: str,
    progress: Progress = lambda job_id, step: None,
    tarball: str = "",
) -> JobResult:
    started = now_iso()
    ctx = open_job(
        job, interp=interp, python=python, backend=backend, out=out.resolve(), progress=progress, tarball=tarball
    )
    try:
        try:  # job.skip: the recipe registry's skip_versions for this Python (config.plan.with_skips)
            done = Done(test_setup=job.skip) if job.skip is not None else _steps(ctx)
        finally:
            end_job(ctx)
        return _result(ctx, done, key=key, started=started, skip=job.skip)
    finally:
        free_job(ctx)


def end_job(ctx: JobCtx) -> None:
    """The end of a job's commands (a run's job, or the store step's): its backend closed, then
    its logs/ and junit/ sealed, fail-closed, even when the close raised."""
    try:
        ctx.backend.close(ctx.ws)
    finally:
        _seal(ctx)


def free_job(ctx: JobCtx) -> None:
    """Once nothing more reads its workspace: all of it but logs/ and junit/ freed (a failure is
    logged, never raised; ``run --keep-workspaces`` keeps it for ``reproduce``), its handle
    closed."""
    try:
        names = tuple(dict.fromkeys([*FREED, *(n for n, _ in ctx.fs.listdir(".") if n not in KEPT)]))
        failed = [] if os.environ.get(KEEP_ENV) == "1" else ctx.fs.free(names)
        if failed:
            log.warning("%s: not freed: %s", ctx.job.job_id, "; ".join(failed))
    finally:
        ctx.fs.close()


def _seal(ctx: JobCtx) -> None:
    """Links, FIFOs, sockets package code left where reports copy from and CI uploads removed,
    fail-closed (wsfs.JobDir.seal: on any error logs/ and junit/ hold only a note); never raises."""
    sealed = ctx.fs.seal(KEPT)
    if sealed.summary():
        log.warning("%s: logs/ and junit/: %s", ctx.job.job_id, sealed.summary())


def open_job(
    job: Job, *, interp: InterpreterInfo, python: str, backend: Backend, out: Path, progress: Progress, tarball: str
) -> JobCtx:
    """A fresh workspace with the harness's own files, opened in the backend."""
    host_root = out / "work" / job.job_id
    clear_workspace(host_root)  # a previous run's: by fd, no recursion, never raises
    host_root.mkdir(parents=True)
    for d in ("logs", "junit"):
        (host_root / d).mkdir()
    # from here on every access to the workspace goes through this handle (harness.core.wsfs)
    fs = JobDir(host_root)
    try:
        jobfiles.copy_own_files(fs, tsan=interp.sanitizer == "thread")  # before any package code runs
    except BaseException:
        fs.close()
        raise
    ws = replace(
        backend.open(job.job_id, host_root, python, job.package.path),
        fs=fs,
        release=LOCAL_RELEASE if job.package.is_local else pinned_version(job.package.version),
    )
    return JobCtx(
        job=job,
        ws=ws,
        backend=backend,
        out=out,
        progress=progress,
        phases=[],
        started=time.monotonic(),
        budget=job.settings.job_timeout,
        interp=interp,
        tarball=tarball,
        # the runs alone's part of the budget, kept from the start: the suite's runs stop before it
        reserve=confirm_reserve(job.settings, tsan=interp.sanitizer == "thread"),
    )


def identity(job: Job, *, key: str, interp: InterpreterInfo, backend: str) -> JobResult:
    """A result of ``job`` with only what names it: the job's id and key, the package as the
    matrix asks for it (name, version spec or path, where from, its notes and links), the
    interpreter, the backend and this harness. Every result starts here (``_result``, and the
    runner's infra-error results)."""
    return JobResult(
        job_id=job.job_id,
        key=key,
        package=job.package.name,
        requested=job.package.path or job.package.version,
        source="local" if job.package.is_local else "pypi",
        interpreter=interp,
        backend=backend,
        harness_version=__version__,
        notes=job.package.notes,
        links=job.package.links,
    )


def result_version(job: Job, sdist: str, probe: str) -> str:
    """The version a job's result names: its sdist's, else the one the probe imported (a local
    tree), else the one a pinned spec names (the fetch failed, or the job never ran)."""
    return sdist or probe or ("" if job.package.is_local else pinned_version(job.package.version))


def _decide(ctx: JobCtx, skip: TestSetup | None) -> verdict.Decision:
    job = ctx.job
    if job.package.unresolved:
        why = f"setup: no release of {job.package.name} to test: {job.package.unresolved}"
        return verdict.Decision(
            verdict="infra-error",
            findings=(Finding(kind="infra-error", evidence="setup", excerpt=job.package.unresolved, message=why),),
        )
    if skip is not None:
        return verdict.Decision(
            verdict="skipped",
            findings=(Finding(kind="skipped", evidence="registry", message=f"not run: {skip.sources[0]}"),),
        )
    return verdict.decide(ctx.phases, settings=job.settings)


def _result(ctx: JobCtx, done: Done, *, key: str, started: str, skip: TestSetup | None) -> JobResult:
    job, interp, backend, phases = ctx.job, ctx.interp, ctx.backend, ctx.phases
    probe = parse.probe_of(phases)  # probe.json, typed on its phase: written after package code ran
    for why in probe.problems:
        log.warning("%s: %s", job.job_id, why)
    decision = _decide(ctx, skip)
    version = result_version(job, done.sdist_version, probe.version)
    network_phases = {p.name for p in phases if p.kind in ("install", "setup")}  # fetch, install, test-deps
    findings: tuple[Finding, ...] = tuple(
        replace(
            f,
            reproduce=backend.reproduce_command(ctx.ws, f.reproduce, network=f.phase in network_phases),
            recipe=recipe(
                f,
                phases,
                package=job.package.name,
                version=version,
                interp=interp,
                local_path=job.package.path,
                tools=done.tools,
                test_requires=done.test_setup.requires,
                data_links=done.data_links,
            ),
        )
        if f.reproduce
        else f
        for f in decision.findings
    )
    install_ok = any(p.name == "install" and p.ok for p in phases)
    reused, built = used(ctx, done.store)
    fallback = artifact.fallback_of(phases)  # a compiled project's pure wheel: built over, or kept
    wheel = (
        wheels.wheel_info(
            job.package.name,
            local=job.package.is_local,
            version=version,
            install_report=artifact.tested_report(phases),
            interp=interp,
            probe=probe,
            installed_ok=install_ok,
            fallback=fallback.name if fallback else "",
            index_files=done.index_files,
            from_store=any(w.name == canonicalize_name(job.package.name) for w in reused),
        )
        if phases
        else None
    )
    return replace(
        identity(job, key=key, interp=interp, backend=backend.name),
        version=version,
        settings={k: list(v) if isinstance(v, tuple) else v for k, v in vars(job.settings).items()},
        started=started,
        finished=now_iso(),
        phases=limits.cap_result_tests(phases),
        verdict=decision.verdict,
        qualifier=decision.qualifier,
        findings=findings,
        coverage=decision.coverage,
        wheel=wheel,
        metadata=probe.metadata,
        test_setup=done.test_setup,
        sdist_sha256=done.sdist_sha256,
        wheels_reused=reused,
        wheels_built=built,
        tools_layer=done.store.tools_layer,
        store=StoreCharge(
            seconds=done.store.seconds,
            bytes_added=done.store.bytes_added,
            limits=done.store.limits,
            untrusted=done.store.untrusted,
        ),
        gil_on=done.gil_on,
        rules_out=_rules_out(decision.rules_out, phases, job, done.thread_plan),
        thread_plan=done.thread_plan,
        gil_with_test_deps=later_gil(phases),
    )


def _rules_out(said: str, phases: list[Phase], job: Job, plan: ThreadPlan | None) -> str:
    """A clean verdict's bound, with what each threaded run really gave a test when they were
    planned to the budget (not the settings' threads x iterations)."""
    if not said or plan is None or plan.how == "whole":
        return said
    return clean.rules_out(
        phases, job.settings, each=f"as planned to the job's budget: {plan.reach(job.settings.iterations)}"
    )
