"""Real PyPI releases through the harness's own probe and wheel check, on the real interpreter.

Expected values were verified by hand on the free-threaded 3.13.5 build:
- ``pip install --no-binary markupsafe markupsafe==2.1.5`` then
  ``python -W default -c "import markupsafe, sys; print(sys._is_gil_enabled())"`` printed
  ``RuntimeWarning: The global interpreter lock (GIL) has been enabled to load module
  'markupsafe._speedups' ...`` and ``True`` (captured: tests/data/real/markupsafe-2.1.5/probe.log);
  the same for 3.0.4 printed no warning and ``False`` (3.0.0 added the Py_mod_gil slot).
- Wheels: the index's file list for frozenlist 1.8.0 has ``cp313-cp313t-manylinux*_x86_64``
  wheels; msgpack 1.2.4 has cp314t/cp315t wheels but none for cp313t (captured:
  tests/data/real/index/files.json), so pip builds msgpack from the sdist.

Every install of a release and every run of its code is in a container of the default
interpreter's image (the docker backend, its isolation): a PyPI release never builds or runs
unisolated on the CI runner (#46).  The host reads what the container left in the workspace.
"""

from __future__ import annotations

import json
import platform
import shutil
import uuid
from pathlib import Path

import pytest

from harness.config import indexclient, wheels
from harness.core.model import InterpreterInfo
from harness.job.jobfiles import INNER
from harness.parse.pipreport import parse_pip_report
from tests.integration.conftest import DOCKER

pytestmark = [pytest.mark.integration, pytest.mark.network]
CAPTURED = Path(__file__).parents[1] / "data" / "real" / "index" / "files.json"
PY = "/opt/python/bin/python3.13t"  # the interpreter in its image


@pytest.fixture(scope="module")
def backend(client, interp):
    """The docker backend on the default interpreter's image."""
    from harness.backends.docker import DockerBackend
    from harness.interpreters import images, interpreters

    image = images.ensure_interpreter_image(client, interp, interpreters.cache_root()).tag
    return DockerBackend(image=image, run_id=f"test-real-{uuid.uuid4().hex[:10]}", cpus=1.0, client=client)


def in_container(backend, tmp: Path, steps: list[tuple[str, bool]]) -> tuple[Path, str]:
    """Each (shell line, network) in a container of its own on one workspace, probe.py copied in
    first; the workspace (on the host) and the steps' output.  No pip cache: nothing kept."""
    ws = backend.open("real", tmp / "work", PY, "")
    shutil.copyfile(INNER / "probe.py", ws.host("probe.py"))  # before any package code runs
    out = ""
    try:
        for i, (line, network) in enumerate(steps):
            log = ws.host("logs", f"step{i}.log")
            res = backend.run(
                ws,
                ["sh", "-c", line],
                env={"PYTHONUNBUFFERED": "1"},
                cwd="/work",
                timeout=900,
                log=log,
                network=network,
            )
            out += log.read_text()
            assert res.exit_code == 0, out[-3000:]
    finally:
        backend.close(ws)
    return ws.host_root, out


VENV = f"{PY} -m venv /work/venv && /work/venv/bin/python -m pip install -q"


@pytest.mark.docker
@DOCKER[2]
@pytest.mark.parametrize("version, modules, gil", [("2.1.5", ["markupsafe._speedups"], True), ("3.0.4", [], False)])
def test_markupsafe_gil_probe(tmp_path: Path, backend, version, modules, gil) -> None:
    root, out = in_container(
        backend,
        tmp_path,
        [
            (f"{VENV} --no-binary markupsafe markupsafe=={version}", True),
            ("/work/venv/bin/python -W default /work/probe.py markupsafe /work/probe.json", False),
        ],
    )
    d = json.loads((root / "probe.json").read_text())
    assert d["modules"] == modules
    assert d["gil_enabled"] is gil
    if modules:
        assert "has been enabled to load module 'markupsafe._speedups'" in out


