"""The silence watch asks a frozen test run for its stacks before it ends it (issue #58): a real
pytest with xdist workers and the harness's watchdog plugin, whose one test disarms both
in-process watchdogs (SIGALRM blocked, the itimer off, faulthandler's later dump cancelled) and
waits on a lock in four threads. The local backend sends each process of the group SIGUSR1,
faulthandler writes every thread's stack to the log, and the phase names the test with them."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from harness.backends.local import LocalBackend, group_pids
from harness.core.model import Phase
from harness.job.watchdog import SOURCE as PLUGIN
from harness.job.watchdog import seconds, stall_seconds
from harness.parse import parse_phase

PY = sys.executable
TESTS = """\
import faulthandler, signal, threading

GATE = threading.Lock()
GATE.acquire()


def wait_forever():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    signal.setitimer(signal.ITIMER_REAL, 0)
    faulthandler.cancel_dump_traceback_later()
    GATE.acquire()


def test_quick():
    pass


def test_waits_for_the_gate():
    threads = [threading.Thread(target=wait_forever, name=f"waiter-{i}") for i in range(4)]
    for t in threads:
        t.start()
    wait_forever()
"""


def test_a_frozen_run_gives_its_stacks_and_is_named_a_hang_with_them(tmp_path: Path) -> None:
    (tmp_path / "test_frozen.py").write_text(TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    ws = LocalBackend().open("job", tmp_path, PY, "")
    log = tmp_path / "logs" / "threads-gil0-r1.log"
    log.parent.mkdir()
    log.write_text("$ pytest\n")
    env = {
        "PYTHONPATH": str(PLUGIN.parent),
        "PYTEST_PLUGINS": PLUGIN.stem,
        "FT_HARNESS_WATCHDOG": "100",  # armed (and SIGUSR1 registered), never reached here
        "PYTHONUNBUFFERED": "1",
    }
    argv = [PY, "-m", "pytest", "-p", "no:cacheprovider", "-v", "--timeout=5", "-n", "2", "test_frozen.py"]
    t0 = time.monotonic()
    ex = LocalBackend().run(ws, argv, env=env, cwd=str(tmp_path), timeout=300, log=log, network=False, idle=8)
    took = time.monotonic() - t0
    # pytest-timeout (5 s) never fired: only the silence (8 s) ended it, its stacks asked first
    assert ex.timed_out and took < 60, (ex, took)
    text = log.read_text()
    assert "asked every process for its stacks (signal 10)" in text and "Failed: Timeout" not in text
    assert text.count("in wait_forever") >= 5, text[-3000:]  # the main thread and its four
    p = parse_phase(
        Phase(
            name="threads-gil0-r1",
            kind="threads",
            gil=0,
            exit_code=None,
            timed_out=True,
            duration=ex.duration,
            log="logs/threads-gil0-r1.log",
            env={"FT_HARNESS_WATCHDOG": "100"},
        ),
        tmp_path,
    )
    assert p.hang is not None and p.hang.stalled and not p.hang.spent
    (hung,) = p.hang.tests
    assert hung.test_id == "test_frozen.py::test_waits_for_the_gate"
    assert hung.stack_top.endswith("test_frozen.py:11 in wait_forever"), hung.stack_top
    assert hung.excerpt.count("test_frozen.py:11 in wait_forever") >= 5, hung.excerpt
    assert "test_frozen.py:22 in test_waits_for_the_gate" in hung.excerpt
    assert "its stacks, asked from outside" in hung.excerpt
    assert p.tests["test_frozen.py::test_waits_for_the_gate"].outcome == "timeout"
    assert p.tests["test_frozen.py::test_quick"].outcome == "passed"
    assert not p.crashes


def test_group_pids_lists_the_group_oldest_first(tmp_path: Path) -> None:
    import subprocess

    proc = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len(pids := group_pids(proc.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pids[0] == proc.pid and len(pids) == 3 and pids == sorted(pids)
    finally:
        import os
        import signal

        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_the_silence_watch_ends_a_frozen_test_within_twice_the_watchdogs_time() -> None:
    # the stacks and the kill take a few seconds past the silence (a process asked every 0.3 s,
    # then 2 s for the last dump): room left at every timeout
    for test_timeout in (5, 10, 60, 120, 600):
        assert stall_seconds(test_timeout) + 6 < 2 * seconds(test_timeout), test_timeout
    assert stall_seconds(120) == 310  # the default matrix's, unchanged
