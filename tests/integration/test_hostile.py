"""Package code is hostile (#17, #30): a fixture that plants links to host files and host
directories wherever the host later reads or writes gets no host file read into any output,
changes none, and creates nothing in a host directory.

tests/fixtures/packages/ft_hostile: its build (setup.py), its import (the probe, every test
run) and its pytest plugin point the logs of the phases still to come at a file the host must
not change (FT_HOSTILE_WRITE), and, at exit, its own log, probe.json, install-report.json and
the JUnit XML just written at a file holding a unique marker (FT_HOSTILE_READ), both outside
--out.  Its build points probe.py at that file, and inner/watchdog and logs/tsan at a host
directory that must stay empty (FT_HOSTILE_DIR); its probe points inner there; its test runs
point logs/ and junit/ at a host directory holding the marker under every name the host reads
(FT_HOSTILE_READDIR).  Its build also plants a file in its pip cache: another package's cache
must not have it.  With the link-safe workspace of #30 turned off (the host copying probe.py and
the watchdog plugin in after the install, by name), this test fails: the host file is
overwritten and the watchdog's directory is made in the host directory.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from harness.backends.docker import pip_cache_volume
from tests.conftest import FIXTURES, INTERP_YAML, cli
from tests.integration.conftest import DOCKER

SETTINGS = "settings: {threads: 2, iterations: 2, repeat: 1, test_timeout: 60, job_timeout: 900, confirm: 0}"
ORIGINAL = "the host file the package wants to overwrite: unchanged\n"
# every place the fixture plants a link (hostile-planted.txt); each must be listed
PLACES = (
    "logs/install.log",
    "logs/probe.log",
    "logs/probe.json",
    "logs/install-report.json",
    "logs/plain-gil0.log",
    "logs/collect.log",
    "junit/plain-gil0.xml",
    "junit/threads-gil1-r1.xml",
    # the harness's own files and the directories on the way (#30)
    "probe.py",
    "inner/watchdog",
    "logs/tsan",
    "inner",
    "logs",
    "junit",
)
READ_NAMES = (
    "probe.json",
    "install-report.json",
    *(
        f"{p}.{ext}"
        for p in (
            "install",
            "test-deps",
            "probe",
            "plain-gil0",
            "plain-gil1",
            "collect",
            "threads-gil0-r1",
            "threads-gil1-r1",
        )
        for ext in ("log", "xml")
    ),
)


def _host_files(tmp: Path) -> tuple[Path, Path, str]:
    host = tmp / "host"
    host.mkdir()
    marker = f"FT-HOSTILE-MARKER-{uuid.uuid4().hex}"
    (host / "secret.txt").write_text(f"{marker}\n")
    (host / "target.txt").write_text(ORIGINAL)
    (host / "empty").mkdir()  # FT_HOSTILE_DIR: nothing may be made here
    (host / "readdir").mkdir()  # FT_HOSTILE_READDIR: the marker under every name the host reads
    for name in READ_NAMES:
        (host / "readdir" / name).write_text(f"{marker}\n")
    return host / "secret.txt", host / "target.txt", marker


def _matrix(tmp: Path, read: Path, write: Path, others: tuple[str, ...] = ()) -> Path:
    host = read.parent
    rows = [
        f"  - {{name: ft_hostile, path: {FIXTURES / 'ft_hostile'}, "
        f"env: {{FT_HOSTILE_READ: '{read}', FT_HOSTILE_WRITE: '{write}', "
        f"FT_HOSTILE_DIR: '{host / 'empty'}', FT_HOSTILE_READDIR: '{host / 'readdir'}'}}}}"
    ]
    rows += [f"  - {{name: {n}, path: {FIXTURES / n}}}" for n in others]
    m = tmp / "matrix.yaml"
    m.write_text(INTERP_YAML + SETTINGS + "\npackages:\n" + "\n".join(rows) + "\n")
    return m


def _files_with(root: Path, marker: str) -> list[str]:
    """Every regular file under root (links not followed) whose bytes hold the marker."""
    hits = []
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            p = Path(dirpath, name)
            if not p.is_symlink() and p.is_file() and marker.encode() in p.read_bytes():
                hits.append(str(p.relative_to(root)))
    return hits


def _links(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for d in ("logs", "junit") for p in (root / d).rglob("*") if p.is_symlink())


def _check(tmp: Path, backend: str, others: tuple[str, ...] = ()) -> tuple[Path, dict]:
    read, write, marker = _host_files(tmp)
    mtime = write.stat().st_mtime_ns
    out = tmp / "out"
    r = cli(
        "run",
        "--matrix",
        str(_matrix(tmp, read, write, others)),
        "--out",
        str(out),
        "--backend",
        backend,
        "--jobs",
        "2",
        "--keep-workspaces",  # the fixture's list of what it planted is at the workspace's top
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    ws = out / "work" / "cpython3.13t--ft_hostile"
    # the host wrote nothing through a link: the host file as it was, nothing in the host dir
    assert write.read_text() == ORIGINAL and write.stat().st_mtime_ns == mtime
    assert os.listdir(read.parent / "empty") == []
    planted = (ws / "hostile-planted.txt").read_text()
    for place in PLACES:  # the fixture did plant a link there (else this test proves nothing)
        assert any(line.startswith(f"{place} -> ") for line in planted.splitlines()), (place, planted)
    assert all(f"-> {k} " in planted for k in ("WRITE", "READ", "DIR", "READDIR")), planted
    # #30's acceptance 1: the build itself planted probe.py, inner and a link inside it
    for line in ("probe.py -> WRITE (install)", "inner -> DIR (install, at exit)", "inner/watchdog -> DIR (install)"):
        assert line in planted.splitlines(), (line, planted)
    # nothing lost: the job has its result and the report its row
    res = json.loads((out / "results" / "cpython3.13t--ft_hostile.json").read_text())
    report = json.loads((out / "report.json").read_text())
    assert {p["name"] for p in report["packages"]} >= {"ft_hostile", *others}
    # a merged report copies the logs it links to: through no link
    merged = cli("report", str(out), "--out", str(tmp / "merged"))
    assert merged.returncode == 0, merged.stderr
    for root in (out, tmp / "merged"):
        assert _files_with(root, marker) == [], root
        assert (root / "report.md").is_file() and (root / "site" / "index.html").is_file()
    assert _links(ws) == []  # none left for a later reader to follow
    assert write.read_text() == ORIGINAL and write.stat().st_mtime_ns == mtime
    assert read.read_text() == f"{marker}\n"
    assert os.listdir(read.parent / "empty") == []  # nothing made in a host directory
    assert sorted(os.listdir(read.parent / "readdir")) == sorted(READ_NAMES)
    assert all((read.parent / "readdir" / n).read_text() == f"{marker}\n" for n in READ_NAMES)
    return out, res


@pytest.mark.network
@pytest.mark.slow
@DOCKER[2]
@pytest.mark.docker
@pytest.mark.integration
def test_docker_no_host_file_read_or_written_and_no_cache_shared(tmp_path, client):
    out, res = _check(tmp_path, "docker", others=("ft_noconfig",))
    assert res["backend"] == "docker"
    # the build planted a file in its own pip cache; the other package's cache never has it
    find = "find /cache/pip -name 'ft-hostile-poison*' | sort"

    def in_cache(job_id: str) -> str:
        return client.containers.run(
            client.images.list(name="ft-harness/base")[0].tags[0],
            ["sh", "-c", find],
            volumes={pip_cache_volume(job_id, "local"): {"bind": "/cache/pip", "mode": "ro"}},
            network_mode="none",
            remove=True,
        ).decode()

    assert "ft-hostile-poison.txt" in in_cache("cpython3.13t--ft_hostile")  # it did plant it
    assert in_cache("cpython3.13t--ft_noconfig") == ""
    other = json.loads((out / "results" / "cpython3.13t--ft_noconfig.json").read_text())
    phases = {p["name"]: p for p in other["phases"]}
    assert phases["install"]["exit_code"] == 0 and phases["probe"]["exit_code"] == 0
    # the other package of the run is unaffected: its whole run, every phase's log its own
    assert other["verdict"] == "compatible", (other["verdict"], other["findings"])
    assert all(p["exit_code"] == 0 and not p["infra"] for p in other["phases"]), other["phases"]
    assert not (out / "work" / "cpython3.13t--ft_noconfig" / "hostile-planted.txt").exists()


@pytest.mark.integration
@pytest.mark.slow
def test_local_the_host_follows_no_planted_link(tmp_path, ft_interpreter):
    """The local backend isolates nothing (package code could read the file itself), but the
    host's own reads and writes must not follow what the package planted."""
    _check(tmp_path, "local")


