"""The docker backend on a real engine with the real free-threaded interpreter image.

Isolation is proved from inside a test container (no network, uid != 0, no
capabilities, host files invisible, read-only root), and the faults a package can
cause (fork bomb, memory hog, a container SIGKILLed from outside, a hang, the
daemon going away) each come back as an Exec — the harness goes on.  After every
test nothing labelled with the test's run id is left.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from harness.backends.docker import DockerBackend, pip_cache_volume
from harness.core.errors import InfraError
from harness.interpreters import images, interpreters
from tests.integration.conftest import DOCKER

pytestmark = DOCKER

PY = "/opt/python/bin/python3.13t"


@pytest.fixture(scope="module")
def image(client, interp) -> str:
    return images.ensure_interpreter_image(client, interp, interpreters.cache_root()).tag


def _leftovers(client, run_id: str) -> list[str]:
    flt = {"label": f"ft-harness.run={run_id}"}
    return [c.name for c in client.containers.list(all=True, filters=flt)] + [
        v.name for v in client.volumes.list(filters=flt)
    ]


@pytest.fixture
def backend(client, image):
    run_id = f"test-{uuid.uuid4().hex[:10]}"
    b = DockerBackend(image=image, run_id=run_id, cpus=1.0, mem_limit="512m", pids_limit=128)
    yield b
    assert _leftovers(client, run_id) == [], "containers/volumes of the run were left behind"


@pytest.fixture
def ws(backend, tmp_path):
    w = replace(backend.open("job1", tmp_path / "work" / "job1", PY, ""), release="1.0")  # as after a fetch
    yield w
    backend.close(w)


def run_py(backend, ws, code: str, *, timeout: float = 60, network: bool = False, name: str = "step", idle: float = 0):
    log = ws.host("logs", f"{name}.log")
    res = backend.run(
        ws,
        [PY, "-c", code],
        env={"PYTHONUNBUFFERED": "1"},
        cwd="/work",
        timeout=timeout,
        log=log,
        network=network,
        idle=idle,
    )
    return res, log.read_text() if log.exists() else ""


def test_command_output_exit_code_and_files_come_back(backend, ws):
    res, out = run_py(
        backend,
        ws,
        "import sys, os\nprint('out'); print('err', file=sys.stderr)\n"
        "open('/work/made-inside.txt', 'w').write(str(os.getuid()))\nsys.exit(3)",
    )
    assert res.exit_code == 3 and res.signal is None and not res.timed_out and not res.oom_killed
    assert out.splitlines() == ["out", "err"]
    assert ws.host("made-inside.txt").read_text() == "1000"
    assert ws.root == "/work" and ws.python == PY and res.duration > 0


def test_isolation_inside_the_test_container(backend, ws, tmp_path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("do not read")
    code = f"""
import os, socket
r = {{}}
s = socket.socket(); s.settimeout(5)
try:
    s.connect(("1.1.1.1", 53)); r["connect"] = "connected"
except OSError as e:
    r["connect"] = type(e).__name__
try:
    socket.getaddrinfo("pypi.org", 443); r["dns"] = "resolved"
except OSError as e:
    r["dns"] = type(e).__name__
r["uid"] = os.getuid()
r["capeff"] = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0]
r["nnp"] = [l.split()[1] for l in open("/proc/self/status") if l.startswith("NoNewPrivs")][0]
r["secret"] = os.path.exists({str(secret)!r})
r["repo"] = os.path.exists("/work/main") or os.path.exists("/root/.cache/ft-harness")
try:
    open("/usr/ft-harness-probe", "w"); r["rootfs"] = "writable"
except OSError as e:
    r["rootfs"] = e.strerror
