"""harness.backends.local on real subprocesses: exit codes, signals, the job timeout killing the
whole process group, the data cap, the cleaned environment, cancel."""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.backends.base import Workspace
from harness.backends.local import LocalBackend
from harness.core.model import Exec

PY = sys.executable


def run(
    backend: LocalBackend,
    tmp: Path,
    argv: list[str],
    *,
    timeout: float = 60,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    idle: float = 0,
) -> tuple[Exec, str]:
    ws = backend.open("job", tmp, PY, "")
    log = tmp / "logs" / "step.log"
    log.parent.mkdir(exist_ok=True)
    ex = backend.run(ws, argv, env=env or {}, cwd=str(cwd or tmp), timeout=timeout, log=log, network=False, idle=idle)
    return ex, log.read_text() if log.exists() else ""


def gone(pid: int, within: float = 10.0) -> bool:
    """True once ``pid`` no longer runs (exited, or a zombie nobody reaped yet)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_exit_code_and_both_streams_in_the_log(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "step.log"
    log.parent.mkdir()
    log.write_text("$ header written by job.py\n")
    ex, text = run(LocalBackend(), tmp_path, ["sh", "-c", "echo to-out; echo to-err >&2; exit 3"])
    assert (ex.exit_code, ex.signal, ex.timed_out, ex.infra) == (3, None, False, "")
    assert ex.duration > 0
    assert text == "$ header written by job.py\nto-out\nto-err\n"  # appended, in order


@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGABRT, signal.SIGKILL])
def test_a_signal_is_reported_as_the_signal(tmp_path: Path, sig: signal.Signals) -> None:
    ex, _ = run(LocalBackend(), tmp_path, [PY, "-c", f"import os; os.kill(os.getpid(), {int(sig)})"])
    assert ex.signal == sig
    assert ex.exit_code == -sig
    assert not ex.timed_out


def test_each_command_leads_its_own_process_group(tmp_path: Path) -> None:
    code = "import os; print(os.getpid(), os.getpgid(0), os.getsid(0))"
    ex, text = run(LocalBackend(), tmp_path, [PY, "-c", code])
    assert ex.exit_code == 0
    pid, pgid, sid = map(int, text.split())
    assert pid == pgid == sid  # a new session: a kill of the group cannot reach the harness
    assert pgid != os.getpgid(0)


def test_the_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    script = "sleep 300 & echo $! > child.pid; echo started; sleep 300"
    t0 = time.monotonic()
    ex, text = run(LocalBackend(), tmp_path, ["sh", "-c", script], timeout=1)
    assert time.monotonic() - t0 < 20
    assert ex.timed_out
    assert (ex.exit_code, ex.signal) == (None, None)  # a hang, not the package's signal
    assert text.startswith("started\n")
    assert text.endswith("\n[ft-harness] killed after 1s (job timeout)\n")
    assert gone(int((tmp_path / "child.pid").read_text()))


def test_leftovers_of_a_finished_command_are_killed(tmp_path: Path) -> None:
    ex, _ = run(LocalBackend(), tmp_path, ["sh", "-c", "sleep 300 & echo $! > child.pid"])
    assert ex.exit_code == 0 and not ex.timed_out
    assert gone(int((tmp_path / "child.pid").read_text()))


CAP_PROBE = """
import resource, sys, time
cap = int(sys.argv[1])
deadline = time.monotonic() + 5
while resource.getrlimit(resource.RLIMIT_DATA)[0] != cap:  # set just after the process starts
    if time.monotonic() > deadline:
        print("no cap:", resource.getrlimit(resource.RLIMIT_DATA)); sys.exit(2)
    time.sleep(0.01)
try:
    block = bytearray(4 * cap)
except MemoryError:
    print("capped"); sys.exit(0)
