"""harness.job.job.run_job, the chain of a job's stages (source -> suite setup -> install -> probe
-> test runs -> confirm), on a scripted fake backend (the style of test_runner.py's FakeBackend):
its ``run`` writes what a real phase would have written (a fixture's captured logs and JUnit files,
tests/data/fixtures/<fixture>/) and returns the scripted exit code. The packages are local
fixture trees (tests/fixtures/packages), so no phase fetches from the index."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import os
import shutil
import tarfile
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pytest

from harness.backends.base import Workspace
from harness.config import indexclient, matrix, plan
from harness.core import wsfs
from harness.core.model import Exec, InterpreterInfo, JobResult, Phase
from harness.job import fetch
from harness.job.job import run_job
from harness.parse import parse_phase, pipreport
from harness.testsetup.compiled import compiled_evidence
from harness.verdict import artifact

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ROOT / "tests" / "fixtures" / "packages"
CAPTURED = ROOT / "tests" / "data" / "fixtures"
INFO = InterpreterInfo(name="cpython3.13t", version="3.13.5", key="interp-key-1")
TSAN = InterpreterInfo(name="cpython3.13t-tsan", version="3.13.5", key="interp-key-tsan", sanitizer="thread")


@dataclass
class Call:
    name: str  # the phase, from its log's name
    argv: list[str]
    env: dict[str, str]
    cwd: str
    network: bool


@dataclass
class FakeBackend:
    """The Backend protocol. ``run`` appends the captured ``<phase>.log`` (``alias`` maps a phase
    to the captured one it reuses) to the phase's log, writes the captured ``<phase>.xml`` where
    ``--junitxml`` points, runs ``effects[phase]`` (what else the command would leave) and
    returns ``exits[phase]`` (0 when not scripted). The captured run's paths become this one's."""

    captured: Path
    exits: dict[str, int] = field(default_factory=dict)
    effects: dict[str, Callable[[Path], None]] = field(default_factory=dict)
    alias: Callable[[str], str] = staticmethod(lambda name: name)  # type: ignore[assignment]
    was_at: str = "/tmp/h2/w/ft_clean/src"  # the captured run's source tree: the logs name it
    calls: list[Call] = field(default_factory=list)
    name: str = "fake"
    base_path: str = "/usr/bin:/bin"

    def open(self, job_id: str, host_root: Path, python: str, source: str) -> Workspace:
        return Workspace(host_root=host_root, root=str(host_root), python=python)

    def run(
        self,
        ws: Workspace,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: str,
        timeout: float,
        log: Path,
        network: bool,
        idle: float = 0,
    ) -> Exec:
        name = log.stem
        self.calls.append(Call(name=name, argv=argv, env=env, cwd=cwd, network=network))
        was = self.alias(name)
        if (self.captured / f"{was}.log").is_file():
            with log.open("a") as f:
                f.write((self.captured / f"{was}.log").read_text().replace(self.was_at, cwd))
        junit = next((a.split("=", 1)[1] for a in argv if a.startswith("--junitxml=")), "")
        if junit and (self.captured / f"{was}.xml").is_file():
            shutil.copyfile(self.captured / f"{was}.xml", junit)
        if name in self.effects:
            self.effects[name](ws.host_root)
        return Exec(exit_code=self.exits.get(name, 0), duration=0.1)

    def reproduce_command(self, ws: Workspace, command: str, *, network: bool) -> str:
        return command

    def close(self, ws: Workspace) -> None:
        return None

    def cancel(self) -> None:
        return None

    def healthy(self) -> bool:
        return True

    @property
    def ran(self) -> list[str]:
        return [c.name for c in self.calls]


def make_job(path: Path, settings: str = "{repeat: 2, confirm: 0}", name: str = "") -> plan.Job:
    spec = matrix.loads(
        f'settings: {settings}\ninterpreters: [{{name: cpython3.13t, version: "3.13.5", '
        f'source: "debian:trixie"}}]\npackages: [{{name: {name or path.name}, path: {path}}}]\n'
    )
    (job,) = plan.make_plan(spec)
    return job


def fake_fetch(monkeypatch, tree: Path = PACKAGES / "ft_clean", *, files: tuple[str, ...] = ()) -> None:
    """``fetch.sdist`` faked: ``tree`` packed as ft_clean 1.0's sdist, its sha256 checked as the
    index gave it, and ``files`` the release's files on the page the fetch read."""

    def sdist(name: str, spec: str, dest: Path) -> fetch.Fetched:
        dest.mkdir(parents=True, exist_ok=True)
        path = dest / "ft_clean-1.0.tar.gz"
        with tarfile.open(path, "w:gz") as tar:
            tar.add(tree, arcname="ft_clean-1.0")
        data = path.read_bytes()
        return fetch.Fetched(
            version="1.0",
            path=path,
            url="https://example.invalid/ft_clean-1.0.tar.gz",
            sha256=hashlib.sha256(data).hexdigest(),
            size=len(data),
            files=files,
        )

    monkeypatch.setattr(fetch, "sdist", sdist)


