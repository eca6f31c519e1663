"""The job's stages after the source (harness.job.source): suite setup -> install -> probe ->
test runs -> confirm. Each takes what the stage before it returned and returns the next value;
``job._steps`` chains them and stops where a later stage would mean nothing.

Only the suite-setup stage reads the source tree by name, before any package code ran; from
the install on, the workspace is reached through ``ctx.fs`` only (harness.core.wsfs).
"""

from __future__ import annotations

import logging
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from .. import verdict
from ..core.evidence import NOT_INSTALLED, NOT_INSTALLED_SUFFIX
from ..core.gilonrecord import GilOn, targeted
from ..core.model import Phase, TestCommand
from ..core.suiterecord import TestSetup
from ..store.wheelstore import static_requirements
from ..testsetup.decide import SuiteSetup, decide
from ..verdict import artifact, gilon
from . import jobfiles, suite, tsanenv
from .context import JobCtx, PhaseSpec, base_env, run_phase
from .source import Source
from .suite import TOX
from .watchdog import ONLY as ONLY_PLUGIN
from .watchdog import stall_seconds, watchdog_env
from .wheelsteps import NO_STORE, StoreUse, prepare

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class Installed:
    python: str  # the venv's interpreter
    tests_python: str  # the one the tests import the package in: the venv's, or tox's env


@dataclass(frozen=True, kw_only=True)
class Suite:
    """The test phases' common parts: the command, where it runs, its environment."""

    command: TestCommand
    cwd: str  # the source tree, or site-packages
    source: str  # the source tree (TSan's source_dir)
    env: dict[str, str]  # without PYTHON_GIL
    watchdog: dict[str, str]  # the watchdog plugin's env ({} under TSan)
    idle: float  # silent this long: frozen (0: never asked)
    threads: tuple[str, ...]  # pytest-run-parallel's options
    record: TestSetup
    gil_on: GilOn | None = None  # what the GIL-on runs ran (run_tests; harness.verdict.gilon)


# ------------------------------------------------------------------ suite setup


def suite_setup(ctx: JobCtx, src: Source) -> SuiteSetup:
    """What the suite needs, read from the tree once before any package code runs
    (harness.testsetup.decide: the matrix's, the recipe's and the inferred setup, the pytest
    config, the tools it needs, and where the tests run from with which pytest args)."""
    job = ctx.job
    return decide(src.src_host, job.package, job.settings, ctx.interp, index_files=src.index_files)


# ------------------------------------------------------------------ install


def wheel_store(ctx: JobCtx, src: Source, setup: SuiteSetup) -> StoreUse:
    """The sdists the install would build, each built once into the shared wheel store in a step
    of its own (harness.job.wheelsteps). Asked for: the install's requirements, with the
    package's own requirements in its place when its sdist states them (read now, before any
    package code ran), so the dry run builds nothing of the package; the package itself is left
    to the install, whose log is the build's evidence."""
    reqs = [*_own_requirements(src, setup), *setup.tools, *ctx.job.package.test_requires, *(TOX if setup.tox else ())]
    vpy = ctx.ws.path("venv", "bin", "python")
    return prepare(
        ctx,
        venv_sh=_venv_sh(ctx, setup, vpy),
        vpy=vpy,
        requirements=reqs,
        skip=ctx.job.package.name,
        tools=[*setup.tools, *(TOX if setup.tox else ())],
    )


def _own_requirements(src: Source, setup: SuiteSetup) -> list[str]:
    """The package's requirements its sdist states (its PKG-INFO and pyproject.toml as the suite
    setup read them), else the package itself (pip learns them then from its metadata hook)."""
    static = static_requirements(setup.files.raw("PKG-INFO"), setup.files.toml("pyproject.toml", []))
    return static if static is not None else [src.target]


