"""The steps inside one job: fetch, install, probe, plain and threaded runs.

Only commands go through the backend; this module decides what to run and in
what order, then hands the raw phases to ``harness.parse`` and
``harness.verdict``.  A package's failure comes back as data in the
JobResult, never as an exception.
"""

from __future__ import annotations

import json
import logging
import shlex
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidSdistFilename, canonicalize_name, parse_sdist_filename

from .. import __version__, parse, verdict
from ..backends.base import Backend, Workspace
from ..config import wheels
from ..config.plan import Job
from ..core import limits, logcap
from ..core.errors import InfraError
from ..core.model import (
    NOT_INSTALLED,
    Finding,
    InterpreterInfo,
    JobResult,
    Phase,
    TestCommand,
    now_iso,
)
from ..core.wsfs import JobDir
from ..testsetup import pytestcfg
from ..verdict import artifact
from . import extract, fetch, jobfiles, suite, testsetup, tsan
from .recipe import recipe
from .suite import TOOLS, TOX
from .watchdog import stall_seconds, watchdog_env

log = logging.getLogger(__name__)

COPY_IGNORE = shutil.ignore_patterns(".git", ".nox", ".tox", "build", "dist", "*.egg-info", "__pycache__", "*.so")

Progress = Callable[[str, str], None]  # (job_id, step)


@dataclass
class _Ctx:
    job: Job
    ws: Workspace
    backend: Backend
    out: Path
    deadline: float
    progress: Progress
    phases: list[Phase]
    interp: InterpreterInfo
    tarball: str = ""
    test_setup: dict = field(default_factory=dict)  # what the tests ran with, and from where
    tools: tuple[str, ...] = TOOLS  # the pinned test tools (pytest 9 for a [tool.pytest] config)
    sdist_sha256: str = ""  # the fetched sdist's, checked against the index (reuse compares it)

    @property
    def tsan(self) -> bool:
        return self.interp.sanitizer == "thread"

    def remaining(self) -> float:
        return max(1.0, self.deadline - time.monotonic())

    @property
    def spent(self) -> bool:
        """The job's budget is gone: a test phase started now would time out at once and read
        as a hang in a mode whose tests never ran."""
        return self.deadline - time.monotonic() <= 1.0

    def rel(self, host_path: Path) -> str:
        return str(host_path.relative_to(self.out))

    @property
    def fs(self) -> JobDir:
        assert self.ws.fs is not None  # run_job opens it
        return self.ws.fs



def _base_env(job: Job) -> dict[str, str]:
    env = dict(job.package.env)
    env.update({"PYTHONFAULTHANDLER": "1", "PYTHONDONTWRITEBYTECODE": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                "PIP_NO_INPUT": "1", "PYTHONUNBUFFERED": "1"})
    if wheels.public_index():  # the index the plan resolved against: pip looks there too; never
        # its credentials, which package code and every log header (the env) would show (#30)
        env["PIP_EXTRA_INDEX_URL"] = wheels.public_index()
    return env


def _run(ctx: _Ctx, name: str, kind: str, cmd: list[str] | TestCommand, *, env: dict[str, str],
         cwd: str, timeout: float, network: bool = False, gil: int | None = None, rep: int = 0,
         junit: str = "", tsan_dir: str = "", idle: float = 0) -> Phase:
    test_command = cmd if isinstance(cmd, TestCommand) else None
    argv = list(cmd.argv()) if isinstance(cmd, TestCommand) else cmd
    ctx.progress(ctx.job.job_id, name)
    fs, log_host = ctx.fs, ctx.ws.host("logs", f"{name}.log")  # a name for the backend; made through fs
    try:  # package code may have left a link at logs/, at the log, or at junit/: never followed
        fs.makedirs("logs")
        fs.makedirs("junit")
        with fs.create_text(f"logs/{name}.log") as f:
            f.write(f"$ {shlex.join(argv)}\n# cwd: {cwd}\n# env: {json.dumps(env, sort_keys=True)}\n")
        if tsan_dir:
            fs.makedirs(tsan_dir)
    except (OSError, ValueError) as e:
        raise InfraError(f"{ctx.job.job_id}: cannot create {log_host.name} in its workspace: {e}") from None
    ex = ctx.backend.run(ctx.ws, argv, env=env, cwd=cwd, timeout=min(timeout, ctx.remaining()),
                         log=log_host, network=network, idle=idle)
    phase = Phase(
        name=name, kind=kind, gil=gil, rep=rep, command=tuple(argv), test_command=test_command,
        env=dict(env), cwd=cwd,
        exit_code=ex.exit_code, signal=ex.signal, timed_out=ex.timed_out, oom_killed=ex.oom_killed,
        duration=round(ex.duration, 3), log=ctx.rel(log_host),
        junit=ctx.rel(ctx.ws.host(*junit.split("/"))) if junit and fs.is_file(junit) else "",
        infra=ex.infra,
    )
    cut = logcap.cap_log(fs.fd, f"logs/{name}.log")  # a log past log_bytes: head and tail kept
    phase = parse.parse_phase(phase, ctx.out)  # reads below ctx.out through no link (wsfs)
    if cut:  # said in the result too, not only in the middle of the log
        phase = replace(phase, excerpt=f"{phase.excerpt}\n{cut}".strip())
    if tsan_dir:
        phase = replace(phase, tsan=tuple(jobfiles.tsan_reports(fs, tsan_dir)))
    ctx.phases.append(phase)
    log.info("%s %s: exit %s in %.1fs", ctx.job.job_id, name, ex.exit_code, ex.duration)
    return phase


