"""The weekly workflow as written, twice, with a hostile package (#46, acceptance 1).

``.github/workflows/matrix.yml`` runs through tools/run_workflow.py (its jobs and run: steps as
written; checkout, setup-python, artifacts, caches and Pages emulated on local folders) on a
matrix of two packages: iniconfig 2.3.1 from PyPI (the victim) and the fixture ft_plant (a local
package), whose build and tests plant forged results -- the victim's and its own, with the right
job ids, keys and sdist sha256, verdicts never seen and a recipe that writes a host file -- with
manifests everywhere they reach in the workspace, logs/results/ included.  Week 1 runs from
nothing; week 2 restores week 1's cache and reuses the victim (a local package always runs
again).  Each week's published verdicts equal a clean run's (ft_plant with nothing to plant,
ft_evildep with no dependency, ft_linkplant with nothing to plant: `ft-harness run` on docker),
the report job lists the planted files as refused, and week 2 reuses what week 1 ran, not what
was planted.  Docker backend, the real interpreter image (reused when built), PyPI.

#56, acceptance 1: the matrix also holds ft_evildep, whose copy depends on two direct-URL sdists
of well-known names from a host of the test's own (tests/integration/evilhost.py: an HTTPS server
in a container on docker's bridge): six 99.0, above the index's, and docopt 0.6.2, the version of
an sdist-only release with other bytes. ft_victim, after it, depends on six and docopt from the
index. Neither sdist is stored or offered to another job (the index does not list them); both
weeks, ft_victim installs what the clean run installed, and its verdict is the clean run's.

#56, acceptance 2: ft_linkplant's build, metadata hook and tests plant links to the runner's
``/proc/self/environ``, a host file and a host dir (both holding a token the test made, the token
also in the runner's environment) in logs/ and junit/, at the bottom of a 2,000-deep tree and
after it. The harness runs under this Python (3.11: setup-python's emulation). The artifacts,
as upload-artifact reads them (following links), hold no link and no byte of the token."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from harness.config import matrix, plan
from harness.core.model import read_result
from harness.interpreters import interpreters
from harness.job import fetch
from harness.verdict import decide
from tests.conftest import FIXTURES, ROOT, cli

from .conftest import DOCKER
from .evilhost import evil_host, sdist

pytestmark = [*DOCKER, pytest.mark.network]

RUN0 = ROOT / "tests" / "data" / "report" / "run0" / "results"
SETTINGS = "settings: {threads: 2, iterations: 1, repeat: 1, confirm: 0, job_timeout: 900}\n"


VICTIM = ("iniconfig", "2.3.1")


def _forged(spec: matrix.MatrixSpec, interp_key: str, victim_sha: str, marker: Path) -> dict:
    """What a package can know from the last published report.json: each job's id and key, the
    sdist's sha256 (the index says it): results that would pass every check but where they lie."""
    jobs = {j.package.name: j for j in plan.make_plan(spec)}
    from tests.unit.verdict.test_verdict import S
    from tests.unit.verdict.test_verdict import load as load_phases

    phases = tuple(load_phases("confirm-realloc"))
    d = decide(phases, settings=S)
    template = read_result(RUN0 / "cp313t--attrs.json")
    recipe = f"python3.13t -m venv ft\ntouch {marker}"
    out = {}
    for name, verdict in ((VICTIM[0], d.verdict), ("ft_plant", "compatible")):
        job, victim = jobs[name], name == VICTIM[0]
        res = replace(
            template,
            job_id=job.job_id,
            key=job.key(interp_key),
            package=name,
            version=VICTIM[1] if victim else "1.0.0",
            source="pypi" if victim else "local",
            interpreter=replace(template.interpreter, name="cpython3.13t", key=interp_key),
            sdist_sha256=victim_sha if victim else "0" * 64,
            phases=phases if victim else (),
            verdict=verdict,
            findings=tuple(replace(f, recipe=recipe) for f in d.findings) if victim else (),
            finished="2099-01-01T00:00:00Z",
        )
        out[f"{job.job_id}.json"] = res.to_dict()
    return {"results": out, "recipe": f"#!/bin/sh\ntouch {marker}\n"}