print("allocated", len(block)); sys.exit(1)
"""


def test_the_data_cap_stops_a_runaway_allocation(tmp_path: Path) -> None:
    cap = 256 << 20
    ex, text = run(LocalBackend(mem_limit=cap), tmp_path, [PY, "-c", CAP_PROBE, str(cap)])
    assert (ex.exit_code, text.strip()) == (0, "capped")


def test_the_default_cap_is_the_limit_memory_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the named limit (#43), as FT_HARNESS_LIMIT_MEMORY_BYTES sets it for a run; 6 GiB unset
    assert LocalBackend().mem_limit == 6 << 30
    cap = 384 << 20
    monkeypatch.setenv("FT_HARNESS_LIMIT_MEMORY_BYTES", str(cap))
    ex, text = run(LocalBackend(), tmp_path, [PY, "-c", CAP_PROBE, str(cap)])
    assert (ex.exit_code, text.strip()) == (0, "capped")


def test_docker_reads_the_limit_in_its_own_units() -> None:
    from harness.backends.dockerconfig import docker_bytes

    assert [docker_bytes(n) for n in (6 << 30, 512 << 20, 3 << 10, 1000)] == ["6g", "512m", "3k", "1000b"]


def test_no_cap_leaves_the_limit_as_it_was(tmp_path: Path) -> None:
    code = "import resource; print(*resource.getrlimit(resource.RLIMIT_DATA))"
    ex, text = run(LocalBackend(mem_limit=None), tmp_path, [PY, "-c", code])
    assert ex.exit_code == 0
    assert tuple(map(int, text.split())) == resource.getrlimit(resource.RLIMIT_DATA)


def test_the_harness_environment_does_not_leak_into_a_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/harness/own/path")
    monkeypatch.setenv("VIRTUAL_ENV", "/harness/venv")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    monkeypatch.setenv("PYTEST_ADDOPTS", "-x")
    monkeypatch.setenv("PIP_INDEX_URL", "https://mirror.invalid/simple")  # the user's index stays
    monkeypatch.setenv("FT_UNRELATED", "kept")
    code = "import json, os; print(json.dumps(dict(os.environ)))"
    ex, text = run(LocalBackend(), tmp_path, [PY, "-c", code], env={"PYTHON_GIL": "0", "FT_UNRELATED": "the job's own"})
    assert ex.exit_code == 0
    env = json.loads(text)
    for leaked in ("PYTHONPATH", "VIRTUAL_ENV", "PIP_NO_CACHE_DIR", "PYTEST_ADDOPTS"):
        assert leaked not in env
    assert env["PIP_INDEX_URL"] == "https://mirror.invalid/simple"
    assert env["PYTHON_GIL"] == "0"  # the job's env is applied after the cleaning
    assert env["FT_UNRELATED"] == "the job's own"


def test_cwd_and_an_empty_stdin(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    code = "import os, sys; print(os.getcwd()); print(repr(sys.stdin.read()))"
    saved, (r, w) = os.dup(0), os.pipe()
    os.dup2(r, 0)  # the harness's own stdin is a pipe nobody closes (as under a CI runner)
    try:
        ex, text = run(LocalBackend(), tmp_path, [PY, "-c", code], cwd=tmp_path / "src", timeout=10)
    finally:
        os.dup2(saved, 0)
        for fd in (saved, r, w):
            os.close(fd)
    assert (ex.exit_code, ex.timed_out) == (0, False)  # a read of stdin does not wait forever
    assert text.splitlines() == [str(tmp_path / "src"), "''"]


def test_a_command_that_cannot_start_is_an_outcome_not_an_exception(tmp_path: Path) -> None:
    ex, _ = run(LocalBackend(), tmp_path, [str(tmp_path / "no-such-program")])
    assert ex.exit_code is None and not ex.timed_out
    assert ex.infra.startswith(f"cannot start {tmp_path / 'no-such-program'}:")


def test_cancel_ends_a_running_command_and_starts_no_new_one(tmp_path: Path) -> None:
    backend = LocalBackend()
    got: list[Exec] = []
    script = "echo started > started; exec sleep 300"
    t = threading.Thread(target=lambda: got.append(run(backend, tmp_path, ["sh", "-c", script], timeout=120)[0]))
    t.start()
    deadline = time.monotonic() + 20
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.02)
    backend.cancel()
    t.join(20)
    assert not t.is_alive()
    (ex,) = got
    assert ex.infra == "cancelled" and ex.signal == signal.SIGKILL and not ex.timed_out
    ex, _ = run(backend, tmp_path, ["sh", "-c", "touch ran"])
    assert (ex.exit_code, ex.infra) == (None, "cancelled")
    assert not (tmp_path / "ran").exists()


def test_workspace_and_the_rest_of_the_protocol(tmp_path: Path) -> None:
    backend = LocalBackend(pip_cache=tmp_path / "pip")
    ws = backend.open("job", tmp_path / "work" / "job", "/opt/py/bin/python3.13t", "/src/pkg")
    assert ws == Workspace(
        host_root=tmp_path / "work" / "job",
        root=str(tmp_path / "work" / "job"),
        python="/opt/py/bin/python3.13t",
        source="/src/pkg",
        pip_cache=str(tmp_path / "pip"),
    )
    assert ws.path("logs", "x.log") == f"{tmp_path}/work/job/logs/x.log"
    assert LocalBackend().open("job", tmp_path, PY, "").pip_cache == ""
    assert backend.reproduce_command(ws, "python -m pytest -x", network=True) == "python -m pytest -x"
    assert backend.healthy()
    backend.close(ws)
    backend.close(ws)  # idempotent


def test_a_log_planted_as_a_link_is_never_written_through(tmp_path: Path) -> None:
    # package code of an earlier step replaced the next log with a link to a host file (#17)
    host = tmp_path / "host.txt"
    host.write_text("host file\n")
    b = LocalBackend()
    ws = b.open("job", tmp_path, PY, "")
    (tmp_path / "logs").mkdir()
    log = tmp_path / "logs" / "step.log"
    log.symlink_to(host)
    ex = b.run(ws, ["sh", "-c", "echo written"], env={}, cwd=str(tmp_path), timeout=30, log=log, network=False)
    assert ex.infra.startswith("cannot open the log step.log") and host.read_text() == "host file\n"
    log.unlink()
    log.write_text("")  # the timeout note is appended without following a link either
    ex = b.run(
        ws,
        ["sh", "-c", f"ln -sf {host} {log}.tmp && mv {log}.tmp {log}; sleep 30"],
        env={},
        cwd=str(tmp_path),
        timeout=1,
        log=log,
        network=False,
    )
    assert ex.timed_out and host.read_text() == "host file\n"


def test_a_command_whose_log_stays_silent_is_ended_at_idle_not_the_timeout(tmp_path: Path) -> None:
    # a real pytest whose test sleeps past `idle`, no pytest-timeout: frozen as far as the log
    # shows; the note is what harness.parse.hang reads as a stall, and the phase parses as a hang
    (tmp_path / "test_freeze.py").write_text(
        "import time\n\ndef test_quick():\n    pass\n\ndef test_freezes():\n    time.sleep(60)\n"
    )
    ws = LocalBackend().open("job", tmp_path, PY, "")
    log = tmp_path / "logs" / "plain-gil0.log"
    log.parent.mkdir()
    log.write_text("$ pytest\n")
    t0 = time.monotonic()
    ex = LocalBackend().run(
        ws,
        [PY, "-m", "pytest", "-p", "no:cacheprovider", "-v", "test_freeze.py"],
        env={},
        cwd=str(tmp_path),
        timeout=120,
        log=log,
        network=False,
        idle=3,
    )
    assert ex.timed_out and ex.exit_code is None and time.monotonic() - t0 < 30
    text = log.read_text()
    assert "test_freeze.py::test_quick PASSED" in text
    assert re.search(r"\n\[ft-harness\] killed after \d+s: no output for 3s \(stalled\)\n$", text), text[-300:]

    from harness.core.model import Phase
    from harness.parse import parse_phase

    p = parse_phase(
        Phase(
            name="plain-gil0",
            kind="plain",
            gil=0,
            exit_code=None,
            timed_out=True,
            duration=ex.duration,
            log="logs/plain-gil0.log",
            env={"FT_HARNESS_WATCHDOG": "1"},
        ),
        tmp_path,
    )
    assert p.hang is not None and not p.hang.spent and p.hang.running == "test_freeze.py::test_freezes"
    assert p.hang.why == (
        "no output for 3 s, then ended by ft-harness while running "
        "test_freeze.py::test_freezes: the process froze so that neither "
        "pytest-timeout nor the watchdog could end it"
    )


def test_a_command_that_keeps_printing_is_not_idle(tmp_path: Path) -> None:
    ex, text = run(LocalBackend(), tmp_path, ["sh", "-c", "for i in 1 2 3 4 5 6; do echo $i; sleep 0.5; done"], idle=2)
    assert (ex.exit_code, ex.timed_out) == (0, False) and "stalled" not in text
