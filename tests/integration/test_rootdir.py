"""A suite with no pytest config of its own must not pick up one from above `--out` (issue #20).

ujson 6.1.0 became `baseline-failure` on the local backend ("'skip_leak_test' not found in
`markers`") because pytest walked up from `out/work/.../src/ujson-6.1.0` to ft-harness's own
pyproject.toml and its `--strict-markers`, and its test ids came out relative to that root.
Here the fixture ft_noconfig runs twice per backend: with `--out` under a directory whose
pyproject.toml sets `--strict-markers` (and whose conftest.py would fail every session), and
with `--out` in a plain directory. Verdict and test ids must be the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, INTERP_YAML, cli, results
from tests.integration.conftest import DOCKER_OK, DOCKER_WHY

pytestmark = [pytest.mark.integration]

SETTINGS = "settings: {repeat: 1, iterations: 2, test_timeout: 60, job_timeout: 600}\n"
HOSTILE_PYPROJECT = """\
[tool.pytest.ini_options]
addopts = ["--strict-markers", "-p", "no:such_plugin_here"]
markers = ["only_this: the one marker this project knows"]
"""
HOSTILE_CONFTEST = "raise SystemExit('a conftest.py above --out was loaded')\n"


def _run(tmp: Path, backend: str, hostile: bool, fixture: str = "ft_noconfig") -> dict:
    outer = tmp / (("outer-1.0" if hostile else "plain") + ("" if fixture == "ft_noconfig" else f"-{fixture}"))
    outer.mkdir()
    if hostile:
        (outer / "pyproject.toml").write_text(HOSTILE_PYPROJECT)
        (outer / "conftest.py").write_text(HOSTILE_CONFTEST)
    m = tmp / f"matrix-{outer.name}.yaml"
    m.write_text(SETTINGS + INTERP_YAML + f"packages:\n  - {{name: {fixture}, path: {FIXTURES / fixture}}}\n")
    r = cli("run", "--matrix", str(m), "--out", str(outer / "out"), "--backend", backend)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (res,) = results(outer / "out").values()
    return res


def _ids(res: dict) -> dict[str, set[str]]:
    out = {}
    for p in res["phases"]:
        if p["kind"] in ("plain", "threads"):
            out[p["name"]] = set(p.get("tests", {}))
    return out


@pytest.mark.parametrize(
    "backend",
    [
        "local",
        pytest.param(
            "docker",
            marks=[pytest.mark.docker, pytest.mark.skipif(not DOCKER_OK, reason=f"no docker engine: {DOCKER_WHY}")],
        ),
    ],
)
def test_config_above_out_changes_nothing(tmp_path: Path, backend: str, ft_interpreter) -> None:
    expected = json.loads((FIXTURES / "ft_noconfig" / "EXPECTED.json").read_text())
    hostile = _run(tmp_path, backend, hostile=True)
    plain = _run(tmp_path, backend, hostile=False)
    for res in (hostile, plain):
        assert res["verdict"] == expected["verdict"], res["findings"]
        ids = _ids(res)
        assert ids and all(v == set(expected["tests"]) for v in ids.values()), ids
    assert _ids(hostile) == _ids(plain)
    plain_cmd = next(p for p in hostile["phases"] if p["kind"] == "plain")["command"]
    assert "-c" in plain_cmd and plain_cmd[plain_cmd.index("-c") + 1] == "/dev/null", plain_cmd


def test_a_config_only_pytest9_reads_is_read_and_named(tmp_path: Path, ft_interpreter) -> None:
    # issue #36: ujson 6.1.0 keeps its config in [tool.pytest], which pytest 8 does not read; it
    # walked up to the outer project's --strict-markers and failed on ujson's own marker
    res = _run(tmp_path, "local", hostile=True, fixture="ft_pytest9cfg")
    assert res["verdict"] == "compatible", res["findings"]
    expected = json.loads((FIXTURES / "ft_pytest9cfg" / "EXPECTED.json").read_text())
    assert all(v == set(expected["tests"]) for v in _ids(res).values()), _ids(res)
    plain = next(p for p in res["phases"] if p["kind"] == "plain")
    cmd = plain["command"]
    assert cmd[cmd.index("-c") + 1].endswith("/src/pkg/pyproject.toml"), cmd  # the copied source
    log = (tmp_path / "outer-1.0-ft_pytest9cfg" / "out" / plain["log"]).read_text()
    assert "pytest-9." in log and "configfile: pyproject.toml" in log
