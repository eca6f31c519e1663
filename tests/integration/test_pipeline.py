"""The spine end to end: real interpreter, real PyPI package, real local package, resume, SIGINT.

The run with the PyPI package (iniconfig) is on the docker backend: a release from the index
never builds or runs unisolated on the CI runner (#46; tests/conftest.py's ``cli`` refuses it);
the runs of our own fixtures alone stay on the local backend."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from harness.interpreters import images
from tests.conftest import FIXTURES, HARNESS, INTERP_YAML, SOURCE_PATH, cli, results
from tests.integration.conftest import DOCKER

pytestmark = [pytest.mark.integration, pytest.mark.network]

SETTINGS = "settings: {repeat: 1, iterations: 2, test_timeout: 60, job_timeout: 900}\n"


def write_matrix(tmp: Path, packages: str) -> Path:
    m = tmp / "matrix.yaml"
    m.write_text(SETTINGS + INTERP_YAML + "packages:\n" + packages)
    return m


@pytest.fixture(scope="module")
def first_run(tmp_path_factory, ft_interpreter):
    tmp = tmp_path_factory.mktemp("pipeline")
    m = write_matrix(
        tmp,
        f"  - {{name: iniconfig, version: '==2.3.1', tests: testing}}\n"
        f"  - name: ft_clean\n    path: {FIXTURES / 'ft_clean'}\n"
        f"    notes: 'Curator note <b>bold?</b>'\n"
        f"    links: ['https://example.org/issues/42?a=1&b=<x>']\n",
    )
    r = cli("run", "--matrix", str(m), "--out", str(tmp / "out"), "--backend", "docker", "--jobs", "2")
    return tmp, m, r


ON_DOCKER = [pytest.mark.docker, DOCKER[2]]  # the tests of first_run: iniconfig is from PyPI


@ON_DOCKER[0]
@ON_DOCKER[1]
def test_every_phase_of_both_jobs(first_run) -> None:
    tmp, _, r = first_run
    assert r.returncode == 0, r.stdout + r.stderr
    res = results(tmp / "out")
    assert set(res) == {"cpython3.13t--iniconfig", "cpython3.13t--ft_clean"}
    # the wheel store's dry run comes before the install; with gil_on: targeted (the default) the
    # GIL-on runs follow only what failed with the GIL off, and both jobs pass with it off
    expected = ["wheel-plan", "install", "probe", "plain-gil0", "collect", "threads-gil0-r1"]
    for job_id, d in res.items():
        # tools-layer: once per store and interpreter build, in whichever job comes first
        names = [p["name"] for p in d["phases"] if p["name"] != "tools-layer"]
        assert names == (["fetch"] if d["source"] == "pypi" else []) + expected, job_id
        assert d["gil_on"]["ran"] == "none" and d["gil_on"]["tests"] == 0, d["gil_on"]
        assert d["wheels_built"] == [], d["wheels_built"]  # nothing either job needs is an sdist only
        for p in d["phases"]:
            assert (tmp / "out" / p["log"]).is_file()
            if p["kind"] in ("plain", "threads"):
                assert p["env"]["PYTHON_GIL"] == str(p["gil"])
            if p["kind"] in ("plain", "threads"):
                assert (tmp / "out" / p["junit"]).is_file(), p
        assert d["interpreter"]["free_threaded"] is True
        assert d["verdict"]
        assert d["backend"] == "docker"
        # pip's cache is one per build environment (the interpreter image's tag: its build and
        # the image's build dependencies, #43), in the volume of the job's release
        install = next(p for p in d["phases"] if p["name"] == "install")
        env_key = images.interpreter_tag(d["interpreter"]["key"]).rpartition(":")[2]
        assert install["env"]["PIP_CACHE_DIR"].endswith(f"/pip/{env_key}"), install["env"]
    assert res["cpython3.13t--iniconfig"]["version"] == "2.3.1"
    md = (tmp / "out" / "report.md").read_text()
    assert "iniconfig" in md and "ft\\_clean" in md or "ft_clean" in md


@ON_DOCKER[0]
@ON_DOCKER[1]
def test_second_run_reuses_everything_and_force_reruns(first_run) -> None:
    tmp, m, _ = first_run
    out = tmp / "out"
    before = {p.name: p.read_bytes() for p in (out / "results").iterdir()}
    r = cli("run", "--matrix", str(m), "--out", str(out), "--backend", "docker", "-v")
    assert r.returncode == 0, r.stderr
    assert any(
        line.startswith("image ft-harness/interp:") and line.endswith(": reused") for line in r.stdout.splitlines()
    ), r.stdout  # the interpreter's image, not rebuilt
    assert "0 jobs ran, 2 reused" in r.stdout
    assert {p.name: p.read_bytes() for p in (out / "results").iterdir()} == before
    r = cli("run", "--matrix", str(m), "--out", str(out), "--backend", "docker", "--force", "--package", "ft_clean")
    assert r.returncode == 0 and "1 jobs ran" in r.stdout, r.stdout + r.stderr


def test_sigint_keeps_finished_results_and_resume_runs_the_rest(tmp_path: Path, ft_interpreter) -> None:
    names = ["ft_baseline", "ft_clean", "ft_mixed"]
    m = write_matrix(tmp_path, "".join(f"  - {{name: {n}, path: {FIXTURES / n}}}\n" for n in names))
    out = tmp_path / "out"
    env = {**os.environ, **SOURCE_PATH, "CI": "true"}
    proc = subprocess.Popen(
        [*HARNESS, "run", "--matrix", str(m), "--out", str(out), "--backend", "local", "--jobs", "1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and not list((out / "results").glob("*.json")):
        time.sleep(0.5)
    time.sleep(3)  # the second job is now in flight
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output
    done = {p.name: p.read_bytes() for p in (out / "results").glob("*.json")}
    assert len(done) == 1, output
    assert not [p for p in (out / "results").iterdir() if p.suffix != ".json"]  # no temp files
    # no child of ours is left running
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    assert str(out) not in ps
    r = cli("run", "--matrix", str(m), "--out", str(out), "--backend", "local")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 jobs ran, 1 reused" in r.stdout
    for name, data in done.items():
        assert (out / "results" / name).read_bytes() == data
    assert len(list((out / "results").glob("*.json"))) == 3
    json.loads((out / "report.json").read_text())


@ON_DOCKER[0]
@ON_DOCKER[1]
def test_notes_and_links_reach_every_format(first_run) -> None:
    tmp, _, _ = first_run
    out = tmp / "out"
    report = json.loads((out / "report.json").read_text())
    pkg = next(p for p in report["packages"] if p["name"] == "ft_clean")
    assert pkg["notes"] == "Curator note <b>bold?</b>"
    assert pkg["links"] == ["https://example.org/issues/42?a=1&b=<x>"]
    md = (out / "report.md").read_text()
    assert "Curator note" in md and "<b>" not in md  # escaped, not rendered
    page = (out / "site" / "pkg" / "cpython3.13t--ft_clean.html").read_text()
    assert "Curator note &lt;b&gt;bold?&lt;/b&gt;" in page
    assert "https://example.org/issues/42?a=1&amp;b=" in page


def test_once_the_job_timeout_is_spent_no_test_phase_starts(tmp_path: Path, ft_interpreter) -> None:
    # a wait pytest-timeout does not end (test_timeout above the job's budget): the job timeout
    # kills the first test phase; the phases after it must not run for 1 s each and read as
    # hangs in a mode whose tests never ran (the hang said "modes [0, 1]" before)
    m = tmp_path / "matrix.yaml"
    m.write_text(
        "settings: {repeat: 1, iterations: 2, test_timeout: 900, job_timeout: 60, confirm: 0}\n"
        + INTERP_YAML
        + f"packages:\n  - {{name: ft_deadlock, path: {FIXTURES / 'ft_deadlock'}}}\n"
    )
    r = cli("run", "--matrix", str(m), "--out", str(tmp_path / "out"), "--backend", "local")
    assert r.returncode == 0, r.stdout + r.stderr
    (d,) = results(tmp_path / "out").values()
    tests = [p for p in d["phases"] if p["kind"] in ("plain", "threads", "collect")]
    # the deadlock needs threads: plain-gil0 passes, threads-gil0-r1 waits until the job timeout
    assert [p["name"] for p in tests] == ["plain-gil0", "collect", "threads-gil0-r1"], d["phases"]
    assert tests[-1]["timed_out"] and not any(p["gil"] == 1 for p in d["phases"])
    # the budget (60 s) ran out before the watchdog (test_timeout 900) could call the waiting
    # test stuck: the budget is said, and no hang is claimed, in any mode (issue #36)
    assert not [f for f in d["findings"] if f["kind"] == "hang"], d["findings"]
    (spent,) = [f for f in d["findings"] if f["kind"] == "budget-spent"]
    assert d["verdict"] == "infra-error" and spent["phase"] == "threads-gil0-r1"
