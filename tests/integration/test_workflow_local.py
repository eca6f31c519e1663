"""The weekly workflow as written, twice, with a hostile package (#46, acceptance 1).

``.github/workflows/matrix.yml`` runs through tools/run_workflow.py (its jobs and run: steps as
written; checkout, setup-python, artifacts, caches and Pages emulated on local folders) on a
matrix of two packages: iniconfig 2.3.1 from PyPI (the victim) and the fixture ft_plant (a local
package), whose build and tests plant forged results -- the victim's and its own, with the right
job ids, keys and sdist sha256, verdicts never seen and a recipe that writes a host file -- with
manifests everywhere they reach in the workspace, logs/results/ included.  Week 1 runs from
nothing; week 2 restores week 1's cache and reuses the victim (a local package always runs
again).  Each week's published verdicts equal a clean run's (ft_plant with nothing to plant),
the report job lists the planted files as refused, and week 2 reuses what week 1 ran, not what
was planted.  Docker backend, the real interpreter image (reused when built), PyPI."""

from __future__ import annotations

import json
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
from tests.conftest import FIXTURES, ROOT

from .conftest import DOCKER

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


def _week(state: Path, run_id: str, m: Path) -> dict:
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
    return {
        "verdicts": {p["job_id"]: p["verdict"] for p in report["packages"]},
        "reused": {p["job_id"]: p["reused_from"] for p in report["packages"]},
        "merge_log": Path(merge["log"]).read_text(),
        "shard_logs": "\n".join(shard_logs),
    }


def _matrix(tmp: Path, tarball: Path, plant: Path) -> Path:
    m = tmp / "matrix.yaml"  # the source as a tarball: the same key, the same image as debian:trixie's
    m.write_text(
        f'interpreters: [{{name: cpython3.13t, version: "3.13.5", source: "tarball:{tarball}"}}]\n'
        + SETTINGS
        + "packages:\n"
        f'  - {{name: {VICTIM[0]}, version: "=={VICTIM[1]}", tests: testing}}\n'
        f"  - {{name: ft_plant, path: {plant}}}\n"
    )
    return m


def test_two_weekly_runs_of_the_workflow_with_a_hostile_package(tmp_path: Path) -> None:
    tarball = Path.home() / ".cache" / "ft-harness" / "apt" / "trixie" / "download" / "python3.13_3.13.5.orig.tar.xz"
    if not tarball.is_file():
        pytest.skip(f"no CPython 3.13.5 source at {tarball} (ft-harness build fetches it)")
    clean = tmp_path / "clean"
    clean.mkdir()
    shutil.copytree(FIXTURES / "ft_plant", clean / "ft_plant")
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    shutil.copytree(FIXTURES / "ft_plant", hostile / "ft_plant")
    week_matrix = _matrix(hostile, tarball, hostile / "ft_plant")
    spec = matrix.load(str(week_matrix))
    interp_key = interpreters.build_key(spec.interpreters[0], tarball)
    marker = tmp_path / "written-by-a-planted-recipe"
    forged = _forged(spec, interp_key, fetch.sdist_sha256(VICTIM[0], f"=={VICTIM[1]}"), marker)
    (hostile / "ft_plant" / "src" / "ft_plant" / "forged.json").write_text(json.dumps(forged))

    baseline = _week(tmp_path / "clean-state", "1", _matrix(clean, tarball, clean / "ft_plant"))
    state = tmp_path / "state"
    week1 = _week(state, "1", week_matrix)
    week2 = _week(state, "2", week_matrix)

    victim, plant = f"cpython3.13t--{VICTIM[0]}", "cpython3.13t--ft_plant"
    assert baseline["verdicts"] == {victim: "compatible", plant: "compatible"}
    assert week1["verdicts"] == baseline["verdicts"] == week2["verdicts"]
    planted = list((state / "artifacts" / "1").glob(f"shard-*/work/{plant}/logs/planted.txt"))
    assert planted and f"logs/results/{victim}.json" in planted[0].read_text()
    for where in (
        f"work/{plant}/logs/results/{victim}.json",
        f"work/{plant}/logs/manifest.json",
        f"work/{plant}/junit/results/{victim}.json",
    ):
        assert f"{where}: refused: not at DIR/results/*.json" in week1["merge_log"], where
    assert week1["reused"] == {victim: "", plant: ""}
    assert week2["reused"] == {victim: "previous-results", plant: ""}  # a local package always runs
    cached = json.loads((state / "caches" / "ft-results-1" / "previous-results" / "manifest.json").read_text())
    assert sorted(cached["results"]) == sorted([victim, plant])
    assert not marker.exists()
