"""The shared wheel store on docker (#34, acceptance 4): real containers, real pip, PyPI's real
sdist-only docopt 0.6.2 (no wheel of it exists, so every install builds it).

A first run's job (ft_wheeluse_a) builds docopt in its own isolated step into an empty store;
a second run's job of another package (ft_wheeluse_b) takes that wheel without building it,
and says so in its log and result; ft_storewrite's build and tests, run beside it, try to
write into the store (a new file at every level; the wheel overwritten, removed, renamed,
chmod-ed) and cannot: its tests pass only when every write fails, and the store is byte for
byte what the first run left. A job of docopt itself then installs that same wheel (its sdist,
by sha256) instead of building it again.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from harness.interpreters import images
from tests.conftest import INTERP_YAML, cli, fixture_matrix, results
from tests.integration.conftest import DOCKER

pytestmark = [*DOCKER, pytest.mark.network, pytest.mark.slow]

SETTINGS = "settings: {threads: 2, iterations: 2, repeat: 1, confirm: 0, gil_modes: [0], test_timeout: 60}"
DOCOPT_SHA256 = "49b3a825280bd66b3aa83585ef59c4a8c82f2c8a522dbe754a8bc8d08c85c491"  # docopt-0.6.2.tar.gz on PyPI
DOCOPT = {
    "name": "docopt",
    "version": "0.6.2",
    "sdist_sha256": DOCOPT_SHA256,
    "wheel": "docopt-0.6.2-py2.py3-none-any.whl",
}


def _run(tmp: Path, name: str, packages: list[str], store: Path, matrix: str = "") -> dict[str, dict]:
    (tmp / name).mkdir()
    m = fixture_matrix(tmp / name, packages, SETTINGS)
    if matrix:
        m.write_text(matrix)
    r = cli(
        "run",
        "--matrix",
        str(m),
        "--out",
        str(tmp / name / "out"),
        "--backend",
        "docker",
        "--jobs",
        "1",
        env={"FT_HARNESS_WHEEL_STORE": str(store)},
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return {d["package"]: d for d in results(tmp / name / "out").values()}


def _tree(store: Path) -> dict[str, tuple[int, str]]:
    """Every path below the store (the locks aside): its mode and, for a file, its sha256."""
    out = {}
    for p in sorted(store.rglob("*")):
        rel = str(p.relative_to(store))
        if ".locks" in rel.split("/"):
            continue
        st = p.lstat()
        out[rel] = (st.st_mode, hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "")
    return out


def _log(out: Path, phase: dict) -> str:
    return (out / phase["log"]).read_text(errors="replace")


def test_a_wheel_built_once_is_reused_and_no_job_can_write_into_the_store(tmp_path: Path) -> None:
    stores = tmp_path / "store"  # $FT_HARNESS_WHEEL_STORE: a store per backend below it (#46)
    store = stores / "docker"
    first = _run(tmp_path, "first", ["ft_wheeluse_a"], stores)["ft_wheeluse_a"]
    assert first["verdict"] == "compatible", first["findings"]
    assert first["wheels_built"] == [DOCOPT] and first["wheels_reused"] == []
    names = [p["name"] for p in first["phases"]]
    assert names[:4] == ["tools-layer", "wheel-plan", "wheel-docopt-0.6.2", "install"], names
    key = first["interpreter"]["key"]
    layers = list((store / key / "tools").glob("*/lib/python*/site-packages/_pytest"))
    assert len(layers) == 1 and stat_mode(layers[0]) == 0o555  # pip and the test tools, built once
    assert "tools layer: built /cache/wheels/" in _log(tmp_path / "first" / "out", first["phases"][1])
    assert first["tools_layer"] == f"built {layers[0].parents[3].name}"
    # a wheel's entry is keyed by its build environment: the interpreter image's tag (#43)
    env_key = images.interpreter_tag(key).rpartition(":")[2]
    assert env_key.startswith(key + "-")
    stored = store / env_key / DOCOPT_SHA256 / DOCOPT["wheel"]
    assert stored.is_file()
    assert stat_mode(stored) == 0o444 and stat_mode(stored.parent) == 0o555
    before = _tree(store)

    second = _run(tmp_path, "second", ["ft_wheeluse_b", "ft_storewrite"], stores)
    b, w = second["ft_wheeluse_b"], second["ft_storewrite"]
    out = tmp_path / "second" / "out"
    assert b["verdict"] == "compatible", b["findings"]
    assert b["wheels_reused"] == [DOCOPT] and b["wheels_built"] == []
    assert not [p for p in b["phases"] if p["name"].startswith("wheel-docopt")]  # no build of it
    plan, install = b["phases"][0], b["phases"][1]
    assert (plan["name"], install["name"]) == ("wheel-plan", "install")
    assert f"wheel store: reused {DOCOPT['wheel']} (sdist sha256 {DOCOPT_SHA256})" in _log(out, plan)
    assert "tools layer: reused /cache/wheels/" in _log(out, plan) and "venv_layer: seeded" in _log(out, plan)
    assert b["tools_layer"] == first["tools_layer"].replace("built", "reused")
    text = _log(out, install)
    assert f"/cache/wheels/{env_key}/{DOCOPT_SHA256}/{DOCOPT['wheel']}" in text
    assert "Building wheel for docopt" not in text and "docopt-0.6.2.tar.gz" not in text

    # (a) its build and its tests tried to write into the store, and could not
    assert w["verdict"] == "compatible", w["findings"]
    runs = [p for p in w["phases"] if p["kind"] in ("plain", "threads")]
    assert runs and all(p["counts"].get("passed") == 4 for p in runs), [p["counts"] for p in runs]
    assert w["wheels_reused"] == [DOCOPT]
    assert _tree(store) == before
    assert not (store / "planted-by-a-build").exists() and not list(store.rglob("planted-by-a-test"))
    assert sorted(p.name for p in stores.iterdir()) == ["docker"]  # no local store made or read


def test_a_package_whose_sdist_another_job_stored_installs_that_wheel(tmp_path: Path) -> None:
    """scipy's job after scikit-learn's plan stored scipy (#43, acceptance 4): docopt's own job,
    after ft_wheeluse_a's stored docopt 0.6.2, installs the stored wheel of the sdist the host
    fetched and checked (the same sha256), and its wheel column says what that wheel is."""
    stores = tmp_path / "store"
    first = _run(tmp_path, "first", ["ft_wheeluse_a"], stores)["ft_wheeluse_a"]
    assert first["wheels_built"] == [DOCOPT], first["phases"]
    matrix = f'{INTERP_YAML}{SETTINGS}\npackages: [{{name: docopt, version: "==0.6.2"}}]\n'
    d = _run(tmp_path, "itself", [], stores, matrix=matrix)["docopt"]
    out = tmp_path / "itself" / "out"
    assert d["sdist_sha256"] == DOCOPT_SHA256 and d["verdict"] == "no-tests", d["findings"]
    assert d["wheels_reused"] == [DOCOPT] and d["wheels_built"] == []
    assert (
        d["wheel"]["installed"] == "built from sdist (wheel store)" and d["wheel"]["installed_file"] == DOCOPT["wheel"]
    )
    plan = next(p for p in d["phases"] if p["name"] == "wheel-plan")
    assert f"the package itself from {DOCOPT['wheel']} (its sdist, sha256 {DOCOPT_SHA256}" in _log(out, plan)
    text = _log(out, next(p for p in d["phases"] if p["name"] == "install"))
    assert f"/{DOCOPT_SHA256}/{DOCOPT['wheel']}" in text and "Building wheel for docopt" not in text


def stat_mode(p: Path) -> int:
    return p.stat().st_mode & 0o777