def install(ctx: JobCtx, src: Source, setup: SuiteSetup, store: StoreUse = NO_STORE) -> Installed | None:
    """The package with the test tools in a venv (sdists of its dependencies the store has
    built: from there); a compiled project's pure fallback wheel rebuilt from its sdist; the
    inferred test deps. None: the package did not install."""
    ws, timeout = ctx.ws, ctx.job.settings.install_timeout
    vpy = ws.path("venv", "bin", "python")
    phase = run_phase(
        ctx,
        PhaseSpec(
            name="install",
            kind="install",
            command=["sh", "-c", _install_sh(ctx, src, setup, vpy, store)],
            env=ctx.env,
            cwd=ws.root,
            timeout=timeout,
            network=True,
        ),
        then=_fallback_found(ctx, setup) if setup.compiled else None,
    )
    if not phase.ok or (setup.compiled and not _fallback(ctx, src, setup, vpy, phase)):
        return None
    if setup.test_deps:  # on their own: one that cannot install is a setup problem, not a build failure
        sh = _deps_sh(vpy, setup.test_deps, setup.tools, missing=ws.path("logs", f"test-deps{NOT_INSTALLED_SUFFIX}"))
        run_phase(
            ctx,
            PhaseSpec(
                name="test-deps",
                kind="setup",
                command=["sh", "-c", _with_tsan_flags(ctx, sh)],
                env=ctx.env,
                cwd=ws.root,
                timeout=timeout,
                network=True,
            ),
        )
    tests_python = f"{src.path}/.tox/{ctx.job.package.tox_env}/bin/python" if setup.tox else vpy
    return Installed(python=vpy, tests_python=tests_python)


def _with_tsan_flags(ctx: JobCtx, sh: str) -> str:
    """Under TSan, compile flags first: the interpreter's CFLAGS + -g -fsanitize=thread."""
    return f"{tsanenv.build_flags_sh(ctx.ws.python)} && {sh}" if ctx.tsan else sh


def _venv_sh(ctx: JobCtx, setup: SuiteSetup, vpy: str) -> str:
    ws = ctx.ws
    if ctx.tsan and ws.pip_cache:  # pip and the tools from a layer built once per interpreter
        return tsanenv.venv_sh(
            ws.python,
            ws.path("venv"),
            ws.path("inner", "venv_layer.py"),
            f"{ws.pip_cache}/{ctx.interp.key}/ft-harness-tools",
            [*setup.tools, *(TOX if setup.tox else ())],
        )
    return f"{shlex.quote(ws.python)} -m venv {shlex.quote(ws.path('venv'))}"


def _install_sh(ctx: JobCtx, src: Source, setup: SuiteSetup, vpy: str, store: StoreUse = NO_STORE) -> str:
    ws, pkg, pins = ctx.ws, ctx.job.package, setup.tools
    tox = TOX if setup.tox else ()
    links = [a for d in store.find_links for a in ("--find-links", d)]  # the store's dirs, read-only
    pip = [
        vpy,
        "-m",
        "pip",
        "install",
        "--report",
        ws.path("logs", "install-report.json"),
        *links,
        src.target,
        *pins,
        *pkg.test_requires,
        *tox,
    ]
    venv = _venv_sh(ctx, setup, vpy)
    if store.planned:  # the wheel-plan step made it
        venv = f"test -x {shlex.quote(vpy)} || {{ {venv}; }}"
    script = _with_tsan_flags(ctx, f"{venv} && {shlex.join(pip)}")
    if setup.tox:  # tox builds its env now, with network; the test phases reuse it offline
        script += f" && cd {shlex.quote(src.path)} && " + shlex.join(
            [vpy, "-m", "tox", "-e", pkg.tox_env, "--notest", *suite.tox_overrides(ctx.job, ws, pins)]
        )
    return script


def _fallback_found(ctx: JobCtx, setup: SuiteSetup) -> Callable[[Phase], Phase]:
    """For a compiled project's install phase: pip's pure wheel of it, when its report says it
    installed one, recorded on the phase (harness.verdict.artifact) before the phase is kept."""

    def then(install: Phase) -> Phase:
        if not install.ok:
            return install
        wheel = artifact.fallback_wheel(install.pip_report, ctx.job.package.name)  # parsed onto the phase
        if not wheel:
            return install
        found = artifact.problem(wheel, setup.compiled, ctx.job.settings.fallback_wheel)
        return replace(install, setup=(*install.setup, found))

    return then


def _fallback(ctx: JobCtx, src: Source, setup: SuiteSetup, vpy: str, install: Phase) -> bool:
    """A compiled project's pure wheel (recorded on ``install``): unless kept, its extension
    built from the sdist (harness.verdict.artifact). False: that build failed."""
    if artifact.fallback_of([install]) is None or ctx.job.settings.fallback_wheel != "build":
        return True
    assert src.archive is not None  # compiled: never a local tree
    ws = ctx.ws
    sh = rebuild_sh(
        vpy, ctx.job.package.name, ws.path("sdist", src.archive.name), ws.path("logs", artifact.REBUILD_REPORT)
    )
    return run_phase(
        ctx,
        PhaseSpec(
            name=artifact.REBUILD,
            kind="install",
            command=["sh", "-c", _with_tsan_flags(ctx, sh)],
            env=ctx.env,
            cwd=ws.root,
            timeout=ctx.job.settings.install_timeout,
            network=True,
        ),
    ).ok