def _week(state: Path, run_id: str, m: Path, env: dict[str, str] | None = None) -> dict:
    r = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "run_workflow.py"),
            "--state",
            str(state),
            "--run-id",
            run_id,
            "--input",
            f"matrix={m}",
            "--input",
            "shards=2",
        ],
        capture_output=True,
        text=True,
        timeout=5400,
        env={**os.environ, **(env or {})},
    )
    assert (state / "runs" / run_id / "summary.json").is_file(), r.stdout[-4000:] + r.stderr[-4000:]
    summary = json.loads((state / "runs" / run_id / "summary.json").read_text())
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    report = json.loads((state / "artifacts" / run_id / "report" / "report.json").read_text())
    merge = next(s for s in summary["steps"] if s.get("job") == "report" and s.get("name") == "Merge the shards")
    shard_logs = [
        Path(s["log"]).read_text()
        for s in summary["steps"]
        if str(s.get("job", "")).startswith("run-") and s.get("name") == "Run the shard"
    ]
    arts = state / "artifacts" / run_id
    return {
        "arts": arts,
        "installed": {
            job: _installed(next(arts.glob(f"**/{job}/logs/install.log")).read_text())
            for job in ("cpython3.13t--ft_victim", "cpython3.13t--ft_evildep")
        },
        "verdicts": {p["job_id"]: p["verdict"] for p in report["packages"]},
        "reused": {p["job_id"]: p["reused_from"] for p in report["packages"]},
        "merge_log": Path(merge["log"]).read_text(),
        "shard_logs": "\n".join(shard_logs),
    }


def _no_host_byte(arts: Path, token: str) -> None:
    """No link and no byte of ``token`` anywhere in a run's artifacts (walked without recursion)."""
    todo, seen = [arts], 0
    while todo:
        for e in os.scandir(todo.pop()):
            assert not e.is_symlink(), e.path
            if e.is_dir(follow_symlinks=False):
                todo.append(Path(e.path))
            elif e.is_file(follow_symlinks=False):
                seen += 1
                assert token.encode() not in Path(e.path).read_bytes(), e.path
    assert seen > 10, seen


def _clean_run(out: Path, m: Path, env: dict[str, str]) -> dict:
    """The clean matrix (nothing planted, no hostile dependency) run as a user runs it, on
    docker: the verdicts and installs each week's hostile run must equal. (Not through the
    workflow: the same jobs, without its images' save and load, 2-3 minutes of CI.)"""
    r = cli("run", "--matrix", str(m), "--out", str(out), "--backend", "docker", "--jobs", "2", env=env, timeout=3000)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return {
        "verdicts": {p.stem: json.loads(p.read_text())["verdict"] for p in (out / "results").glob("*.json")},
        "installed": {
            job: _installed((out / "work" / job / "logs" / "install.log").read_text())
            for job in ("cpython3.13t--ft_victim", "cpython3.13t--ft_evildep")
        },
    }


def _installed(log: str) -> str:
    """pip's "Successfully installed ..." line of an install log."""
    return next((ln for ln in log.splitlines() if ln.startswith("Successfully installed")), "")


def _matrix(tmp: Path, tarball: Path, plant: Path) -> Path:
    m = tmp / "matrix.yaml"  # the source as a tarball: the same key, the same image as debian:trixie's
    m.write_text(
        f'interpreters: [{{name: cpython3.13t, version: "3.13.5", source: "tarball:{tarball}"}}]\n'
        + SETTINGS
        + "packages:\n"
        f'  - {{name: {VICTIM[0]}, version: "=={VICTIM[1]}", tests: testing}}\n'
        f"  - {{name: ft_plant, path: {plant}}}\n"
        f"  - {{name: ft_evildep, path: {plant.parent / 'ft_evildep'}}}\n"
        f"  - {{name: ft_victim, path: {FIXTURES / 'ft_victim'}}}\n"
        f"  - {{name: ft_linkplant, path: {plant.parent / 'ft_linkplant'}}}\n"
    )
    return m


EVIL = {  # a higher version of a well-known name, and a second docopt 0.6.2 (PyPI has only its sdist)
    "six-99.0.tar.gz": sdist("six", "99.0", "EVIL = True\n__version__ = '99.0'\n"),
    "docopt-0.6.2.tar.gz": sdist("docopt", "0.6.2", "EVIL = True\n__version__ = '0.6.2'\n"),
}


def _evil_deps(pkg: Path, url: str) -> None:
    """ft_evildep's copy, given its two direct-URL dependencies from the evil host."""
    toml = pkg / "pyproject.toml"
    deps = [f"six @ {url}/six-99.0.tar.gz", f"docopt @ {url}/docopt-0.6.2.tar.gz"]
    toml.write_text(toml.read_text().replace("dependencies = []", f"dependencies = {json.dumps(deps)}"))


def test_two_weekly_runs_of_the_workflow_with_a_hostile_package(tmp_path: Path) -> None:
    tarball = Path.home() / ".cache" / "ft-harness" / "apt" / "trixie" / "download" / "python3.13_3.13.5.orig.tar.xz"
    if not tarball.is_file():
        pytest.skip(f"no CPython 3.13.5 source at {tarball} (ft-harness build fetches it)")
    token = hashlib.sha256(os.urandom(16)).hexdigest()  # in a host file and in the runner's environment
    with evil_host(tmp_path, EVIL) as (url, env):
        _two_weeks(tmp_path, tarball, url, {**env, "FT_TEST_CANARY": token})