def run_job(job: Job, *, interp: InterpreterInfo, python: str, backend: Backend, out: Path, key: str,
            progress: Progress = lambda job_id, step: None, tarball: str = "") -> JobResult:
    started = now_iso()
    out = out.resolve()
    host_root = out / "work" / job.job_id
    shutil.rmtree(host_root, ignore_errors=True)
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
    ws = replace(backend.open(job.job_id, host_root, python, job.package.path), fs=fs)
    ctx = _Ctx(job=job, ws=ws, backend=backend, out=out, progress=progress, phases=[],
               deadline=time.monotonic() + job.settings.job_timeout, interp=interp, tarball=tarball)
    version = ""
    extra: dict = {}  # what _steps found, if it got that far
    skip = testsetup.registry_skip(job.package, job.settings, testsetup.minor(interp))  # not on this Python
    try:
        if skip:
            ctx.test_setup = skip
        else:
            version, extra = _steps(ctx)
    finally:
        backend.close(ws)
        # links, FIFOs, sockets package code left where reports copy from and CI uploads
        dropped = fs.drop_non_regular(("logs", "junit"))
        if dropped:
            log.warning("%s: removed %d non-regular file(s) from logs/ and junit/: %s", job.job_id,
                        len(dropped), ", ".join(dropped[:5]))
    if not version and not job.package.is_local:  # the fetch failed: a pinned spec still names it
        version = pinned_version(job.package.version)
    probe = parse.probe_of(ctx.phases)  # probe.json, typed on its phase: written after package code ran
    for why in probe.problems:
        log.warning("%s: %s", job.job_id, why)
    decision = verdict.decide(ctx.phases, settings=job.settings)
    if job.package.unresolved:
        why = f"setup: no release of {job.package.name} to test: {job.package.unresolved}"
        decision = verdict.Decision(verdict="infra-error", findings=(
            Finding(kind="infra-error", evidence="setup", excerpt=job.package.unresolved, message=why),))
    elif skip:
        decision = verdict.Decision(verdict="skipped", findings=(Finding(
            kind="skipped", evidence="registry", message=f"not run: {skip['sources'][0]}"),))
    network_phases = {p.name for p in ctx.phases if p.kind in ("install", "setup")}  # fetch, install, test-deps
    findings: tuple[Finding, ...] = tuple(
        replace(f, reproduce=backend.reproduce_command(ws, f.reproduce, network=f.phase in network_phases),
                recipe=recipe(f, ctx.phases, package=job.package.name, version=version, interp=interp,
                              local_path=job.package.path, tools=ctx.tools,
                              test_requires=ctx.test_setup.get("requires", ())))
        if f.reproduce else f for f in decision.findings)
    install_ok = any(p.name == "install" and p.ok for p in ctx.phases)
    report = f"logs/{artifact.REBUILD_REPORT}" if artifact.rebuilt(ctx.phases) else "logs/install-report.json"
    fallback = artifact.fallback_of(ctx.phases)  # a compiled project's pure wheel: built over, or kept
    wheel = wheels.wheel_info(job.package.name, local=job.package.is_local, version=version,
                              install_report=fs.read(report, 64 * 1024 * 1024), interp=interp, probe=probe,
                              installed_ok=install_ok, fallback=fallback.name if fallback else "") if ctx.phases else None
    fs.close()
    return JobResult(
        job_id=job.job_id, key=key, package=job.package.name,
        requested=job.package.path or job.package.version, version=version or probe.version,
        source="local" if job.package.is_local else "pypi", interpreter=interp,
        settings={k: list(v) if isinstance(v, tuple) else v for k, v in vars(job.settings).items()},
        backend=backend.name, started=started, finished=now_iso(), harness_version=__version__,
        phases=limits.cap_result_tests(ctx.phases), verdict=decision.verdict, qualifier=decision.qualifier,
        findings=findings, coverage=decision.coverage, wheel=wheel,
        metadata=probe.metadata, notes=job.package.notes, links=job.package.links,
        test_setup=ctx.test_setup, sdist_sha256=ctx.sdist_sha256,
    )


