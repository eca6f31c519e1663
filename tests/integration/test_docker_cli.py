"""`ft-harness run --backend docker` end to end: same verdicts as the local backend,
and nothing of ours left behind after a run or a SIGINT."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import HARNESS, SOURCE_PATH, fixture_matrix
from tests.integration.conftest import DOCKER

pytestmark = [*DOCKER, pytest.mark.network, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
# light settings: the comparison is of verdicts, and CI has a time limit
SETTINGS = "settings: {threads: 4, iterations: 5, repeat: 1, test_timeout: 20, job_timeout: 600}"
# A clean package, a C-extension crash without the GIL, a missing Py_mod_gil slot, a plain bug.
PACKAGES = ("ft_clean", "ft_realloc", "ft_gilslot", "ft_baseline")


def _ours(run_suffix: str) -> list[str]:
    import docker

    c = docker.from_env()
    names = [
        x.name
        for x in c.containers.list(all=True, filters={"label": "ft-harness.run"})
        if x.labels["ft-harness.run"].endswith(run_suffix)
    ]
    names += [
        v.name
        for v in c.volumes.list(filters={"label": "ft-harness.run"})
        if v.attrs["Labels"]["ft-harness.run"].endswith(run_suffix)
    ]
    return names


def _run(out: Path, backend: str, packages=PACKAGES, **kw) -> subprocess.Popen:
    out.mkdir(parents=True, exist_ok=True)
    matrix = fixture_matrix(out.parent, list(packages), SETTINGS)
    argv = [*HARNESS, "run", "--matrix", str(matrix), "--out", str(out), "--backend", backend, "--jobs", "2"]
    return subprocess.Popen(
        argv,
        cwd=REPO,
        env={**os.environ, **SOURCE_PATH, "CI": "true"},
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        **kw,
    )


def _verdicts(out: Path) -> dict[str, tuple[str, tuple[str, ...]]]:
    report = json.loads((out / "report.json").read_text())
    return {p["name"]: (p["verdict"], tuple(sorted({f["kind"] for f in p["findings"]}))) for p in report["packages"]}


def test_docker_gives_the_same_verdicts_as_local(tmp_path):
    procs, outs = {}, {}
    for b in ("docker", "local"):  # one after the other: the same load for both
        procs[b] = _run(tmp_path / b, b)
        outs[b] = procs[b].communicate(timeout=3000)[0]
    for b, p in procs.items():
        assert p.returncode == 0, outs[b][-3000:]
        assert _ours(f"-{p.pid}") == []
    docker_v, local_v = _verdicts(tmp_path / "docker"), _verdicts(tmp_path / "local")
    assert set(docker_v) == set(PACKAGES)
    assert docker_v == local_v
    assert docker_v["ft_realloc"][0] in ("ft-crash", "crash")
    assert docker_v["ft_gilslot"][0] == "gil-reenabled"
    results = json.loads((tmp_path / "docker" / "results" / "cpython3.13t--ft_clean.json").read_text())
    assert results["backend"] == "docker"


def test_sigint_mid_run_leaves_no_containers(tmp_path):
    proc = _run(tmp_path / "out", "docker", packages=("ft_clean", "ft_baseline"))
    import docker

    c = docker.from_env()
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        running = [
            x
            for x in c.containers.list(filters={"label": "ft-harness.run"})
            if x.labels["ft-harness.run"].endswith(f"-{proc.pid}")
        ]
        if running:
            break
        time.sleep(0.5)
    assert proc.poll() is None, "the run ended before any container started"
    proc.send_signal(signal.SIGINT)
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 130, out[-2000:]
    assert _ours(f"-{proc.pid}") == []
    assert not list((tmp_path / "out" / "results").glob("*.json")) or all(
        json.loads(p.read_text())["job_id"] for p in (tmp_path / "out" / "results").glob("*.json")
    )


def _children(pid: int) -> set[int]:
    """The pids whose parent is ``pid`` (from /proc)."""
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.add(int(stat.parent.name))
    return out


@pytest.mark.parametrize(
    ("sig", "via"),
    [(signal.SIGINT, "ft-harness"), (signal.SIGTERM, "ft-harness"), (signal.SIGTERM, "tools/wheel-store")],
)
def test_a_signal_mid_store_step_leaves_no_containers(tmp_path, sig, via):
    """`ft-harness store` (the workflow's store job) stopped while its first container runs, by
    SIGINT or by SIGTERM (a cancelled CI job; SIGTERM left its container running before), itself
    or through the workflow's script, tools/wheel-store build (which did not pass SIGTERM on): exit
    130, nothing of its run left, and the store holds no half-built entry."""
    matrix = fixture_matrix(tmp_path, ["ft_wheeluse_a"], SETTINGS)
    store = tmp_path / "store"
    args = ["--matrix", str(matrix), "--out", str(tmp_path / "out"), "--backend", "docker"]
    cmd = [*HARNESS, "store", *args] if via == "ft-harness" else [sys.executable, "tools/wheel-store", "build", *args]
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # its `ft-harness`
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env={**os.environ, **SOURCE_PATH, "CI": "true", "FT_HARNESS_WHEEL_STORE": str(store), "PATH": path},
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    import docker

    c = docker.from_env()
    deadline = time.monotonic() + 600
    harness_pid = None
    while time.monotonic() < deadline and proc.poll() is None and harness_pid is None:
        pids = {proc.pid} | _children(proc.pid)
        harness_pid = next(
            (
                pid
                for x in c.containers.list(filters={"label": "ft-harness.run"})
                for pid in pids
                if x.labels["ft-harness.run"].endswith(f"-{pid}")
            ),
            None,
        )
        time.sleep(0.2)
    assert proc.poll() is None and harness_pid, "the store step ended before any container started"
    proc.send_signal(sig)
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 130, out[-2000:]
    assert "Traceback" not in out, out[-2000:]
    assert _ours(f"-{harness_pid}") == []
    # an entry is there whole (its wheel) or not at all
    for d in (store / "docker").glob("*/*"):
        assert d.name in (".locks", "tools", ".scratch") or list(d.glob("*.whl")), d