def pypi_job(name: str, version: str, settings: str = "{repeat: 2, confirm: 0}") -> plan.Job:
    """A job of a release on the index (the test fakes ``fetch.sdist``)."""
    spec = matrix.loads(
        f'settings: {settings}\ninterpreters: [{{name: cpython3.13t, version: "3.13.5", '
        f'source: "debian:trixie"}}]\npackages: [{{name: {name}, version: "{version}"}}]\n'
    )
    (job,) = plan.make_plan(spec)
    return job


def go(
    job: plan.Job, backend: FakeBackend, out: Path, interp: InterpreterInfo = INFO, tarball: str = ""
) -> tuple[JobResult, list[tuple[str, str]]]:
    steps: list[tuple[str, str]] = []
    res = run_job(
        job,
        interp=interp,
        python="/fake/bin/python3.13t",
        backend=backend,
        out=out,
        key="k",
        progress=lambda job_id, step: steps.append((job_id, step)),
        tarball=tarball,
    )
    return res, steps


def clean_backend(**kw) -> FakeBackend:
    return FakeBackend(captured=CAPTURED / "ft_clean", **kw)


# settings.gil_on: targeted (the default): nothing red with the GIL off, so no GIL-on run
NORMAL = ["install", "probe", "plain-gil0", "collect", "threads-gil0-r1", "threads-gil0-r2"]
GIL_ON = ["plain-gil1", "threads-gil1-r1", "threads-gil1-r2"]


def test_a_normal_job_runs_its_stages_in_order(tmp_path: Path) -> None:
    backend = clean_backend()
    res, steps = go(
        make_job(PACKAGES / "ft_clean", settings="{repeat: 2, confirm: 0, gil_on: full}"), backend, tmp_path / "out"
    )
    NORMAL = [*globals()["NORMAL"], *GIL_ON]  # noqa: N806 (gil_on: full, the suite in both modes)
    assert backend.ran == NORMAL
    assert [p.name for p in res.phases] == NORMAL
    assert [s for _, s in steps] == NORMAL  # the progress callback hears every phase start
    assert res.verdict == "compatible", [f.message for f in res.findings]
    assert (res.source, res.requested) == ("local", str(PACKAGES / "ft_clean"))
    calls = {c.name: c for c in backend.calls}
    src = str(tmp_path / "out" / "work" / res.job_id / "src" / "pkg")
    assert src in calls["install"].argv[2] and calls["install"].network
    assert not calls["plain-gil0"].network
    assert (calls["plain-gil0"].env["PYTHON_GIL"], calls["plain-gil1"].env["PYTHON_GIL"]) == ("0", "1")
    assert calls["plain-gil0"].cwd == src  # the tests run from the source tree
    assert "--collect-only" in calls["collect"].argv
    assert "--parallel-threads=4" in calls["threads-gil0-r1"].argv
    assert res.test_setup.tests == "tests" and res.test_setup.tests_from == "inferred"
    assert res.phases[2].junit and res.phases[2].counts == {"passed": 6}


def test_a_build_failure_stops_before_the_probe_and_the_tests(tmp_path: Path) -> None:
    backend = FakeBackend(captured=CAPTURED / "ft_nobuild", exits={"install": 1})
    res, _ = go(make_job(PACKAGES / "ft_nobuild"), backend, tmp_path / "out")
    assert backend.ran == ["install"]
    assert res.verdict == "build-failure"
    assert "does not support free-threaded CPython" in res.findings[0].excerpt


def test_no_tests_in_the_source_stops_after_the_probe(tmp_path: Path) -> None:
    backend = clean_backend()
    res, _ = go(make_job(PACKAGES / "ft_notests"), backend, tmp_path / "out")
    assert backend.ran == ["install", "probe"]
    assert [p.name for p in res.phases] == ["install", "probe"]