def _fetch_on_host(ctx: _Ctx, shown: list[str], env: dict[str, str]) -> Phase | None:
    """The sdist from the index's JSON page, by the host, with no build (harness.job.fetch); the
    phase shows the equivalent ``pip download``. None: the host cannot read the index."""
    pkg, ws = ctx.job.package, ctx.ws
    ctx.progress(ctx.job.job_id, "fetch")
    t0 = time.monotonic()
    try:
        got = fetch.sdist(pkg.name, pkg.version, ws.host("sdist"))
        ctx.sdist_sha256 = got.sha256
        code, text = 0, (f"{got.url}\nsaved {got.path.name}: {got.size} bytes, sha256 {got.sha256} "
                         f"(checked against the index)\n")
    except fetch.IndexUnavailable as e:
        log.info("%s: %s; fetching with pip in the backend", ctx.job.job_id, e)
        fetch.clear(ws.host("sdist"))
        return None
    except fetch.NoSdist as e:
        code, text = 1, f"ERROR: {e}\n"
    log_host = ws.host("logs", "fetch.log")
    with ctx.fs.create_text("logs/fetch.log") as f:
        f.write(f"$ {shlex.join(shown)}\n# fetched by the host from the index's JSON page "
                f"(PEP 691), nothing built\n{text}")
    phase = parse.parse_phase(Phase(
        name="fetch", kind="install", command=tuple(shown), env=dict(env), cwd=ws.root,
        exit_code=code, duration=round(time.monotonic() - t0, 3), log=ctx.rel(log_host)), ctx.out)
    ctx.phases.append(phase)
    return phase


def pinned_version(spec: str) -> str:
    """'2.1.1' for '==2.1.1' (the one release a spec allows), else ''."""
    try:
        specs = list(SpecifierSet(spec))
    except InvalidSpecifier:
        return ""
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        return specs[0].version
    return ""