def rebuild_sh(vpy: str, name: str, sdist: str, report: str) -> str:
    """The package alone, built from its sdist over the fallback wheel (harness.verdict.artifact): its
    dependencies stay."""
    return shlex.join(
        [
            vpy,
            "-m",
            "pip",
            "install",
            "--force-reinstall",
            "--no-deps",
            "--no-binary",
            canonicalize_name(name),
            "--report",
            report,
            sdist,
        ]
    )


def _deps_sh(vpy: str, deps: Sequence[str], keep: Sequence[str] = (), *, missing: str = "") -> str:
    """Install the inferred test deps together; when that fails (one of them has no build for
    this interpreter), each alone, so the others are there and only the tests needing the
    missing one cannot run. Exits 1 having written the name of each that did not install, one a
    line, to ``missing`` (parse.testdeps reads it onto the phase); the log says so too.

    ``keep``: the harness's pinned test tools, asked for again in every install, so a dep
    pinned against them cannot replace what pytest needs (itsdangerous 2.2.0's test
    requirements pin pluggy 1.4.0, and pytest 8.4.2 then did not start): such a dep is not
    installed, and said. ``--prefer-binary``: they are the tests' tools, not what is tested, so
    the newest release with a wheel for this interpreter beats a newer one that must be built
    (hypothesis 6.170 ships a Rust extension and no cp313t wheel; older pure wheels install)."""
    pip = shlex.join([vpy, "-m", "pip", "install", "--prefer-binary"])
    tools = f" {shlex.join(keep)}" if keep else ""
    alone = "; ".join(f'{pip} {shlex.quote(d)}{tools} || missing="$missing {Requirement(d).name}"' for d in deps)
    record = f"printf '%s\\n' $missing > {shlex.quote(missing)}; " if missing else ""
    return (
        f"{pip} {shlex.join(deps)}{tools} && exit 0; "
        f"echo 'ft-harness: together they did not install; one at a time:'; missing=; {alone}; "
        f'[ -z "$missing" ] && exit 0; {record}echo "{NOT_INSTALLED}$missing"; exit 1'
    )


# ------------------------------------------------------------------ probe


def probe(ctx: JobCtx, setup: SuiteSetup, installed: Installed) -> None:
    """Import the package in the default mode (with PYTHON_GIL=0 the GIL warning is not
    printed); probe.py was copied in at job start. What probe.json says (the version the
    package imported as, for one) is parsed onto the phase (harness.parse.probe)."""
    pkg, ws = ctx.job.package, ctx.ws
    dist = pkg.name if pkg.is_local else canonicalize_name(pkg.name)
    run_phase(
        ctx,
        PhaseSpec(
            name="probe",
            kind="probe",
            command=[installed.tests_python, "-W", "default", ws.path("probe.py"), dist, ws.path("logs", "probe.json")],
            env=ctx.env,
            cwd=ws.root,
            timeout=300,
        ),
    )


# ------------------------------------------------------------------ test runs


def suite_run(ctx: JobCtx, src: Source, setup: SuiteSetup, installed: Installed) -> Suite:
    """The test command, and where and with what env it runs: from site-packages when the
    install shipped the tests inside the package (jobfiles.site_packages), else the tree."""
    ws, s = ctx.ws, ctx.job.settings
    env = base_env(ctx.job)
    if "PATH" not in env:  # the venv first, as activating it would: a test that runs a
        # console script (numpy's test_configtool runs `numpy-config`) gets the installed one
        env["PATH"] = f"{ws.path('venv', 'bin')}:{ctx.backend.base_path}"
    wenv = {} if ctx.tsan else watchdog_env(ws, env, s.test_timeout)  # plain and threaded runs
    found = jobfiles.site_packages(ctx.fs, setup.installed.tests) if setup.installed else None
    run_from = setup.installed if found and setup.installed else setup.at_source
    at = ws.path(*found[0].split("/")) if found else src.path
    job = replace(ctx.job, package=replace(ctx.job.package, pytest_args=run_from.pytest_args))
    # the config file named by -c (none: an empty one), the source's even from site-packages
    config = f"{src.path}/{setup.config}" if setup.config else ""
    command = suite.command(job, ws, installed.python, run_from.tests, src=at, config=config, pins=setup.tools)
    return Suite(
        command=command,
        cwd=at,
        source=src.path,
        env=env,
        watchdog=wenv,
        idle=stall_seconds(s.test_timeout) if wenv else 0,  # silent past the watchdog: frozen
        threads=(f"--parallel-threads={s.threads}", f"--iterations={s.iterations}"),
        record=run_from.record,
    )