def test_a_fetch_that_finds_no_sdist_stops_the_job(tmp_path: Path, monkeypatch) -> None:
    def no_sdist(name: str, spec: str, dest: Path) -> None:
        raise fetch.NoSdist(f"{name} {spec}: no sdist on the index")

    monkeypatch.setattr(fetch, "sdist", no_sdist)
    job = pypi_job("nosuchpkg", "==1.2.3")
    backend = clean_backend()
    res, steps = go(job, backend, tmp_path / "out")
    assert backend.ran == []  # the host fetched, nothing ran in the backend
    assert [p.name for p in res.phases] == ["fetch"] and [s for _, s in steps] == ["fetch"]
    assert (res.verdict, res.version) == ("build-failure", "1.2.3")  # the pin still names it


def _with_test_deps(tmp_path: Path) -> Path:
    """ft_clean with inferred test dependencies: a test extra."""
    pkg = tmp_path / "ft_clean"
    shutil.copytree(PACKAGES / "ft_clean", pkg)
    text = (pkg / "pyproject.toml").read_text()
    (pkg / "pyproject.toml").write_text(
        text.replace(
            'license = "MIT"\n', 'license = "MIT"\n\n[project.optional-dependencies]\ntest = ["six", "idna>=999"]\n', 1
        )
    )
    return pkg


def test_a_released_package_is_probed_too(tmp_path: Path, monkeypatch) -> None:
    """A PyPI job (its sdist's version known from the fetch) runs the GIL probe like a local one:
    the first chain skipped it whenever the sdist named a version (the probe only filled in a
    missing version), so no PyPI package was probed for a GIL re-enable."""

    fake_fetch(monkeypatch)
    job = pypi_job("ft_clean", "==1.0")
    backend = clean_backend()
    res, _ = go(job, backend, tmp_path / "out")
    assert backend.ran[:2] == ["install", "probe"], backend.ran
    assert res.phase("probe") is not None and res.version == "1.0" and res.sdist_sha256


def test_test_deps_that_do_not_install_are_a_setup_problem_and_the_runs_go_on(tmp_path: Path) -> None:
    def missing(root: Path) -> None:  # what the step's script records (stages._deps_sh)
        (root / "logs" / "test-deps.not-installed").write_text("idna\n")

    backend = clean_backend(exits={"test-deps": 1}, effects={"test-deps": missing})
    res, _ = go(make_job(_with_test_deps(tmp_path)), backend, tmp_path / "out")
    # the probe of the package as a user installs it, then the test deps, then the probe again (#57)
    assert backend.ran == ["install", "probe", "test-deps", "probe-test-deps", *NORMAL[2:]]
    deps = next(p for p in res.phases if p.name == "test-deps")
    assert [(s.kind, s.name) for s in deps.setup] == [("not-installed", "idna")]
    assert "idna>=999" in deps.command[2] and "test-deps.not-installed" in deps.command[2]
    (f,) = [f for f in res.findings if f.phase == "test-deps"]
    assert f.kind == "setup-error"
    assert f.message.startswith(
        "setup: the inferred test dependencies did not install: not installed: idna (the others are); "
    ), f.message
    assert res.test_setup.requires == ("six", "idna>=999")


def test_test_deps_that_install_leave_no_setup_problem(tmp_path: Path) -> None:
    backend = clean_backend()
    res, _ = go(make_job(_with_test_deps(tmp_path)), backend, tmp_path / "out")
    deps = next(p for p in res.phases if p.name == "test-deps")
    assert deps.ok and deps.setup == ()
    assert res.verdict == "compatible"


def _tarball(tmp_path: Path) -> str:
    """A CPython source tarball with its TSan suppressions file."""
    path = tmp_path / "Python-3.13.5.tar.xz"
    with tarfile.open(path, "w:xz") as tf:
        data = b"race:_PyImport_Fake\n"
        info = tarfile.TarInfo("Python-3.13.5/Tools/tsan/suppressions_free_threading.txt")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return str(path)


def test_under_tsan_the_threaded_runs_are_tsan_runs_and_nothing_is_confirmed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FT_HARNESS_KEEP_WORKSPACES", "1")  # its workspace is read after the job
    alias = {f"tsan-gil{m}-r{r}": f"threads-gil{m}-r{r}" for m in (0, 1) for r in (1, 2)}
    backend = clean_backend(alias=lambda name: alias.get(name, name))
    res, _ = go(
        make_job(PACKAGES / "ft_clean", settings="{repeat: 2, confirm: 5}"),
        backend,
        tmp_path / "out",
        interp=TSAN,
        tarball=_tarball(tmp_path),
    )
    assert backend.ran == [
        "install",
        "probe",
        "plain-gil0",
        "collect",
        "tsan-gil0-r1",
        "tsan-gil0-r2",
        "plain-gil1",
        "tsan-gil1-r1",
        "tsan-gil1-r2",
    ]
    calls = {c.name: c for c in backend.calls}
    assert "-fsanitize=thread" in calls["install"].argv[2]  # the package built for TSan
    assert "TSAN_OPTIONS" in calls["plain-gil0"].env and "TSAN_OPTIONS" in calls["tsan-gil1-r2"].env
    assert calls["tsan-gil0-r1"].argv[calls["tsan-gil0-r1"].argv.index("-p", 5) + 1] == "tsan_marker"
    assert "FT_HARNESS_WATCHDOG" not in " ".join(calls["plain-gil0"].env)  # no watchdog under TSan
    supp = (tmp_path / "out" / "work" / res.job_id / "tsan.supp").read_text()
    assert "race:_PyImport_Fake" in supp
    assert res.verdict == "compatible", [f.message for f in res.findings]