def _steps(ctx: _Ctx) -> tuple[str, dict]:
    """Run the phases; stop early where a later phase would mean nothing."""
    job, ws = ctx.job, ctx.ws
    env = _base_env(job)
    supp: list[str] = []
    if ctx.tsan:  # one merged suppressions file (the marker plugin is in inner/: run_job)
        ctx.fs.write_new("tsan.supp", tsan.suppressions(Path(ctx.tarball), job.package.tsan_suppressions or None)
                         .encode())
        supp = [ws.path("tsan.supp")]
        env = {**env, **tsan.install_env(ws.path("logs", "tsan", "install"), supp)}
    if ws.pip_cache:  # one pip cache per interpreter build: a wheel pip built for the plain
        # interpreter carries the same cp313t tag as one built with -fsanitize=thread
        env["PIP_CACHE_DIR"] = f"{ws.pip_cache}/{ctx.interp.key}"
    vpy = ws.path("venv", "bin", "python")
    src_host = ws.host("src")
    version = ""
    if job.package.unresolved:  # the plan could not pick a release: nothing to fetch
        return "", {}
    # 1. source
    if job.package.is_local:
        extract.fresh_dir(src_host)
        shutil.copytree(job.package.path, src_host / "pkg", ignore=COPY_IGNORE, symlinks=True)
        src_host = src_host / "pkg"
        target = ws.path("src", "pkg")
    else:
        spec = f"{job.package.name}{job.package.version}"
        pip_download = [ws.python, "-m", "pip", "download", "--no-deps", "--no-binary",
                        canonicalize_name(job.package.name), "--dest", ws.path("sdist"), spec]
        fetched = _fetch_on_host(ctx, pip_download, env)
        if fetched is None:  # the host cannot read the index: pip, in the backend (it may build)
            fetched = _run(ctx, "fetch", "install", pip_download, env=env, cwd=ws.root,
                         timeout=job.settings.install_timeout, network=True)
        archives = extract.archives(ws.host("sdist"))  # regular files only: pip may have built
        if not fetched.ok or not archives:
            return "", {}
        try:
            _, ver = parse_sdist_filename(archives[0].name)
            version = str(ver)
        except InvalidSdistFilename:
            version = ""
        try:  # into a src/ made now, whatever a package step left there (harness.job.extract)
            top, links_out = extract.extract(archives[0], src_host)
        except extract.UNSAFE as e:  # a broken or hostile archive; past a limit: LimitExceeded
            raise InfraError(f"{job.job_id}: cannot extract {archives[0].name}: {e}") from None
        if links_out:
            log.warning("%s: %d link(s) out of the tree skipped in %s: %s", job.job_id,
                        len(links_out), archives[0].name, ", ".join(links_out[:5]))
        src_host = top
        target = f"{job.package.name}=={version}" if version else spec
    src = ws.path(*src_host.relative_to(ws.host_root).parts)
    # what matrix.yaml leaves unsaid about the tests is read from the sdist (harness.testsetup.infer)
    pkg, ctx.test_setup, inferred_deps = testsetup.resolve(job.package, job.settings, ctx.interp, src_host)
    job = ctx.job = replace(job, package=pkg)
    tox = job.package.runner == "tox"
    # what the test runs need from the source tree, read now: from the install on, package code
    # has had the workspace, and the host reads nothing of it by name (harness.core.wsfs)
    has_tests = suite.has_tests(src_host, job.package.tests)
    cfg = pytestcfg.pytest_config(src_host, job.package.tests, [])
    ctx.tools = pins = suite.tools(pytestcfg.needs_pytest9(src_host, cfg))
    if pins != TOOLS:
        ctx.test_setup = {**ctx.test_setup, "sources": [*ctx.test_setup.get("sources", []),
                          f"{pins[0]}: its config is pytest 9's [tool.pytest] table, which pytest 8 does not read"]}
    in_package = None if tox else suite.tests_in_package(src_host, job.package.tests)
    compiled = "" if job.package.is_local or tox else artifact.compiled_evidence(src_host)
    if compiled and version and (files := wheels.index_files(pkg.name, version)) is not None:  # None: unread
        compiled = artifact.with_cpython_wheel(compiled, files)  # "": its pure wheels are all CPython gets
    # 2. install
    pip = [vpy, "-m", "pip", "install", "--report", ws.path("logs", "install-report.json"),
           target, *pins, *job.package.test_requires, *(TOX if tox else ())]
    venv = f"{shlex.quote(ws.python)} -m venv {shlex.quote(ws.path('venv'))}"
    if ctx.tsan and ws.pip_cache:  # pip and the tools from a layer built once per interpreter
        venv = tsan.venv_sh(ws.python, ws.path("venv"), ws.path("inner", "tsan_venv.py"),
                            f"{ws.pip_cache}/{ctx.interp.key}/ft-harness-tools",
                            [*pins, *(TOX if tox else ())])
    script = f"{venv} && {shlex.join(pip)}"
    if ctx.tsan:  # compile flags: the interpreter's own CFLAGS + -g -fsanitize=thread (harness.job.tsan)
        script = f"{tsan.build_flags_sh(ws.python)} && {script}"
    if tox:  # tox builds its env now, with network; the test phases reuse it offline
        script += f" && cd {shlex.quote(src)} && " + shlex.join(
            [vpy, "-m", "tox", "-e", job.package.tox_env, "--notest", *suite.tox_overrides(job, ws, pins)])
    install = _run(ctx, "install", "install", ["sh", "-c", script],
                   env=env, cwd=ws.root, timeout=job.settings.install_timeout, network=True)
    if not install.ok:
        return version, {}
    fb = artifact.fallback_wheel(ctx.fs.read("logs/install-report.json", 64 * 1024 * 1024), pkg.name) if compiled else ""
    if fb:  # a compiled project's pure wheel: its extension built from the sdist, unless kept (harness.verdict.artifact)
        ctx.phases[-1] = replace(install, setup=(*install.setup, artifact.problem(fb, compiled, job.settings.fallback_wheel)))
        if job.settings.fallback_wheel == "build":  # archives: the sdist fetched above (compiled: not local)
            sh = artifact.rebuild_sh(vpy, pkg.name, ws.path("sdist", archives[0].name), ws.path("logs", artifact.REBUILD_REPORT))
            sh = f"{tsan.build_flags_sh(ws.python)} && {sh}" if ctx.tsan else sh
            if not _run(ctx, artifact.REBUILD, "install", ["sh", "-c", sh], env=env, cwd=ws.root,
                        timeout=job.settings.install_timeout, network=True).ok:
                return version, {}
    if inferred_deps:  # on their own: one that cannot install is a setup problem, not a build failure
        deps_cmd = ["sh", "-c", _deps_sh(vpy, inferred_deps, pins)]
        if ctx.tsan:
            deps_cmd = ["sh", "-c", f"{tsan.build_flags_sh(ws.python)} && {deps_cmd[2]}"]
        _run(ctx, "test-deps", "setup", deps_cmd, env=env, cwd=ws.root,
             timeout=job.settings.install_timeout, network=True)
    vpy_tests = f"{src}/.tox/{job.package.tox_env}/bin/python" if tox else vpy
    # 3. probe, in the default mode (with PYTHON_GIL=0 the warning is not printed); probe.py was
    # copied in at job start (_copy_own_files)
    dist = canonicalize_name(job.package.name) if not job.package.is_local else job.package.name
    probe = _run(ctx, "probe", "probe", [vpy_tests, "-W", "default", ws.path("probe.py"), dist,
                                         ws.path("logs", "probe.json")], env=env, cwd=ws.root, timeout=300).probe
    version = version or (probe.version if probe else "")  # probe.json, parsed onto its phase
    # 4. test runs
    tests = job.package.tests  # matrix.yaml's, else what harness.testsetup.infer found (_with_test_setup)
    if not has_tests:
        log.info("%s: no tests in the source", job.job_id)
        return version, {}
    s = job.settings
    base_env = _base_env(job)
    if "PATH" not in base_env:  # the venv first, as activating it would: a test that runs a
        # console script (numpy's test_configtool runs `numpy-config`) gets the installed one
        base_env["PATH"] = f"{ws.path('venv', 'bin')}:{ctx.backend.base_path}"
    wenv = {} if ctx.tsan else watchdog_env(ws, base_env, s.test_timeout)  # plain and threaded runs
    idle = stall_seconds(s.test_timeout) if wenv else 0  # silent past the watchdog: frozen
    # where the tests run (cwd, rootdir), and the config file named by -c (none: an empty one)
    at, config = src, f"{src}/{cfg[0]}" if cfg else ""
    found = jobfiles.site_packages(ctx.fs, in_package) if in_package else None
    if found:
        job, at, tests, config = _from_installed(ctx, f"{src}/{cfg[0]}" if cfg else "", found)
    base = suite.command(job, ws, vpy, tests, src=at, config=config, pins=pins)
    threads = (f"--parallel-threads={s.threads}", f"--iterations={s.iterations}")

    def run_once(name: str) -> tuple[str, ...]:  # what only this run needs: workers, its JUnit file
        return ("-n", "auto", f"--junitxml={ws.path('junit', f'{name}.xml')}")

    for mode in s.gil_modes:
        if ctx.spent:
            log.info("%s: the job timeout is spent; no test phase starts now", job.job_id)
            break
        menv = {**base_env, "PYTHON_GIL": str(mode)}
        name = f"plain-gil{mode}"
        penv, tdir = menv, ""
        if ctx.tsan:
            penv = {**menv, **tsan.tsan_env(ws.path("logs", "tsan", name), supp, source_dir=src)}
            tdir = f"logs/tsan/{name}"
        _run(ctx, name, "plain", replace(base, this_run=run_once(name)),
             env={**penv, **wenv}, cwd=at, timeout=s.job_timeout, gil=mode, junit=f"junit/{name}.xml", tsan_dir=tdir,
             idle=idle)
        if mode == s.gil_modes[0] and not ctx.spent:
            # what the threaded runs will really run in threads: -n auto hides it, so ask
            # pytest-run-parallel once, without workers; which tests it runs single-threaded is
            # decided at collection, the same in every GIL mode, so one run serves them all
            _run(ctx, "collect", "collect", replace(base, threads=threads, this_run=("--collect-only",)),
                 env=menv, cwd=at, timeout=300)
        for rep in range(1, s.repeat + 1):
            if ctx.spent:
                break
            if ctx.tsan:  # the threaded run under ThreadSanitizer, markers per test
                name = f"tsan-gil{mode}-r{rep}"
                tenv = {**menv, **tsan.tsan_env(ws.path("logs", "tsan", name), supp, source_dir=src),
                        "PYTHONPATH": ws.path("inner")}
                _run(ctx, name, "tsan", replace(base, plugins=("-p", tsan.MARKER_PLUGIN), threads=threads,
                                                this_run=run_once(name)),
                     env=tenv, cwd=at, timeout=s.job_timeout, gil=mode,
                     rep=rep, junit=f"junit/{name}.xml", tsan_dir=f"logs/tsan/{name}")
                continue
            name = f"threads-gil{mode}-r{rep}"
            _run(ctx, name, "threads", replace(base, threads=threads, this_run=run_once(name)),
                 env={**menv, **wenv}, cwd=at, timeout=s.job_timeout, gil=mode, rep=rep, junit=f"junit/{name}.xml",
                 idle=idle)
    if s.confirm and not ctx.tsan:
        _confirm(ctx, base_env)
    return version, {}