open("/tmp/x", "w").write("ok"); r["tmp"] = open("/tmp/x").read()
r["ifaces"] = sorted(n for _, n in socket.if_nameindex())
print(repr(r))
"""
    res, out = run_py(backend, ws, code)
    assert res.exit_code == 0, out
    r = eval(out.strip().splitlines()[-1])  # our own repr, printed above
    assert r["connect"] in ("OSError", "ConnectionRefusedError", "TimeoutError") or r["connect"].endswith("Error"), r
    assert r["connect"] != "connected" and r["dns"] != "resolved"
    assert r["ifaces"] == ["lo"]
    assert r["uid"] != 0 and r["uid"] == 1000
    assert int(r["capeff"], 16) == 0 and r["nnp"] == "1"
    assert r["secret"] is False and r["repo"] is False
    assert r["rootfs"] == "Read-only file system" and r["tmp"] == "ok"


@pytest.mark.network
def test_install_step_has_network_ca_and_the_jobs_pip_cache(backend, ws, client):
    code = (
        "import os, urllib.request\n"
        "print(urllib.request.urlopen('https://pypi.org/simple/six/', timeout=30).status)\n"
        "print(os.environ['PIP_CERT'] == os.environ['SSL_CERT_FILE'])\n"
        "open(os.environ['PIP_CACHE_DIR'] + '/.ft-harness-probe', 'w').write('x')\n"
    )
    res, out = run_py(backend, ws, code, network=True)
    assert res.exit_code == 0, out
    assert out.split() == ["200", "True"]
    job_id = ws.host_root.name
    vol = client.volumes.get(pip_cache_volume(job_id, "1.0"))  # the release's own (tests/integration/test_hostile.py)
    assert vol.attrs["Labels"] == {
        "ft-harness.cache": "pip",
        "ft-harness.cache.job": job_id,
        "ft-harness.cache.release": "1.0",
    }


def test_fork_bomb_is_stopped_by_the_pids_limit(backend, ws):
    # First a counting bomb: how many processes exist when fork starts failing.
    count = """
import os, sys, time
kids = []
try:
    while True:
        pid = os.fork()
        if pid == 0:
            time.sleep(60); os._exit(0)
        kids.append(pid)
except BlockingIOError as e:
    print("stopped", len(kids), e.strerror)
for k in kids:
    os.kill(k, 9)