def _two_weeks(tmp_path: Path, tarball: Path, url: str, env: dict[str, str]) -> None:
    clean = tmp_path / "clean"
    clean.mkdir()
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    for where in (clean, hostile):
        for name in ("ft_plant", "ft_evildep", "ft_linkplant"):
            shutil.copytree(FIXTURES / name, where / name)
    _evil_deps(hostile / "ft_evildep", url)
    token = env["FT_TEST_CANARY"]
    secret = tmp_path / "host-secret" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text(f"a host file: {token}\n")
    targets = {"environ": "/proc/self/environ", "secret": str(secret), "hostdir": str(secret.parent)}
    links = hostile / "ft_linkplant" / "src" / "ft_linkplant" / "links.json"
    links.write_text(json.dumps({"targets": targets, "depth": 2000}))
    week_matrix = _matrix(hostile, tarball, hostile / "ft_plant")
    spec = matrix.load(str(week_matrix))
    interp_key = interpreters.build_key(spec.interpreters[0], tarball)
    marker = tmp_path / "written-by-a-planted-recipe"
    forged = _forged(spec, interp_key, fetch.sdist_sha256(VICTIM[0], f"=={VICTIM[1]}"), marker)
    (hostile / "ft_plant" / "src" / "ft_plant" / "forged.json").write_text(json.dumps(forged))

    baseline = _clean_run(tmp_path / "clean-run", _matrix(clean, tarball, clean / "ft_plant"), env)
    state = tmp_path / "state"
    week1 = _week(state, "1", week_matrix, env)
    week2 = _week(state, "2", week_matrix, env)

    victim, plant = f"cpython3.13t--{VICTIM[0]}", "cpython3.13t--ft_plant"
    evildep, store_victim = "cpython3.13t--ft_evildep", "cpython3.13t--ft_victim"
    linkplant = "cpython3.13t--ft_linkplant"
    assert baseline["verdicts"] == {
        victim: "compatible",
        plant: "compatible",
        evildep: "compatible",
        store_victim: "compatible",
        linkplant: "compatible",
    }
    assert week1["verdicts"] == baseline["verdicts"] == week2["verdicts"]
    # #56: what ft_evildep's plan named from its own host was never stored nor offered: the
    # victim installed the index's six and docopt, as in the clean run, both weeks
    assert "six-1." in baseline["installed"][store_victim] and "docopt-0.6.2" in baseline["installed"][store_victim]
    assert week1["installed"][store_victim] == baseline["installed"][store_victim] == week2["installed"][store_victim]
    assert "six-99.0" in week1["installed"][evildep]  # its own install took what it asked for
    for week in (week1, week2):
        plan_logs = [p.read_text() for p in week["arts"].glob(f"**/{evildep}/logs/wheel-plan.log")]
        assert len(plan_logs) >= 2, "the store job's and the shard's plan logs"  # store step + shard
        for log in plan_logs:
            assert f"refused six 99.0 from {url}/six-99.0.tar.gz" in log
            assert f"refused docopt 0.6.2 from {url}/docopt-0.6.2.tar.gz" in log
    # #56, acceptance 2: the artifacts as upload-artifact reads them (following links, as
    # run_workflow's emulation does) hold no byte of a host file or of the runner's environment,
    # though ft_linkplant planted links to both (and a 2,000-deep tree) in its build, its
    # metadata hook and its tests; it still got its verdict and the jobs after it ran
    for week in (week1, week2):
        planted = [p.read_text() for p in week["arts"].glob(f"**/{linkplant}/logs/linkplant.txt")]
        assert planted and all(w in planted[0] for w in ("build", "metadata", "pytest")), planted
        _no_host_byte(week["arts"], token)
    evil_shas = {hashlib.sha256(data).hexdigest() for data in EVIL.values()}
    stored = {p.name for p in (state / "caches").glob("ft-wheels-docker-*/**/*") if p.is_dir()}
    assert stored and not stored & evil_shas
    planted = list((state / "artifacts" / "1").glob(f"shard-*/work/{plant}/logs/planted.txt"))
    assert planted and f"logs/results/{victim}.json" in planted[0].read_text()
    for where in (
        f"work/{plant}/logs/results/{victim}.json",
        f"work/{plant}/logs/manifest.json",
        f"work/{plant}/junit/results/{victim}.json",
    ):
        assert f"{where}: refused: not at DIR/results/*.json" in week1["merge_log"], where
    local = {plant: "", evildep: "", store_victim: "", linkplant: ""}  # a local package always runs
    assert week1["reused"] == {victim: "", **local}
    assert week2["reused"] == {victim: "previous-results", **local}
    cached = json.loads((state / "caches" / "ft-results-1" / "previous-results" / "manifest.json").read_text())
    assert sorted(cached["results"]) == sorted([victim, *local])
    assert not marker.exists()