def _deps_sh(vpy: str, deps: Sequence[str], keep: Sequence[str] = ()) -> str:
    """Install the inferred test deps together; when that fails (one of them has no build for
    this interpreter), each alone, so the others are there and only the tests needing the
    missing one cannot run. Exits 1 naming each that did not install (``NOT_INSTALLED``).

    ``keep``: the harness's pinned test tools, asked for again in every install, so a dep
    pinned against them cannot replace what pytest needs (itsdangerous 2.2.0's test
    requirements pin pluggy 1.4.0, and pytest 8.4.2 then did not start): such a dep is not
    installed, and said. ``--prefer-binary``: they are the tests' tools, not what is tested, so
    the newest release with a wheel for this interpreter beats a newer one that must be built
    (hypothesis 6.170 ships a Rust extension and no cp313t wheel; older pure wheels install)."""
    pip = shlex.join([vpy, "-m", "pip", "install", "--prefer-binary"])
    tools = f" {shlex.join(keep)}" if keep else ""
    alone = "; ".join(f"{pip} {shlex.quote(d)}{tools} || missing=\"$missing {Requirement(d).name}\""
                      for d in deps)
    return (f"{pip} {shlex.join(deps)}{tools} && exit 0; "
            f"echo 'ft-harness: together they did not install; one at a time:'; missing=; {alone}; "
            f"[ -z \"$missing\" ] && exit 0; echo \"{NOT_INSTALLED}$missing\"; exit 1")