def test_a_red_finding_is_confirmed_alone_after_the_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FT_HARNESS_KEEP_WORKSPACES", "1")  # its workspace is read after the job
    captured = tmp_path / "captured"
    shutil.copytree(CAPTURED / "ft_clean", captured)
    test = "test_shared_registry_keeps_every_value"  # fails in one threaded run only: a race, confirmed alone
    xml = (captured / "threads-gil0-r1.xml").read_text()
    (captured / "threads-gil0-r1.xml").write_text(
        xml.replace(
            f'name="{test}" time="0.055" />',
            f'name="{test}" time="0.055"><failure message="AssertionError: lost an update">lost</failure></testcase>',
        )
    )
    text = (captured / "threads-gil0-r1.log").read_text()
    (captured / "threads-gil0-r1.log").write_text(
        text.replace(f"PASSED tests/test_registry.py::{test}", f"FAILED tests/test_registry.py::{test}").replace(
            "6 passed", "1 failed, 5 passed"
        )
    )
    backend = FakeBackend(captured=captured, exits={"threads-gil0-r1": 1})
    res, _ = go(make_job(PACKAGES / "ft_clean", settings="{repeat: 1, confirm: 1}"), backend, tmp_path / "out")
    assert backend.ran == [
        "install",
        "probe",
        "plain-gil0",
        "collect",
        "threads-gil0-r1",
        "plain-gil1",
        "threads-gil1-r1",
        "confirm1-gil0-r1",
        "confirm1-gil1-r1",
    ]
    calls = {c.name: c for c in backend.calls}
    confirm = calls["confirm1-gil0-r1"]
    assert confirm.argv[-1] == f"tests/test_registry.py::{test}" and "--timeout-method=thread" in confirm.argv
    assert confirm.env["PYTHON_GIL"] == "0" and "PATH" in confirm.env
    # gil_on: targeted: the GIL-on runs were given the one red test, the confirm runs alone are as before
    work = tmp_path / "out" / "work" / res.job_id
    assert (work / "logs" / "gil-on-tests.txt").read_text() == f"tests/test_registry.py::{test}\n"
    only = ["-p", "ft_harness_only", f"--ft-harness-only={work}/logs/gil-on-tests.txt"]
    for name in ("plain-gil1", "threads-gil1-r1"):
        argv = calls[name].argv
        assert argv[argv.index("-p", argv.index("-n")) :][:3] == only, argv
        assert res.phase(name).subset == 1  # type: ignore[union-attr]
    assert not any(
        a.startswith("--ft-harness-only")
        for c in ("plain-gil0", "threads-gil0-r1", "confirm1-gil1-r1")
        for a in calls[c].argv
    )
    assert res.gil_on is not None and (res.gil_on.ran, res.gil_on.tests) == ("tests", 1)
    assert res.gil_on.file == f"work/{res.job_id}/logs/gil-on-tests.txt"
    assert (work / "inner" / "watchdog" / "ft_harness_only.py").is_file()  # copied in at job start
    assert not any("ft_harness_only" in f.reproduce for f in res.findings)  # the plugin is that run's only
    full, _ = go(
        make_job(PACKAGES / "ft_clean", settings="{repeat: 1, confirm: 1, gil_on: full}"),
        FakeBackend(captured=captured, exits={"threads-gil0-r1": 1}),
        tmp_path / "full",
    )
    assert res.verdict == full.verdict and _said(res) == _said(full)
    assert full.gil_on is not None and (full.gil_on.ran, full.gil_on.why) == ("suite", "settings.gil_on: full")


def _said(res: JobResult) -> list[tuple[str, str, tuple[int, ...], int, int, dict[str, str]]]:
    """What the findings claim: kind, test, modes, k/R and the runs alone."""
    return [(f.kind, f.test_id, f.modes, f.count, f.runs, dict(f.confirmed)) for f in res.findings]