def run_tests(ctx: JobCtx, run: Suite) -> Suite:
    """Per GIL mode: the plain run, then ``repeat`` threaded runs (under TSan: tsan runs); one
    collect-only run after the first plain run. None starts once the job's budget is spent.
    With ``settings.gil_on: targeted`` the GIL-off runs go first and decide what the GIL-on
    runs run (harness.verdict.gilon): the suite, the tests red with the GIL off, or nothing."""
    s = ctx.job.settings
    is_targeted = targeted(s.gil_on, s.gil_modes, tsan=ctx.tsan)
    gil_on = None
    for mode in (0, 1) if is_targeted else s.gil_modes:
        if ctx.spent:
            log.info("%s: the job timeout is spent; no test phase starts now", ctx.job.job_id)
            break
        only: tuple[str, ...] = ()
        if is_targeted and mode == 1:
            gil_on, only = _gil_on(ctx)
            if gil_on.ran == "none":
                break
        _plain(ctx, run, mode, only)
        if mode == (0 if is_targeted else s.gil_modes[0]) and not ctx.spent:
            # what the threaded runs will really run in threads: -n auto hides it, so ask
            # pytest-run-parallel once, without workers; which tests it runs single-threaded is
            # decided at collection, the same in every GIL mode, so one run serves them all
            run_phase(
                ctx,
                PhaseSpec(
                    name="collect",
                    kind="collect",
                    command=replace(run.command, threads=run.threads, this_run=("--collect-only",)),
                    env={**run.env, "PYTHON_GIL": str(mode)},
                    cwd=run.cwd,
                    timeout=300,
                ),
            )
        for rep in range(1, s.repeat + 1):
            if ctx.spent:
                break
            _threaded(ctx, run, mode, rep, only)
    return replace(run, gil_on=gil_on or _whole(ctx, is_targeted))


def _whole(ctx: JobCtx, targeted: bool) -> GilOn | None:
    """The record of GIL-on runs that were not chosen by the GIL-off ones (None: none asked)."""
    s = ctx.job.settings
    if 1 not in s.gil_modes:
        return None
    if not any(p.gil == 1 and p.kind in ("plain", "threads", "tsan") for p in ctx.phases):
        return GilOn(ran="none", why="the job's budget was spent before any GIL-on run")
    why = (
        "ThreadSanitizer runs: the whole suite in every mode"
        if ctx.tsan
        else "settings.gil_on: full"
        if s.gil_on == "full"
        else "no GIL-off run asked: the whole suite"
        if not targeted
        else ""
    )
    return GilOn(ran="suite", why=why)


ONLY_FILE = "logs/gil-on-tests.txt"  # the GIL-on runs' test ids (gil_on: targeted), one a line


def _gil_on(ctx: JobCtx) -> tuple[GilOn, tuple[str, ...]]:
    """What the GIL-on runs run (verdict.gilon.select over the GIL-off runs), with the test ids
    written to ONLY_FILE for the plugin that keeps a run to them; the whole suite if that file
    cannot be written (package code left something in its place)."""
    sel = gilon.select(ctx.phases, ctx.job.settings)
    log.info("%s: GIL-on runs: %s (%s)", ctx.job.job_id, sel.ran, sel.why)
    if sel.ran != "tests":
        return GilOn(ran=sel.ran, why=sel.why), ()
    try:
        ctx.fs.write_new(ONLY_FILE, "".join(f"{t}\n" for t in sel.tests).encode())
    except OSError as e:
        why = f"{sel.why}; but {ONLY_FILE} could not be written ({e.strerror}), so the whole suite"
        return GilOn(ran="suite", why=why), ()
    return GilOn(ran="tests", tests=len(sel.tests), file=ctx.rel(ctx.ws.host_root / ONLY_FILE), why=sel.why), sel.tests


def _this_run(ctx: JobCtx, name: str, only: Sequence[str] = ()) -> tuple[str, ...]:
    """What only this run needs: workers, its JUnit file; the plugin that keeps it to ``only``."""
    keep = ("-p", ONLY_PLUGIN, f"--ft-harness-only={ctx.ws.path(*ONLY_FILE.split('/'))}") if only else ()
    return ("-n", "auto", f"--junitxml={ctx.ws.path('junit', f'{name}.xml')}", *keep)