def _confirm(ctx: _Ctx, base_env: dict[str, str]) -> None:
    """Re-run each red finding's test alone (verdict.confirm), within settings.confirm_budget."""
    s, ws = ctx.job.settings, ctx.ws
    found = verdict.decide(ctx.phases, settings=s, claims=False).findings
    by_name = {p.name: p for p in ctx.phases}
    end = min(time.monotonic() + s.confirm_budget, ctx.deadline)  # never past the job timeout
    chosen = list(enumerate(verdict.confirm_targets(found, ctx.phases), 1))
    for rep in range(1, s.confirm + 1):  # round-robin: every target gets its first runs first
        for i, target in chosen:
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
                cmd = replace(src.test_command, paths=(target.test_id,), this_run=(
                    "--timeout-method=thread", f"--junitxml={ws.path('junit', f'{name}.xml')}"))
                _run(ctx, name, "confirm", cmd, env={**base_env, "PYTHON_GIL": str(mode)}, cwd=src.cwd,
                     timeout=min(left, s.test_timeout + 30), gil=mode, rep=rep, junit=f"junit/{name}.xml")


def _from_installed(ctx: _Ctx, config: str, found: tuple[str, str]) -> tuple[Job, str, str, str]:
    """The job set to run its tests from site-packages (``_site_packages``): (job, where they
    run, the tests' path there, the source's pytest config file or ""); the test setup says so."""
    sp, rel = found
    at = ctx.ws.path(*sp.split("/"))
    pkg = ctx.job.package
    args = pkg.pytest_args
    if ctx.test_setup.get("pytest_args_from") == "inferred":  # no source tree to shadow the build now
        args = tuple(a for a in args if a != "--import-mode=append")
    why = (f"tests run from the installed copy: site-packages/{rel} (they sit inside the package, "
           "which the install ships; from the source tree pytest would load the source's package)")
    ctx.test_setup = {**ctx.test_setup, "tests": rel, "pytest_args": list(args),
                      "sources": [s for s in ctx.test_setup.get("sources", []) if not s.startswith("--import-mode=append")]
                      + [why]}
    ctx.job = replace(ctx.job, package=replace(pkg, pytest_args=args))
    return ctx.job, at, rel, config
