"""`runner: tox`: the tox env is built during install (with network) and the test phases run through it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, INTERP_YAML, cli, results

pytestmark = [pytest.mark.integration, pytest.mark.network]

TOX_INI = """\
[tox]
envlist = tests

[testenv:tests]
deps = pytest
commands = pytest {posargs}
"""


def test_tox_runner_runs_every_phase_through_tox(tmp_path: Path, ft_interpreter) -> None:
    pkg = tmp_path / "pkg"
    shutil.copytree(FIXTURES / "ft_clean", pkg, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    (pkg / "tox.ini").write_text(TOX_INI)
    m = tmp_path / "matrix.yaml"
    m.write_text(
        "settings: {repeat: 1, iterations: 2, gil_modes: [0]}\n"
        + INTERP_YAML
        + f"packages:\n  - {{name: ft_clean, path: {pkg}, runner: tox, tox_env: tests}}\n"
    )
    r = cli("run", "--matrix", str(m), "--out", str(tmp_path / "out"), "--backend", "local")
    assert r.returncode == 0, r.stdout + r.stderr
    d = results(tmp_path / "out")["cpython3.13t--ft_clean"]
    assert d["verdict"] == "compatible", d["findings"]
    phases = {p["name"]: p for p in d["phases"]}
    for name in ("plain-gil0", "threads-gil0-r1"):
        assert phases[name]["command"][1:5] == ["-m", "tox", "-e", "tests"]
        assert phases[name]["counts"] == {"passed": 6}
    assert "--parallel-threads=4" in phases["threads-gil0-r1"]["command"]
    assert d["coverage"]["gil0"]["in_threads"] == 6
    # tox passes on what the test runs need: the watchdog's plugin is loaded and armed
    for name in ("plain-gil0", "threads-gil0-r1"):
        log = (tmp_path / "out" / phases[name]["log"]).read_text()
        assert "ft-harness watchdog: 250 s per test (faulthandler)" in log, log[:2000]
