"""Two interpreters in one matrix (#15): CPython 3.13.5 as Debian trixie ships it and 3.13.15
as forky ships it, built (or taken from the cache / the images), fixture packages run on both,
on the local and the docker backend, and the report has a column per interpreter.

Both 3.13 builds install ``/opt/python/bin/python3.13t`` in their images: the docker backend
must pick each job's image by the job, never by that path.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from harness import backends
from harness.config import matrix, plan
from harness.interpreters import images, interpreters
from tests.conftest import FIXTURES, cli
from tests.integration.conftest import DOCKER_OK, DOCKER_WHY

pytestmark = [pytest.mark.integration, pytest.mark.slow]

INTERPRETERS = """\
interpreters:
  - {name: cpython3.13t, version: "3.13.5", source: "debian:trixie"}
  - {name: cpython3.13.15t, version: "3.13.15", source: "debian:forky"}
"""
SETTINGS = "settings: {threads: 4, iterations: 5, repeat: 1, test_timeout: 30, job_timeout: 600}\n"
PACKAGES = {"ft_clean": "compatible", "ft_gilslot": "gil-reenabled"}
needs_docker = pytest.mark.skipif(not DOCKER_OK, reason=f"no docker engine: {DOCKER_WHY}")


def _matrix(tmp: Path) -> Path:
    lines = [SETTINGS + INTERPRETERS + "packages:"]
    lines += [f"  - {{name: {n}, path: {FIXTURES / n}}}" for n in PACKAGES]
    path = tmp / "matrix.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.docker
@needs_docker
def test_each_job_runs_in_its_interpreters_image(tmp_path):
    jobs = plan.make_plan(matrix.load(_matrix(tmp_path)))
    said: list[str] = []
    opened = backends.open_backend(
        "docker", jobs, cache=interpreters.cache_root(), run_id=f"test-{uuid.uuid4().hex[:10]}", say=said.append
    )
    old, new = opened.prepared["cpython3.13t"], opened.prepared["cpython3.13.15t"]
    assert old.python == new.python == "/opt/python/bin/python3.13t"  # the same path in both
    assert old.image != new.image and {old.image, new.image} == {
        images.interpreter_tag(old.info.key),
        images.interpreter_tag(new.info.key),
    }
    assert old.image.startswith(f"ft-harness/interp:{old.info.key}-"), old.image
    assert new.image.startswith(f"ft-harness/interp:{new.info.key}-"), new.image
    assert (old.info.full_version, new.info.full_version) == ("3.13.5", "3.13.15")
    assert old.info.python_name == "python3.13t" and old.info.source == "debian:trixie"
    assert [line.rsplit(": ", 1)[0] for line in said] == [f"image {old.image}", f"image {new.image}"]
    backend = opened.backend
    seen = {}
    for job in jobs:
        p = opened.prepared[job.interpreter.name]
        ws = backend.open(job.job_id, tmp_path / "work" / job.job_id, p.python, "")
        try:
            log = ws.host("version.log")
            res = backend.run(
                ws,
                [ws.python, "-c", "import platform; print(platform.python_version())"],
                env={},
                cwd=ws.root,
                timeout=60,
                log=log,
                network=False,
            )
            assert res.exit_code == 0, log.read_text()
            seen[job.job_id] = log.read_text().strip()
            assert ws.image == p.image
            assert f" {p.image} sh -c " in backend.reproduce_command(ws, "true", network=False)
        finally:
            backend.close(ws)
    assert seen == {
        "cpython3.13t--ft_clean": "3.13.5",
        "cpython3.13t--ft_gilslot": "3.13.5",
        "cpython3.13.15t--ft_clean": "3.13.15",
        "cpython3.13.15t--ft_gilslot": "3.13.15",
    }


@pytest.mark.network
@pytest.mark.parametrize("backend", ["local", pytest.param("docker", marks=[pytest.mark.docker, needs_docker])])
def test_a_run_on_two_interpreters_reports_a_column_each(tmp_path, backend):
    out = tmp_path / "out"
    r = cli(
        "run", "--matrix", str(_matrix(tmp_path)), "--out", str(out), "--backend", backend, "--jobs", "2", timeout=1800
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "4 jobs ran, 0 reused" in r.stdout
    assert "summary: 1 gil-reenabled, 1 compatible (2 packages on 2 interpreters, 4 jobs)" in r.stdout
    report = json.loads((out / "report.json").read_text())
    assert [(c["name"], c["label"], c["source"]) for c in report["interpreters"]] == [
        ("cpython3.13t", "3.13.5t", "debian:trixie"),
        ("cpython3.13.15t", "3.13.15t", "debian:forky"),
    ]
    rows = {t["name"]: t for t in report["table"]}
    assert set(rows) == set(PACKAGES)
    for name, verdict in PACKAGES.items():
        cells = rows[name]["cells"]
        assert {k: c["verdict"] for k, c in cells.items()} == {"cpython3.13t": verdict, "cpython3.13.15t": verdict}
        assert rows[name]["across"] == ""
    versions = {p["job_id"]: p["interpreter"]["full_version"] for p in report["packages"]}
    assert versions == {
        "cpython3.13t--ft_clean": "3.13.5",
        "cpython3.13t--ft_gilslot": "3.13.5",
        "cpython3.13.15t--ft_clean": "3.13.15",
        "cpython3.13.15t--ft_gilslot": "3.13.15",
    }
    gil = [p for p in report["packages"] if p["name"] == "ft_gilslot"]
    assert len(gil) == 2
    for p in gil:  # the GIL warning parsed on both builds, the module named
        (f,) = [f for f in p["findings"] if f["kind"] == "gil-reenabled"]
        assert f["module"] == "ft_gilslot._speedups"
        if backend == "docker":  # reproduced in that interpreter's own image
            assert f"{images.interpreter_tag(p['interpreter']['key'])} sh -c" in f["reproduce"]
    md = (out / "report.md").read_text()
    assert "| Package | Version | 3.13.5t | 3.13.15t | Cause | Across interpreters |" in md
    assert "| ft\\_clean | 1.0.0 | ✅ **compatible** | ✅ **compatible** |  |  |" in md
    assert "| ft\\_gilslot | 1.0.0 | 🔒 **gil-reenabled** | 🔒 **gil-reenabled** | ` ft_gilslot._speedups ` |  |" in md
    index = (out / "site" / "index.html").read_text()
    assert index.count('data-interp="cpython3.13.15t"') == 1 + 2  # its column: th and 2 cells
    assert '<option value="cpython3.13.15t">' in index  # the interpreter filter