"""
    res, out = run_py(backend, ws, count, name="count")
    assert res.exit_code == 0, out
    word, n, why = out.split(maxsplit=2)
    assert word == "stopped" and 50 < int(n) < 128 and "temporarily unavailable" in why
    # Then a real bomb (every process forks forever): bounded by the limit, ended by the timeout.
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    started = time.monotonic()
    res, _ = run_py(backend, ws, bomb, timeout=10, name="bomb")
    assert res.timed_out is True and res.exit_code is None
    assert time.monotonic() - started < 60
    # ... and the harness goes on in the same job.
    res, out = run_py(backend, ws, "print('alive')", name="after")
    assert res.exit_code == 0 and out.strip() == "alive"


def test_memory_hog_is_stopped_by_the_memory_limit(backend, ws):
    hog = "chunks = []\nwhile True:\n    chunks.append(bytearray(16 << 20))\n"
    res, out = run_py(backend, ws, hog, timeout=120, name="hog")
    assert res.oom_killed is True, (res, out)
    assert res.signal == 9 and res.exit_code == 137 and not res.timed_out
    res, out = run_py(backend, ws, "print('alive')", name="after")
    assert res.exit_code == 0 and out.strip() == "alive"


def test_the_default_cap_is_the_limit_memory_bytes(client, image, tmp_path, monkeypatch):
    """Without mem_limit, a container gets the named limit memory_bytes (#43), as
    FT_HARNESS_LIMIT_MEMORY_BYTES sets it, in the container and in its reproduce line."""
    monkeypatch.setenv("FT_HARNESS_LIMIT_MEMORY_BYTES", str(768 << 20))
    b = DockerBackend(image=image, run_id=f"test-{uuid.uuid4().hex[:10]}", cpus=1.0)
    assert b.mem_limit == "768m"
    w = replace(b.open("job1", tmp_path / "work" / "job1", PY, ""), release="1.0")
    try:
        probe = (  # cgroup v2, else v1
            "import os\nfor f in ('/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory/memory.limit_in_bytes'):\n"
            "    if os.path.exists(f):\n        print(open(f).read()); break\n"
        )
        res, out = run_py(b, w, probe, name="cap")
        assert res.exit_code == 0 and out.split() == [str(768 << 20)], out
        assert "--memory 768m --memory-swap 768m" in b.reproduce_command(w, "true", network=False)
    finally:
        b.close(w)
    monkeypatch.delenv("FT_HARNESS_LIMIT_MEMORY_BYTES")
    assert DockerBackend(image=image, run_id="test-default", cpus=1.0).mem_limit == "6g"


BIG_TMP = """
import os, tempfile
d = tempfile.gettempdir()
try:
    with open(os.path.join(d, "big"), "wb") as f:
        for _ in range(1100):  # 1100 MiB: past the 1 GiB tmpfs /tmp
            f.write(bytes(1 << 20))
    print(d, os.path.getsize(os.path.join(d, "big")) >> 20)
    os.remove(os.path.join(d, "big"))
except OSError as e:
    print(d, "failed:", e.strerror)
"""


def test_tmpdir_is_on_the_hosts_disk_not_the_1gib_tmpfs(client, image, tmp_path):
    """A build's temporary files (pip builds in TMPDIR) go below the writable mount, on the
    host's disk, as on a CI runner: grpcio 1.85.4's build filled the 1 GiB tmpfs /tmp (#43). Both
    a job's command (the workspace, TMPDIR /work/.tmp) and an isolated build (/out/.tmp)."""
    b = DockerBackend(image=image, run_id=f"test-{uuid.uuid4().hex[:10]}", cpus=1.0)
    w = replace(b.open("job1", tmp_path / "work" / "job1", PY, ""), release="1.0")
    try:
        res, out = run_py(b, w, BIG_TMP, timeout=300, name="tmp")
        assert res.exit_code == 0 and out.split() == ["/work/.tmp", "1100"], out
        res, out = run_py(b, w, BIG_TMP.replace("tempfile.gettempdir()", "'/tmp'"), timeout=300, name="tmpfs")
        assert out.split()[:2] == ["/tmp", "failed:"], out  # what it was before
        scratch = tmp_path / "scratch"
        scratch.mkdir()
        log = w.host("logs", "isolated.log")
        log.parent.mkdir(parents=True, exist_ok=True)
        log.touch()
        res = b.run_isolated(w, [PY, "-c", BIG_TMP], env={}, timeout=300, log=log, out=scratch)
        assert res.exit_code == 0 and log.read_text().split() == ["/out/.tmp", "1100"], log.read_text()
    finally:
        b.close(w)


def test_container_killed_from_outside_gives_a_signal(backend, ws, client):
    box = {}
    t = threading.Thread(
        target=lambda: box.update(
            r=run_py(backend, ws, "import time; print('up', flush=True); time.sleep(120)", name="victim")
        )
    )
    t.start()
    flt = {"label": [f"ft-harness.run={backend.run_id}", "ft-harness.job=job1"]}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        running = client.containers.list(filters=flt)
        if running and ws.host("logs", "victim.log").exists() and "up" in ws.host("logs", "victim.log").read_text():
            break
        time.sleep(0.2)
    running[0].kill(signal="SIGKILL")
    t.join(60)
    res, out = box["r"]
    assert res.signal == 9 and res.exit_code == 137
    assert not res.timed_out and not res.oom_killed
    assert out.strip() == "up"


def test_timeout_kills_the_container(backend, ws):
    started = time.monotonic()
    res, out = run_py(backend, ws, "import time; print('start', flush=True); time.sleep(300)", timeout=3, name="hang")
    took = time.monotonic() - started
    assert res.timed_out is True and res.exit_code is None
    assert 3 <= res.duration < 15 and took < 45
    assert out.splitlines()[0] == "start" and "[ft-harness] killed after 3s" in out


def test_a_container_whose_log_stays_silent_is_ended_at_idle(backend, ws):
    # prints for 4 s (not idle), then goes silent: ended 3 s later, long before its timeout
    started = time.monotonic()
    res, out = run_py(
        backend,
        ws,
        "import time\nfor i in range(8):\n    print(i, flush=True); time.sleep(0.5)\ntime.sleep(300)",
        timeout=120,
        name="silent",
        idle=3,
    )
    assert res.timed_out is True and time.monotonic() - started < 45
    assert out.splitlines()[-1].endswith("no output for 3s (stalled)") and "7" in out.splitlines()


def test_close_mid_run_removes_the_container_and_is_idempotent(backend, ws, client):
    box = {}
    t = threading.Thread(target=lambda: box.update(r=run_py(backend, ws, "import time; time.sleep(120)", name="long")))
    t.start()
    flt = {"label": [f"ft-harness.run={backend.run_id}"]}
    deadline = time.monotonic() + 60
    while not client.containers.list(filters=flt) and time.monotonic() < deadline:
        time.sleep(0.2)
    closers = [threading.Thread(target=backend.close, args=(ws,)) for _ in range(3)]
    for c in closers:
        c.start()
    for c in closers:
        c.join(30)
    t.join(60)
    res, _ = box["r"]
    assert res.exit_code is None and res.infra
    assert client.containers.list(all=True, filters=flt) == []
    res, _ = run_py(backend, ws, "print(1)", name="after-close")
    assert res.infra and res.exit_code is None  # a closed job runs nothing more


class _Proxy:
    """A unix-socket proxy in front of the docker socket that can be cut: the daemon
    'goes away' for the backend while the real engine keeps running for the cleanup."""

    def __init__(self, path: Path, target: str = "/var/run/docker.sock"):
        self.path, self.target, self.alive = path, target, True
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(path))
        self.server.listen(16)
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while self.alive:
            try:
                a, _ = self.server.accept()
            except OSError:
                return
            b = socket.socket(socket.AF_UNIX)
            b.connect(self.target)
            self.conns += [a, b]
            for x, y in ((a, b), (b, a)):
                threading.Thread(target=self._pipe, args=(x, y), daemon=True).start()

    @staticmethod
    def _pipe(x, y):
        try:
            while data := x.recv(65536):
                y.sendall(data)
        except OSError:
            pass
        finally:
            for s in (x, y):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def cut(self):
        self.alive = False
        self.server.close()
        os.unlink(self.path)
        for s in self.conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def test_daemon_going_away_mid_run_is_one_clear_infra_error(client, image, tmp_path):
    import docker

    proxy = _Proxy(tmp_path / "docker.sock")
    run_id = f"test-{uuid.uuid4().hex[:10]}"
    via = docker.DockerClient(base_url=f"unix://{proxy.path}", timeout=30)
    b = DockerBackend(image=image, run_id=run_id, cpus=1.0, client=via)
    ws = b.open("job1", tmp_path / "work" / "job1", PY, "")
    timer = threading.Timer(3, proxy.cut)
    timer.start()
    try:
        with pytest.raises(InfraError) as err:
            b.run(
                ws,
                [PY, "-c", "import time; time.sleep(60)"],
                env={},
                cwd="/work",
                timeout=120,
                log=ws.host("logs", "x.log"),
                network=False,
            )
        msg = str(err.value)
        assert msg.startswith("docker daemon is not answering: ") and "\n" not in msg
        assert err.value.return_code == 4
    finally:
        timer.join()
        for c in client.containers.list(all=True, filters={"label": f"ft-harness.run={run_id}"}):
            c.remove(force=True)


def test_local_source_outside_the_workspace_is_mounted_read_only(backend, tmp_path):
    src = tmp_path / "pkg"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "__init__.py").write_text("X = 42\n")
    w = backend.open("job2", tmp_path / "work" / "job2", PY, str(src))
    try:
        assert w.source == "/source"
        res = backend.run(
            w,
            [PY, "-c", "import pkg; print(pkg.X); open('/source/y', 'w')"],
            env={"PYTHONPATH": w.source},
            cwd="/work",
            timeout=60,
            log=w.host("logs", "src.log"),
            network=False,
        )
        out = w.host("logs", "src.log").read_text()
        assert res.exit_code == 1 and "42\n" in out and "Read-only file system" in out
    finally:
        backend.close(w)