@DOCKER[2]
@pytest.mark.docker
@pytest.mark.integration
def test_a_releases_pip_cache_is_its_own_volume_and_clean_removes_it(tmp_path, client, interp):
    """#46: one volume per job and release.  What one release's step writes in its pip cache
    (a build planting a wheel) is not in another release's of the same package on the same
    interpreter; a step before the release is known gets no volume; `clean` removes them all."""
    from dataclasses import replace

    from harness.backends.docker import DockerBackend, clean_caches
    from harness.interpreters import images, interpreters

    job_id = f"cpython3.13t--cache-{uuid.uuid4().hex[:8]}"
    image = images.ensure_interpreter_image(
        client, interp, interpreters.cache_root()
    ).tag  # its /cache/pip the job user's
    backend = DockerBackend(image=image, run_id="test-cache", cpus=1, client=client)
    py = "/opt/python/bin/python3.13t"
    ws = backend.open(job_id, tmp_path / job_id, py, "")
    plant = "import os; open(os.environ['PIP_CACHE_DIR'] + '/poison.whl', 'w').write('x')"
    look = (
        "import os; d = os.environ.get('PIP_CACHE_DIR', '');"
        "print(os.path.exists(d + '/poison.whl'), os.environ.get('PIP_NO_CACHE_DIR'))"
    )

    def run(release: str, code: str, name: str) -> str:
        w = replace(ws, release=release)
        log = w.host("logs", f"{name}.log")
        res = backend.run(w, [py, "-c", code], env={}, cwd="/work", timeout=120, log=log, network=True)
        assert res.exit_code == 0, log.read_text()
        return log.read_text().split()[-2:] if name != "plant" else []

    try:
        run("1.0", plant, "plant")
        assert run("1.0", look, "same") == ["True", "None"]  # its own later steps see it
        assert run("2.0", look, "other") == ["False", "None"]  # another release's never
        assert run("", look, "unknown") == ["False", "1"]  # no release yet: no cache at all
        vols = {
            v.name: v.attrs["Labels"] for v in client.volumes.list(filters={"label": f"ft-harness.cache.job={job_id}"})
        }
        assert vols == {
            pip_cache_volume(job_id, r): {
                "ft-harness.cache": "pip",
                "ft-harness.cache.job": job_id,
                "ft-harness.cache.release": r,
            }
            for r in ("1.0", "2.0")
        }
        line = backend.reproduce_command(replace(ws, release="2.0"), "true", network=True)
        assert f"-v {pip_cache_volume(job_id, '2.0')}:/cache/pip" in line
        assert "/cache/pip" not in backend.reproduce_command(ws, "true", network=False)
    finally:
        backend.close(ws)
    assert sorted(clean_caches(client, job_id)) == [f"volume {pip_cache_volume(job_id, r)}" for r in ("1.0", "2.0")]
    assert [v.name for v in client.volumes.list(filters={"label": f"ft-harness.cache.job={job_id}"})] == []
