"""The job's stages after the source (harness.job.source) up to the tests: suite setup ->
install -> probe -> test deps -> probe again. Each takes what the stage before it returned and returns the next value;
``job._steps`` chains them, then the test runs and the confirmation (harness.job.testruns), and
stops where a later stage would mean nothing.

Only the suite-setup stage reads the source tree by name, before any package code ran; from
the install on, the workspace is reached through ``ctx.fs`` only (harness.core.wsfs).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from ..core.evidence import NOT_INSTALLED, NOT_INSTALLED_SUFFIX
from ..core.model import Phase
from ..store.take import static_requirements
from ..testsetup.suitesetup import SuiteSetup, read_suite
from ..verdict import artifact
from . import suite, tsanenv
from .context import JobCtx, PhaseSpec, run_phase
from .source import Source
from .suite import TOX
from .wheelsteps import NO_STORE, StoreUse, prepare


@dataclass(frozen=True, kw_only=True)
class Installed:
    python: str  # the venv's interpreter
    tests_python: str  # the one the tests import the package in: the venv's, or tox's env


# ------------------------------------------------------------------ suite setup


def suite_setup(ctx: JobCtx, src: Source) -> SuiteSetup:
    """What the suite needs, read from the tree once before any package code runs
    (harness.testsetup.suitesetup: the matrix's, the recipe's and the inferred setup, the pytest
    config, the tools it needs, and where the tests run from with which pytest args)."""
    job = ctx.job
    return read_suite(src.src_host, job.package, job.settings, ctx.interp, index_files=src.index_files)


# ------------------------------------------------------------------ install


def wheel_store(ctx: JobCtx, src: Source, setup: SuiteSetup, *, build_own: bool = False) -> StoreUse:
    """The sdists the install would build, each built once into the shared wheel store in a step
    of its own (harness.job.wheelsteps). Asked for: the install's requirements, with the
    package's own requirements in its place when its sdist states them (read now, before any
    package code ran), so the dry run builds nothing of the package; the package itself is left
    to the install, whose log is the build's evidence, unless the store holds the wheel of its
    very sdist, built there for another job or by the store step (``build_own``: a compiled
    package's own sdist, built once before the jobs, harness.job.prebuild)."""
    reqs = [*_own_requirements(src, setup), *setup.tools, *ctx.job.package.test_requires, *(TOX if setup.tox else ())]
    vpy = ctx.ws.path("venv", "bin", "python")
    return prepare(
        ctx,
        venv_sh=_venv_sh(ctx, setup, vpy),
        vpy=vpy,
        requirements=reqs,
        skip=ctx.job.package.name,
        tools=[*setup.tools, *(TOX if setup.tox else ())],
        own_sha256=src.sha256,
        own_version=src.version,
        build_own=build_own and bool(setup.compiled),
    )


def _own_requirements(src: Source, setup: SuiteSetup) -> list[str]:
    """The package's requirements its sdist states (its PKG-INFO and pyproject.toml as the suite
    setup read them), else the package itself (pip learns them then from its metadata hook)."""
    static = static_requirements(setup.files.raw("PKG-INFO"), setup.files.toml("pyproject.toml", []))
    return static if static is not None else [src.target]


def install(ctx: JobCtx, src: Source, setup: SuiteSetup, store: StoreUse = NO_STORE) -> Installed | None:
    """The package with the pinned test tools in a venv, as a user installs it (its runtime
    dependencies, no extras; sdists of them the store has built: from there); a compiled
    project's pure fallback wheel rebuilt from its sdist. The test dependencies come after the
    probe (``test_deps``). None: the package did not install."""
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
    tests_python = f"{src.path}/.tox/{ctx.job.package.tox_env}/bin/python" if setup.tox else vpy
    return Installed(python=vpy, tests_python=tests_python)


def test_deps(ctx: JobCtx, setup: SuiteSetup, store: StoreUse = NO_STORE) -> bool:
    """The test dependencies (matrix.yaml's ``test_requires``, else the inferred ones), after the
    probe, on their own: one that cannot install is a setup problem, not a build failure, and an
    extra they bring (aiohttp's tests install Brotli, its ``speedups`` extra) is not what a user's
    ``pip install`` gives. False: there were none."""
    deps = [*ctx.job.package.test_requires, *setup.test_deps]
    if not deps:
        return False
    ws = ctx.ws
    links = list(store.find_links)  # read-only; matrix.yaml's test_requires are planned there too
    sh = _deps_sh(
        ws.path("venv", "bin", "python"),
        deps,
        setup.tools,
        missing=ws.path("logs", f"test-deps{NOT_INSTALLED_SUFFIX}"),
        links=links,
    )
    run_phase(
        ctx,
        PhaseSpec(
            name="test-deps",
            kind="setup",
            command=["sh", "-c", _with_tsan_flags(ctx, sh)],
            env=ctx.env,
            cwd=ws.root,
            timeout=ctx.job.settings.install_timeout,
            network=True,
        ),
    )
    return True


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


def _deps_sh(
    vpy: str, deps: Sequence[str], keep: Sequence[str] = (), *, missing: str = "", links: Sequence[str] = ()
) -> str:
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
    pip = shlex.join([vpy, "-m", "pip", "install", "--prefer-binary", *(a for d in links for a in ("--find-links", d))])
    tools = f" {shlex.join(keep)}" if keep else ""
    alone = "; ".join(f'{pip} {shlex.quote(d)}{tools} || missing="$missing {Requirement(d).name}"' for d in deps)
    record = f"printf '%s\\n' $missing > {shlex.quote(missing)}; " if missing else ""
    return (
        f"{pip} {shlex.join(deps)}{tools} && exit 0; "
        f"echo 'ft-harness: together they did not install; one at a time:'; missing=; {alone}; "
        f'[ -z "$missing" ] && exit 0; {record}echo "{NOT_INSTALLED}$missing"; exit 1'
    )


# ------------------------------------------------------------------ probe


def probe(ctx: JobCtx, installed: Installed, *, name: str = "probe") -> None:
    """Import the package in the default mode (with PYTHON_GIL=0 the GIL warning is not
    printed); probe.py was copied in at job start. ``probe``: right after the install, in the
    venv, the package as a user installs it -- its verdict; ``probe-test-deps``
    (harness.verdict.latergil): again once the test dependencies are in, in the interpreter the
    tests import the package in -- what re-enables the GIL only then is a note. What
    ``<name>.json`` says (the version the package imported as, for one) is parsed onto the phase
    (harness.parse.probe)."""
    pkg, ws = ctx.job.package, ctx.ws
    dist = pkg.name if pkg.is_local else canonicalize_name(pkg.name)
    python = installed.python if name == "probe" else installed.tests_python
    run_phase(
        ctx,
        PhaseSpec(
            name=name,
            kind="probe",
            command=[python, "-W", "default", ws.path("probe.py"), dist, ws.path("logs", f"{name}.json")],
            env=ctx.env,
            cwd=ws.root,
            timeout=300,
        ),
    )