def test_with_nothing_red_with_the_gil_off_no_gil_on_run_happens_and_the_result_says_why(tmp_path: Path) -> None:
    backend = clean_backend()
    res, _ = go(make_job(PACKAGES / "ft_clean"), backend, tmp_path / "out")
    assert backend.ran == NORMAL  # the GIL-off runs only
    assert res.gil_on is not None and res.gil_on.ran == "none"
    assert res.gil_on.why.startswith("nothing failed, crashed or hung in the 3 GIL-off runs"), res.gil_on.why
    assert res.verdict == "compatible", [f.message for f in res.findings]
    assert list(res.coverage) == ["gil0"]  # no coverage claimed for a mode that did not run
    assert not any(1 in f.modes for f in res.findings)
    full, _ = go(
        make_job(PACKAGES / "ft_clean", settings="{repeat: 2, confirm: 0, gil_on: full}"),
        clean_backend(),
        tmp_path / "full",
    )
    assert (full.verdict, full.qualifier, _said(full)) == (res.verdict, res.qualifier, _said(res))
    assert JobResult.from_dict(res.to_dict()).gil_on == res.gil_on


def test_when_the_gil_off_runs_did_not_run_the_suite_the_gil_on_runs_run_all_of_it(tmp_path: Path) -> None:
    captured = tmp_path / "captured"
    shutil.copytree(CAPTURED / "ft_clean", captured)
    log = (captured / "plain-gil0.log").read_text()  # killed mid-suite: no summary line, no JUnit
    (captured / "plain-gil0.log").write_text(log[: log.index("PASSED") + 6])
    (captured / "plain-gil0.xml").unlink()
    backend = FakeBackend(captured=captured, exits={"plain-gil0": -9})
    res, _ = go(make_job(PACKAGES / "ft_clean"), backend, tmp_path / "out")
    assert backend.ran == [*NORMAL, *GIL_ON]
    assert not any("--ft-harness-only" in " ".join(c.argv) for c in backend.calls)
    assert res.gil_on is not None and res.gil_on.ran == "suite"
    assert res.gil_on.why.startswith("plain-gil0 did not run the suite through"), res.gil_on.why
    assert all(p.subset == 0 for p in res.phases)


def test_tests_inside_the_package_run_from_site_packages_when_the_install_shipped_them(tmp_path: Path) -> None:
    def ship(root: Path) -> None:  # what pip leaves: the package, its tests inside it
        (root / "venv" / "lib" / "python3.13t" / "site-packages" / "inpkg" / "tests").mkdir(parents=True)

    backend = clean_backend(effects={"install": ship})
    res, _ = go(make_job(PACKAGES / "ft_inpkg"), backend, tmp_path / "out")
    work = tmp_path / "out" / "work" / res.job_id
    plain = {c.name: c for c in backend.calls}["plain-gil0"]
    assert plain.cwd == str(work / "venv" / "lib" / "python3.13t" / "site-packages")
    assert plain.argv[-1] == "inpkg/tests"
    assert plain.argv[plain.argv.index("-c") + 1] == f"{work}/src/pkg/pyproject.toml"  # the source's config
    assert "--import-mode=append" not in plain.argv  # no source tree beside them to shadow the build
    assert res.test_setup.tests == "inpkg/tests"
    assert res.test_setup.sources[-1].startswith("tests run from the installed copy: site-packages/inpkg/tests")
    assert not any(s.startswith("--import-mode=append") for s in res.test_setup.sources)


def test_tests_inside_the_package_run_from_the_tree_when_the_install_did_not_ship_them(tmp_path: Path) -> None:
    backend = clean_backend()
    res, _ = go(make_job(PACKAGES / "ft_inpkg"), backend, tmp_path / "out")
    plain = {c.name: c for c in backend.calls}["plain-gil0"]
    assert plain.cwd == str(tmp_path / "out" / "work" / res.job_id / "src" / "pkg")
    assert res.test_setup.tests == plain.argv[-1]


# ------------------------------------------------------------------ the test-deps record


def test_the_test_deps_record_is_read_onto_its_phase_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "test-deps.log").write_text("ERROR: No matching distribution found for idna>=999\n")
    (tmp_path / "logs" / "test-deps.not-installed").write_text("idna\nidna\n$(rm -rf)\n trustme \n")
    phase = parse_phase(Phase(name="test-deps", kind="setup", exit_code=1, log="logs/test-deps.log"), tmp_path)
    assert [(s.kind, s.name) for s in phase.setup] == [("not-installed", "idna"), ("not-installed", "trustme")]
    ok = parse_phase(Phase(name="test-deps", kind="setup", exit_code=0, log="logs/none.log"), tmp_path)
    assert ok.setup == ()