@pytest.mark.network
def test_reproduce_commands_run_by_hand_with_the_network_only_for_install_steps(backend, ws):
    """A finding's reproduce line is pasted into a shell as is: a fetch/install one needs the
    network, the CA bundle and the cache volume the job had; a test step must not get a network."""
    cmd = f"PIP_CACHE_DIR=/cache/pip/x {PY} -m pip download --no-deps --dest /tmp/d six==1.17.0 && echo fetched"
    online = subprocess.run(
        backend.reproduce_command(ws, cmd, network=True), shell=True, capture_output=True, text=True, timeout=300
    )
    assert online.returncode == 0 and "fetched" in online.stdout, online.stdout + online.stderr
    offline_cmd = backend.reproduce_command(ws, cmd, network=False)
    assert "--network none" in offline_cmd
    offline = subprocess.run(offline_cmd, shell=True, capture_output=True, text=True, timeout=300)
    assert offline.returncode != 0 and "fetched" not in offline.stdout


def test_a_reproduce_line_carries_the_jobs_isolation(backend, ws):
    """Pasted by hand, a test step gets what the job had (#16): not root, no capabilities, no
    new privileges, a read-only root with a writable /tmp, the pids limit."""
    probe = (
        "id -u; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; "
        "touch /x 2>/dev/null && echo root-writable; touch /tmp/y && echo tmp-writable"
    )
    line = backend.reproduce_command(ws, probe, network=False)
    assert f"--pids-limit {backend.pids_limit} --memory {backend.mem_limit}" in line and " --init " in line
    r = subprocess.run(line, shell=True, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.split()
    assert lines[0] == str(backend.uid) != "0"
    assert "0000000000000000" in r.stdout and "NoNewPrivs:\t1" in r.stdout
    assert "root-writable" not in r.stdout and "tmp-writable" in r.stdout