@pytest.mark.docker
@DOCKER[2]
@pytest.mark.skipif(platform.machine() != "x86_64", reason="the captured wheel lists are x86_64 facts")
@pytest.mark.parametrize(
    "name, version, available, installed",
    [
        ("frozenlist", "1.8.0", "free-threaded", "wheel (free-threaded)"),
        ("msgpack", "1.2.4", "gil-only", "built from sdist"),
    ],
)
def test_wheel_column(tmp_path: Path, backend, name, version, available, installed) -> None:
    files = indexclient.index_files(name, version)
    assert files, "the index answered with no files"
    assert wheels.availability(files, "3.13.5") == available
    captured = json.loads(CAPTURED.read_text())[f"{name}=={version}"]
    assert wheels.availability(captured, "3.13.5") == available
    root, _ = in_container(
        backend, tmp_path, [(f"{VENV} --no-deps --report /work/report.json {name}=={version}", True)]
    )
    info = wheels.wheel_info(
        name,
        local=False,
        version=version,
        install_report=parse_pip_report((root / "report.json").read_bytes()),
        interp=InterpreterInfo(name="ft", version="3.13.5", key="k"),
        index_files=files,
    )
    assert info is not None and info.available == available
    assert info.installed == installed


@pytest.mark.docker
def test_a_release_that_downloads_but_does_not_compile_is_build_failure(tmp_path: Path) -> None:
    """msgpack 1.0.8: the sdist downloads (fetch exits 0), its Cython-made C++ does not compile
    for 3.13t. Before issue #20 this was `no-tests`: the verdict read only the fetch.  In docker:
    a PyPI release's build never runs unisolated on the CI runner (#46)."""
    from tests.conftest import INTERP_YAML, cli, results
    from tests.integration.conftest import DOCKER_OK, DOCKER_WHY

    if not DOCKER_OK:
        pytest.skip(f"no docker engine: {DOCKER_WHY}")

    m = tmp_path / "matrix.yaml"
    m.write_text(
        "settings: {repeat: 1, job_timeout: 900}\n" + INTERP_YAML + "packages: [{name: msgpack, version: '==1.0.8'}]\n"
    )
    r = cli("run", "--matrix", str(m), "--out", str(tmp_path / "out"), "--backend", "docker")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (d,) = results(tmp_path / "out").values()
    # the wheel store's dry run plans (the package's own sdist is the install's to build, not
    # the store's: nothing built there); the install is what fails
    assert [(p["name"], p["exit_code"]) for p in d["phases"] if p["name"] != "tools-layer"] == [
        ("fetch", 0),
        ("wheel-plan", 0),
        ("install", 1),
    ]  # tools-layer: once per store and interpreter
    assert d["wheels_built"] == [] and d["wheels_reused"] == []
    assert d["verdict"] == "build-failure" and d["version"] == "1.0.8"
    (f,) = d["findings"]
    assert f["evidence"] == "compiler" and f["phase"] == "install"
    assert f["excerpt"].startswith("msgpack/_cmsgpack.cpp:") and ": error: " in f["excerpt"]


def test_the_host_fetches_an_sdist_from_the_index_with_nothing_built(tmp_path: Path) -> None:
    """harness.job.fetch: pip download would build numpy's metadata (a whole meson build); the host
    reads the PEP 691 page, downloads the file and checks its sha256 against the index's."""
    import hashlib

    from harness.job import fetch

    got = fetch.sdist("iniconfig", "==2.3.1", tmp_path)
    assert (got.version, got.path.name) == ("2.3.1", "iniconfig-2.3.1.tar.gz")
    assert hashlib.sha256(got.path.read_bytes()).hexdigest() == got.sha256 and got.size > 10_000
    newest = fetch.sdist("iniconfig", "<2.3", tmp_path / "older")
    assert newest.version == "2.2.0"  # the newest release under 2.3 with an sdist
    with pytest.raises(fetch.NoSdist, match="No matching distribution found"):
        fetch.sdist("iniconfig", "==0.0.0.0.1", tmp_path / "none")
    with pytest.raises(fetch.IndexUnavailable):
        fetch.sdist("iniconfig", "", tmp_path, page=lambda name: (_ for _ in ()).throw(OSError("down")))
