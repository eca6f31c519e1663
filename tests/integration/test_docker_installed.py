"""An installed interpreter (``source: python:PATH``) on the docker backend: its prefix mounted
read-only into the runtime image, checked there, and the same verdicts as on the local backend
(the free-threaded 3.13.5 the harness builds, used from its path as an installed one)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from harness.interpreters.dockerpython import MOUNT
from tests.conftest import FIXTURES, HARNESS, ROOT, SOURCE_PATH
from tests.integration.conftest import DOCKER

pytestmark = [*DOCKER, pytest.mark.network, pytest.mark.slow]

SETTINGS = "settings: {threads: 4, iterations: 5, repeat: 1, test_timeout: 20, job_timeout: 600}"
# compatible, gil-reenabled (the probe names the module), ft-race (threads, GIL off only)
PACKAGES = ("ft_clean", "ft_gilslot", "ft_sharedbuf")


def _matrix(tmp: Path, python: str | Path, packages=PACKAGES) -> Path:
    lines = [f'interpreters: [{{name: installed3.13t, source: "python:{python}"}}]', SETTINGS, "packages:"]
    lines += [f"  - {{name: {n}, path: {FIXTURES / n}}}" for n in packages]
    path = tmp / "matrix.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _cli(*args: str, timeout: float = 3000) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*HARNESS, *args],
        cwd=ROOT,
        env={**os.environ, **SOURCE_PATH, "CI": "true"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _verdicts(out: Path) -> dict[str, tuple[str, tuple[str, ...]]]:
    report = json.loads((out / "report.json").read_text())
    return {p["name"]: (p["verdict"], tuple(sorted({f["kind"] for f in p["findings"]}))) for p in report["packages"]}


def test_an_installed_interpreter_runs_on_docker_with_the_verdicts_of_local(tmp_path, ft_interpreter):
    m = _matrix(tmp_path, ft_interpreter.python)
    runs = {}
    for backend in ("docker", "local"):  # one after the other: the same load for both
        out = tmp_path / backend
        r = _cli("run", "--matrix", str(m), "--out", str(out), "--backend", backend, "--jobs", "2")
        assert r.returncode in (0, 1), r.stdout[-3000:] + r.stderr[-3000:]
        runs[backend] = out
    in_docker = json.loads((runs["docker"] / "results" / "installed3.13t--ft_clean.json").read_text())
    assert in_docker["backend"] == "docker"
    assert in_docker["interpreter"]["installed"] is True
    assert in_docker["interpreter"]["python"] == f"{MOUNT}/bin/python3.13t"
    # the finding's `docker run` recipe mounts the interpreter as the job's containers had it
    race = (runs["docker"] / "results" / "installed3.13t--ft_sharedbuf.json").read_text()
    prefix = Path(ft_interpreter.python).resolve().parent.parent
    assert f"-v {prefix}:{MOUNT}:ro" in race
    docker, local = _verdicts(runs["docker"]), _verdicts(runs["local"])
    assert docker == local
    assert {n: v for n, (v, _) in docker.items()} == {
        "ft_clean": "compatible",
        "ft_gilslot": "gil-reenabled",
        "ft_sharedbuf": "ft-race",
    }


def test_auto_picks_docker_for_an_installed_interpreter(tmp_path, ft_interpreter):
    """No fallback to the unisolated backend because of the interpreter: `--backend auto` with a
    daemon answering runs the installed interpreter in a container."""
    out = tmp_path / "out"
    r = _cli(
        "run",
        "--matrix",
        str(_matrix(tmp_path, ft_interpreter.python, ["ft_clean"])),
        "--out",
        str(out),
        "--backend",
        "auto",
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "--backend local" not in r.stderr and "no isolation" not in r.stderr, r.stderr
    result = json.loads((out / "results" / "installed3.13t--ft_clean.json").read_text())
    assert (result["backend"], result["verdict"]) == ("docker", "compatible")


def test_a_gil_build_is_one_line_and_exit_2(tmp_path):
    """The host's /usr/bin/python3 (Debian's 3.11, a GIL build)."""
    r = _cli(
        "run",
        "--matrix",
        str(_matrix(tmp_path, "/usr/bin/python3", ["ft_clean"])),
        "--out",
        str(tmp_path / "out"),
        "--backend",
        "docker",
        timeout=300,
    )
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "is not a free-threaded build" in lines[0], r.stderr
    assert f"{tmp_path / 'matrix.yaml'}:1:" in lines[0]


WRAPPER = r"""
#include <unistd.h>
extern int ft_missing(void);
int main(int argc, char **argv) { (void)argc; ft_missing(); argv[0] = REAL; execv(REAL, argv); return 127; }
"""


def test_a_missing_shared_library_is_named(tmp_path, ft_interpreter):
    """An interpreter that starts here but needs a library outside its prefix: on the host the
    wrapper (linked to libftmissing.so by an absolute rpath) execs the real 3.13.5t; in the
    container that library is not there."""
    lib, prefix = tmp_path / "outside", tmp_path / "prefix" / "bin"
    lib.mkdir()
    prefix.mkdir(parents=True)
    (lib / "missing.c").write_text("int ft_missing(void) { return 0; }\n")
    (lib / "wrapper.c").write_text(WRAPPER)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib / "libftmissing.so"), str(lib / "missing.c")], check=True)
    subprocess.run(
        [
            "gcc",
            f'-DREAL="{ft_interpreter.python}"',
            "-o",
            str(prefix / "python3.13t"),
            str(lib / "wrapper.c"),
            f"-L{lib}",
            "-lftmissing",
            f"-Wl,-rpath,{lib}",
        ],
        check=True,
    )
    r = _cli(
        "run",
        "--matrix",
        str(_matrix(tmp_path, prefix / "python3.13t", ["ft_clean"])),
        "--out",
        str(tmp_path / "out"),
        "--backend",
        "docker",
        timeout=900,
    )
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "does not start in the docker image" in lines[0], lines[0]
    assert "the shared library libftmissing.so is missing there" in lines[0], lines[0]


def test_image_builds_the_runtime_image_for_an_installed_interpreter(tmp_path, ft_interpreter):
    """`ft-harness image` says `runtime image TAG: built|reused`, the line the workflow's image
    job saves the images by (its third word is the tag), and checks nothing it cannot: the
    interpreter is checked when a run starts."""
    import docker

    r = _cli("image", "--matrix", str(_matrix(tmp_path, ft_interpreter.python, ["ft_clean"])), timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("runtime image "))
    tag = line.split()[2].rstrip(":")
    assert tag.startswith("ft-harness/runtime:") and line.split()[3] in ("built", "reused"), line
    assert docker.from_env().images.get(tag).labels["ft-harness.kind"] == "runtime"