def test_a_result_written_before_the_record_reads_its_log_line() -> None:
    old = {
        "name": "test-deps",
        "kind": "setup",
        "exit_code": 1,
        "setup": [],
        "excerpt": "Successfully installed idna-3.21\nft-harness: not installed:  trustme six\nexit 1",
    }
    assert [(s.kind, s.name) for s in Phase.from_dict(old).setup] == [
        ("not-installed", "trustme"),
        ("not-installed", "six"),
    ]
    again = Phase.from_dict(Phase.from_dict(old).to_dict())  # written back: kept as data
    assert [s.name for s in again.setup] == ["trustme", "six"]
    other = {**old, "kind": "plain"}  # only a test-deps phase's line is read
    assert Phase.from_dict(other).setup == ()


def test_from_site_packages_the_harness_import_mode_goes_whatever_set_the_args() -> None:
    """--import-mode=append is for the source tree (harness.testsetup.suitesetup adds it where the
    tree would shadow the build); the installed copy's args have none, also when a recipe gave
    pytest args ("recipe + inferred"), and keep it only when matrix.yaml's own args name it."""
    from harness.core.suiterecord import TestSetup
    from harness.testsetup.suitesetup import _installed

    args = ("-p", "no:randomly", "--import-mode=append")
    for where in ("inferred", "recipe", "recipe + inferred"):
        run = _installed("pkg/tests", TestSetup(pytest_args=args, pytest_args_from=where))
        assert run.pytest_args == ("-p", "no:randomly"), where
    kept = _installed("pkg/tests", TestSetup(pytest_args=args, pytest_args_from="matrix.yaml"))
    assert kept.pytest_args == args


WHEEL = "ft_clean-1.0-cp313-cp313t-manylinux_2_28_x86_64.whl"  # the compiled wheel the index lists


def _compiled_release(tmp_path: Path, monkeypatch) -> None:
    """ft_clean 1.0 on the index (its pyproject.toml names extension modules: a compiled project,
    verdict.artifact) whose index page lists a compiled CPython wheel of the release (so its pure
    wheel is a fallback, not all CPython gets)."""
    fake_fetch(monkeypatch, files=(WHEEL,))


def _pure_wheel_installed(root: Path) -> None:  # pip's --report: the pure wheel of the package
    (root / "logs" / "install-report.json").write_text(
        '{"install": [{"metadata": {"name": "ft_clean", "version": "1.0"}, "download_info": '
        '{"url": "https://example.invalid/ft_clean-1.0-py3-none-any.whl"}}]}'
    )


def test_a_compiled_projects_pure_wheel_is_on_the_install_phase_and_rebuilt_from_the_sdist(
    tmp_path: Path, monkeypatch
) -> None:
    _compiled_release(tmp_path, monkeypatch)
    backend = clean_backend(effects={"install": _pure_wheel_installed})
    res, _ = go(pypi_job("ft_clean", "==1.0"), backend, tmp_path / "out")
    assert backend.ran[:3] == ["install", artifact.REBUILD, "probe"], backend.ran
    install = res.phase("install")
    assert install is not None
    assert [(s.kind, s.name, s.where) for s in install.setup] == [
        (
            "pure-fallback",
            "ft_clean-1.0-py3-none-any.whl",
            f"pyproject.toml (declares extension modules); the index has {WHEEL}",
        )
    ]
    assert res.phase(artifact.REBUILD).kind == "install"  # type: ignore[union-attr]


def test_a_kept_pure_wheel_is_recorded_and_nothing_is_rebuilt(tmp_path: Path, monkeypatch) -> None:
    _compiled_release(tmp_path, monkeypatch)
    backend = clean_backend(effects={"install": _pure_wheel_installed})
    res, _ = go(
        pypi_job("ft_clean", "==1.0", settings="{repeat: 1, confirm: 0, fallback_wheel: keep}"),
        backend,
        tmp_path / "out",
    )
    assert backend.ran[:2] == ["install", "probe"], backend.ran
    assert [s.kind for s in res.phase("install").setup] == ["pure-fallback"]  # type: ignore[union-attr]


def test_a_failed_install_reads_no_report_and_records_no_fallback(tmp_path: Path, monkeypatch) -> None:
    _compiled_release(tmp_path, monkeypatch)
    backend = clean_backend(exits={"install": 1}, effects={"install": _pure_wheel_installed})
    res, _ = go(pypi_job("ft_clean", "==1.0"), backend, tmp_path / "out")
    assert backend.ran == ["install"]
    assert res.phase("install").setup == ()  # type: ignore[union-attr]


