"""A weekly run re-tests only what changed (#34): two real runs of a matrix of two PyPI
releases, the second with one package's version changed and the first run given with --reuse:
only that package's job runs, the other is reused and says so, and the merged report's verdicts
are those of a full run of the second matrix.  Real interpreter, real index, docker backend: a
PyPI release's code never runs unisolated on the CI runner (#46)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import INTERP_YAML, cli

from .conftest import DOCKER

pytestmark = [*DOCKER, pytest.mark.network]

SETTINGS = "settings: {threads: 2, iterations: 2, repeat: 1, confirm: 0, job_timeout: 900}\n"


def _matrix(tmp: Path, name: str, iniconfig: str) -> Path:
    path = tmp / name
    path.write_text(
        INTERP_YAML + SETTINGS + "packages:\n"
        f'  - {{name: iniconfig, version: "=={iniconfig}"}}\n'
        '  - {name: six, version: "==1.17.0"}\n'
    )
    return path


def _run(tmp: Path, matrix: Path, out: str, *more: str) -> dict:
    r = cli("run", "--matrix", str(matrix), "--out", str(tmp / out), "--backend", "docker", *more)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    report = json.loads((tmp / out / "report.json").read_text())
    return {p["job_id"]: p for p in report["packages"]} | {"_stdout": r.stdout}


def test_second_run_reruns_only_the_changed_package(tmp_path: Path) -> None:
    first = _run(tmp_path, _matrix(tmp_path, "week1.yaml", "2.0.0"), "week1")
    week2 = _matrix(tmp_path, "week2.yaml", "2.1.0")
    second = _run(tmp_path, week2, "week2", "--reuse", str(tmp_path / "week1"))
    assert "1 jobs ran" in second["_stdout"] and "1 from --reuse" in second["_stdout"]
    six, ini = second["cpython3.13t--six"], second["cpython3.13t--iniconfig"]
    assert six["reused_from"] == str(tmp_path / "week1")
    assert six["finished"] == first["cpython3.13t--six"]["finished"]  # the earlier run's result
    assert six["sdist_sha256"] and six["sdist_sha256"] == first["cpython3.13t--six"]["sdist_sha256"]
    assert ini["reused_from"] == "" and ini["version"] == "2.1.0"
    md = (tmp_path / "week2" / "report.md").read_text()
    assert "1 of 2 jobs not run again" in md and "cpython3.13t--six" in md
    full = _run(tmp_path, week2, "full")
    assert {j: p["verdict"] for j, p in second.items() if j != "_stdout"} == {
        j: p["verdict"] for j, p in full.items() if j != "_stdout"
    }
    assert all(p["reused_from"] == "" for j, p in full.items() if j != "_stdout")
