"""After a run, the host keeps only each job's logs and results (#56, acceptance 4).

Forty small packages of our own (no tests: a job is its venv, install and import probe, the
steps that leave a venv and a source tree), a real local run with the real interpreter, two at a
time: every job has its result, and its workspace holds its `logs/` and `junit/` alone -- the
venv, the source, the harness's own files freed once its result was written, without recursion.
(With a test each it took 3.5 min on 2 busy cores; the freeing is the same.)"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import INTERP_YAML, cli

pytestmark = [pytest.mark.integration]

N = 40
SETTINGS = "settings: {threads: 2, iterations: 1, repeat: 1, confirm: 0, gil_modes: [0], test_timeout: 60}\n"


def _package(root: Path, i: int) -> Path:
    name = f"ft_tiny{i:02d}"
    pkg = root / name
    (pkg / "src" / name).mkdir(parents=True)
    (pkg / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=74"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{name}"\nversion = "1.0.0"\nrequires-python = ">=3.13"\n\n'
        '[tool.setuptools.packages.find]\nwhere = ["src"]\n'
    )
    (pkg / "src" / name / "__init__.py").write_text(f"VALUE = {i}\n")
    return pkg


def test_after_forty_jobs_only_their_logs_and_results_stay(tmp_path: Path, ft_interpreter) -> None:
    pkgs = [_package(tmp_path / "src", i) for i in range(N)]
    m = tmp_path / "matrix.yaml"
    m.write_text(INTERP_YAML + SETTINGS + "packages:\n" + "".join(f"  - {{name: {p.name}, path: {p}}}\n" for p in pkgs))
    out = tmp_path / "out"
    r = cli("run", "--matrix", str(m), "--out", str(out), "--backend", "local", "--jobs", "2", timeout=3000)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    results = sorted((out / "results").glob("*.json"))
    assert len(results) == N
    assert {json.loads(p.read_text())["verdict"] for p in results} == {"no-tests"}
    work = sorted((out / "work").iterdir())
    assert len(work) == N
    for ws in work:
        assert sorted(os.listdir(ws)) == ["junit", "logs"], (ws.name, os.listdir(ws))
        assert (ws / "logs" / "install.log").is_file()