def test_the_results_version_is_decided_in_one_place() -> None:
    """job.result_version: the sdist's, else the probe's (a local tree has no sdist), else what a
    pinned spec names (the fetch failed, or the job was not run); a local tree is never pinned."""
    from harness.job.job import result_version

    pinned, ranged, local = pypi_job("attrs", "==25.1.0"), pypi_job("attrs", ">=25"), make_job(PACKAGES / "ft_clean")
    assert result_version(pinned, "25.1.0", "25.1.0.dev0") == "25.1.0"
    assert result_version(pinned, "", "25.1.1") == "25.1.1"
    assert result_version(pinned, "", "") == "25.1.0"
    assert result_version(ranged, "", "") == ""
    assert result_version(local, "", "1.0") == "1.0" and result_version(local, "", "") == ""


def test_a_local_trees_version_is_the_one_the_probe_imported(tmp_path: Path) -> None:
    def probed(root: Path) -> None:  # what harness/_inner/probe.py writes
        (root / "logs" / "probe.json").write_text('{"dist": "ft_clean", "version": "0.3.1", "gil_enabled": false}')

    res, _ = go(make_job(PACKAGES / "ft_clean"), clean_backend(effects={"probe": probed}), tmp_path / "out")
    assert res.phase("probe").probe.version == "0.3.1"  # type: ignore[union-attr]
    assert res.version == "0.3.1"
    res, _ = go(make_job(PACKAGES / "ft_clean"), clean_backend(), tmp_path / "again")
    assert res.version == ""  # no probe.json: a local tree names no version


IDENTITY = (
    "job_id",
    "key",
    "package",
    "requested",
    "source",
    "interpreter",
    "backend",
    "harness_version",
    "notes",
    "links",
)


def test_every_result_starts_from_its_jobs_identity(tmp_path: Path) -> None:
    """job.identity: the fields that name a result, the same in a job's own result and in the
    runner's infra-error result of the same job."""
    from harness import __version__
    from harness.backends.base import Prepared
    from harness.job import runner
    from harness.job.job import identity

    job = make_job(PACKAGES / "ft_clean")
    ident = identity(job, key="k", interp=INFO, backend="fake")
    assert (ident.job_id, ident.package, ident.requested, ident.source, ident.harness_version) == (
        job.job_id,
        "ft_clean",
        str(PACKAGES / "ft_clean"),
        "local",
        __version__,
    )
    res, _ = go(job, clean_backend(), tmp_path / "out")
    infra = runner.infra_result(
        job, "k", Prepared(info=INFO, python="/fake/bin/python3.13t", cache_hit=True), "fake", "the backend went away"
    )
    for got in (res, infra):
        assert {n: getattr(got, n) for n in IDENTITY} == {n: getattr(ident, n) for n in IDENTITY}
    assert res.version == "" and res.phases and infra.verdict == "infra-error" and not infra.phases


# ------------------------------------------------------------------ each outside document once (#45)


class _Index(http.server.BaseHTTPRequestHandler):
    """A PEP 691 index on loopback: ``routes`` maps a path to its body; each request is counted."""

    routes: dict[str, bytes] = {}
    counts: Counter[str] = Counter()

    def do_GET(self) -> None:  # noqa: N802
        body = self.routes.get(self.path)
        self.counts[f"requested {self.path}"] += 1
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def _fake_index(monkeypatch, routes: dict[str, bytes]) -> Iterator[Counter[str]]:
    """$FT_HARNESS_INDEX_URL at an index on loopback serving ``routes``; its requests counted."""
    counts: Counter[str] = Counter()
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), type("Index", (_Index,), {"counts": counts, "routes": routes})
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv(indexclient.INDEX_ENV, f"http://127.0.0.1:{server.server_port}/simple/")
    try:
        yield counts
    finally:
        server.shutdown()
        server.server_close()


def _counted(monkeypatch, counts: Counter[str]) -> None:
    """Count each document from outside where it enters the harness, into ``counts`` (the index's
    requests are counted by the index itself). One place: a further document's counter is one
    more ``count(...)`` line here (the sdist's config files: each read of each file)."""

    def count(owner: object, attr: str, key: Callable[..., str | None]) -> None:
        real = getattr(owner, attr)

        def counted(*args, **kwargs):
            if (name := key(*args, **kwargs)) is not None:
                counts[name] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, attr, counted)

    # every read below the workspace goes through wsfs.open_beneath (JobDir.read, read_beneath)
    count(
        wsfs,
        "open_beneath",
        lambda dirfd, rel, flags, mode=0o644: (
            "read install-report.json"
            if (PurePosixPath(rel).name == "install-report.json" and flags & os.O_ACCMODE == os.O_RDONLY)
            else None
        ),
    )
    count(pipreport, "parse_pip_report", lambda raw: "parsed a pip report")