def _tsan_env(ctx: JobCtx, run: Suite, name: str) -> dict[str, str]:
    return tsanenv.tsan_env(ctx.ws.path("logs", "tsan", name), list(ctx.supp), source_dir=run.source)


def _plain(ctx: JobCtx, run: Suite, mode: int, only: Sequence[str] = ()) -> None:
    name = f"plain-gil{mode}"
    env = {**run.env, "PYTHON_GIL": str(mode)}
    if ctx.tsan:
        env = {**env, **_tsan_env(ctx, run, name)}
    run_phase(
        ctx,
        PhaseSpec(
            name=name,
            kind="plain",
            command=replace(run.command, this_run=_this_run(ctx, name, only)),
            env={**env, **run.watchdog},
            cwd=run.cwd,
            timeout=ctx.job.settings.job_timeout,
            gil=mode,
            junit=f"junit/{name}.xml",
            tsan_dir=f"logs/tsan/{name}" if ctx.tsan else "",
            idle=run.idle,
            subset=len(only),
        ),
    )


def _threaded(ctx: JobCtx, run: Suite, mode: int, rep: int, only: Sequence[str] = ()) -> None:
    env, timeout = {**run.env, "PYTHON_GIL": str(mode)}, ctx.job.settings.job_timeout
    if ctx.tsan:  # the threaded run under ThreadSanitizer, markers per test
        name = f"tsan-gil{mode}-r{rep}"
        env = {**env, **_tsan_env(ctx, run, name), "PYTHONPATH": ctx.ws.path("inner")}
        cmd = replace(
            run.command, plugins=("-p", tsanenv.MARKER_PLUGIN), threads=run.threads, this_run=_this_run(ctx, name)
        )
        run_phase(
            ctx,
            PhaseSpec(
                name=name,
                kind="tsan",
                command=cmd,
                env=env,
                cwd=run.cwd,
                timeout=timeout,
                gil=mode,
                rep=rep,
                junit=f"junit/{name}.xml",
                tsan_dir=f"logs/tsan/{name}",
            ),
        )
        return
    name = f"threads-gil{mode}-r{rep}"
    cmd = replace(run.command, threads=run.threads, this_run=_this_run(ctx, name, only))
    run_phase(
        ctx,
        PhaseSpec(
            name=name,
            kind="threads",
            command=cmd,
            env={**env, **run.watchdog},
            cwd=run.cwd,
            timeout=timeout,
            gil=mode,
            rep=rep,
            junit=f"junit/{name}.xml",
            idle=run.idle,
            subset=len(only),
        ),
    )


# ------------------------------------------------------------------ confirm


def confirm(ctx: JobCtx, run: Suite) -> None:
    """Re-run each candidate's test alone (verdict.confirm), interleaved GIL off, on, off, on...,
    round-robin over the candidates, each until verdict.confirm.done says its answer is clear or
    can no longer change, within settings.confirm_budget. Not under TSan."""
    s, ws = ctx.job.settings, ctx.ws
    if not s.confirm or ctx.tsan:
        return
    found = verdict.decide(ctx.phases, settings=s, claims=False).findings
    by_name = {p.name: p for p in ctx.phases}
    end = min(time.monotonic() + s.confirm_budget, ctx.deadline)  # never past the job timeout
    chosen = list(enumerate(verdict.confirm_targets(found, ctx.phases), 1))
    for rep in range(1, s.confirm + 1):
        for i, target in chosen:
            if verdict.confirm_done(target, ctx.phases, s.confirm, s.gil_modes):
                continue
            src = by_name[target.phase]
            assert src.test_command is not None  # confirm_targets keeps only phases with one
            for mode in s.gil_modes:
                left = end - time.monotonic()
                if left < 5:
                    log.info("%s: confirmation budget (%ss) spent", ctx.job.job_id, s.confirm_budget)
                    return
                name = f"confirm{i}-gil{mode}-r{rep}"
                # alone, pytest-timeout's thread method dumps every thread and ends the process at
                # test_timeout, even in a wait no signal interrupts (its signal method cannot)
                cmd = replace(
                    src.test_command,
                    paths=(target.test_id,),
                    this_run=("--timeout-method=thread", f"--junitxml={ws.path('junit', f'{name}.xml')}"),
                )
                run_phase(
                    ctx,
                    PhaseSpec(
                        name=name,
                        kind="confirm",
                        command=cmd,
                        env={**run.env, "PYTHON_GIL": str(mode)},
                        cwd=src.cwd,
                        timeout=min(left, s.test_timeout + 30),
                        gil=mode,
                        rep=rep,
                        junit=f"junit/{name}.xml",
                    ),
                )