@pytest.mark.parametrize("compiled", [False, True])
def test_one_job_requests_the_index_page_once_and_parses_pips_report_once(
    tmp_path: Path, monkeypatch, compiled: bool
) -> None:
    """#45, acceptance 2: the project's page is read once, by the fetch, and what it lists for the
    release travels on the Source to the wheel column; pip's --report is read and parsed once,
    onto the install phase, whatever reads it after (the fallback, the wheel column, the store).
    ``compiled``: ft_clean as it is (a C extension: the suite setup asks which wheels the index
    has), else without its extension."""
    tree = tmp_path / "ft_clean"
    shutil.copytree(PACKAGES / "ft_clean", tree)
    if not compiled:
        (tree / "src" / "ft_clean" / "_core.c").unlink()
        text = (tree / "pyproject.toml").read_text()
        (tree / "pyproject.toml").write_text(
            text.replace(
                '[tool.setuptools]\next-modules = [{ name = "ft_clean._core", sources = ["src/ft_clean/_core.c"] }]\n',
                "",
            )
        )
        assert not compiled_evidence(tree)
    sdist = tmp_path / "ft_clean-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as tar:
        tar.add(tree, arcname="ft_clean-1.0")
    page = {
        "meta": {"api-version": "1.0"},
        "name": "ft-clean",
        "files": [
            {
                "filename": sdist.name,
                "url": f"../../files/{sdist.name}",
                "hashes": {"sha256": hashlib.sha256(sdist.read_bytes()).hexdigest()},
            },
            {"filename": "ft_clean-1.0-py3-none-any.whl", "url": "../../files/ft_clean-1.0-py3-none-any.whl"},
            {"filename": "ft_clean-0.9-cp313-cp313t-manylinux_2_28_x86_64.whl", "url": "../../files/x.whl"},
        ],
    }

    def report(root: Path) -> None:  # what pip's --report says it installed: the package, from its sdist
        (root / "logs" / "install-report.json").write_text(
            json.dumps(
                {
                    "version": "1",
                    "install": [
                        {
                            "metadata": {"name": "ft_clean", "version": "1.0"},
                            "download_info": {"url": f"file://{root}/sdist/{sdist.name}"},
                        }
                    ],
                }
            )
        )

    backend = clean_backend(effects={"install": report})
    routes = {"/simple/ft-clean/": json.dumps(page).encode(), f"/files/{sdist.name}": sdist.read_bytes()}
    with _fake_index(monkeypatch, routes) as counts:
        _counted(monkeypatch, counts)
        res, _ = go(pypi_job("ft_clean", "==1.0"), backend, tmp_path / "out")
    assert backend.ran == NORMAL and res.verdict == "compatible", [f.message for f in res.findings]
    assert counts == {
        "requested /simple/ft-clean/": 1,
        f"requested /files/{sdist.name}": 1,
        "read install-report.json": 1,
        "parsed a pip report": 1,
    }
    assert res.wheel is not None  # both read into the wheel column: from the page, from the report
    assert (res.wheel.available, res.wheel.installed, res.wheel.installed_file) == (
        "pure",
        "built from sdist",
        sdist.name,
    )


def test_a_fetch_that_finds_no_sdist_reads_the_wheel_column_from_the_same_page(tmp_path: Path, monkeypatch) -> None:
    """No sdist of the pinned release: the job stops at the fetch, and the result's wheel column
    says what the index has for that release from the page the fetch read, not from a second request."""
    page = {
        "meta": {"api-version": "1.0"},
        "name": "wheelonly",
        "files": [
            {"filename": "wheelonly-1.2.3-py3-none-any.whl", "url": "../../files/wheelonly-1.2.3-py3-none-any.whl"},
            {"filename": "wheelonly-1.0.tar.gz", "url": "../../files/wheelonly-1.0.tar.gz"},
        ],
    }
    backend = clean_backend()
    with _fake_index(monkeypatch, {"/simple/wheelonly/": json.dumps(page).encode()}) as counts:
        res, _ = go(pypi_job("wheelonly", "==1.2.3"), backend, tmp_path / "out")
    assert backend.ran == [] and [p.name for p in res.phases] == ["fetch"] and res.version == "1.2.3"
    assert counts == {"requested /simple/wheelonly/": 1}
    assert res.wheel is not None and res.wheel.available == "pure"
