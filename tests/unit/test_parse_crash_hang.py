"""Crashes (faulthandler + xdist's crashed workers + exit by signal) and hangs
(pytest-timeout, job timeout) in captured real runs."""

import json
import signal
from pathlib import Path

from harness.model import Phase
from harness.parse import parse_phase
from harness.parse.crash import fatal_blocks, phase_signal, signal_of
from harness.parse.hang import timeout_blocks

DATA = Path(__file__).resolve().parents[1] / "data" / "parse"


def phase(case: str, name: str) -> Phase:
    d = DATA / case
    return parse_phase(Phase.from_dict(json.loads((d / "phases" / f"{name}.json").read_text())), d)


def test_xdist_crashes_are_matched_to_their_tests_by_stack():
    p = phase("crash", "plain-gil0")
    got = {c.test_id: c for c in p.crashes}
    assert set(got) == {"tests/test_crash.py::test_segv", "tests/test_crash.py::test_segv_nogil_only"}
    for tid, c in got.items():
        assert c.signal == signal.SIGSEGV
        assert c.test_frame.endswith("in " + tid.rsplit("::", 1)[1])
        assert "crashed while running" in c.excerpt
    assert "line 10 in test_segv" in got["tests/test_crash.py::test_segv"].test_frame


def test_gil_on_run_crashes_only_the_unconditional_test():
    p = phase("crash", "threads-gil1-r1")
    assert [c.test_id for c in p.crashes] == ["tests/test_crash.py::test_segv"]
    assert p.tests["tests/test_crash.py::test_segv_nogil_only"].outcome == "passed"


def test_without_xdist_the_process_dies_and_the_running_test_is_named():
    p = phase("crash-noxdist", "threads-gil0-r1")
    assert p.exit_code == -11 and p.junit == ""
    assert p.crash.test_id == "tests/test_crash.py::test_segv"
    assert p.crash.signal == 11 and p.crash.fatal == "Segmentation fault"
    assert p.tests["tests/test_crash.py::test_segv"].outcome == "crashed"
    assert p.tests["tests/test_crash.py::test_before"].outcome == "passed"


def test_fatal_blocks_and_signals():
    text = (DATA / "crash-noxdist/logs/plain-gil1.log").read_text()
    (b,) = fatal_blocks(text)
    assert b["signal"] == signal.SIGSEGV and "string_at" in b["stack_top"]
    assert signal_of("Aborted") == signal.SIGABRT and signal_of("nonsense") is None
    assert phase_signal(-6, None) == 6 and phase_signal(139, None) == 11
    assert phase_signal(1, None) is None


def test_cut_crash_log_does_not_raise():
    p = phase("crash-cut", "plain-gil0")
    # the log stops inside faulthandler's dump and the JUnit XML mid-case: no crash is made up
    # from the half-dump, and the excerpt says what was cut
    assert p.crashes == () and p.exit_code == 1
    assert "junit/plain-gil0.xml is truncated or malformed" in p.excerpt


def test_pytest_timeout_names_the_test_and_its_frame():
    p = phase("hang", "plain-gil0")
    assert p.hang.test_id == "tests/test_hang.py::test_sleeps_forever"
    assert p.hang.tests[0].stack_top == "tests/test_hang.py:14"
    t0 = phase("hang", "threads-gil0-r1").hang.tests
    assert any(x.stack_top == "tests/test_hang.py:14 in test_sleeps_forever: time.sleep(600)"
               for x in t0)
    lock = next(x for x in t0 if x.test_id.endswith("test_lock_order"))
    # every thread, and where it waits (issue #20: only the test's own frame was shown, 4 times)
    assert lock.excerpt.count(" waits in tests/test_hang.py:") == 4
    assert "in test_lock_order: with second:" in lock.excerpt
    assert "in test_lock_order: with first:" in lock.excerpt
    assert p.hang.job_timeout is False
    t = phase("hang", "threads-gil0-r1")
    assert {x.test_id for x in t.hang.tests} == {
        "tests/test_hang.py::test_sleeps_forever", "tests/test_hang.py::test_lock_order"}
    assert len(timeout_blocks((DATA / "hang/logs/threads-gil0-r1.log").read_text())) == 2


def test_job_timeout_after_pytest_finished():
    p = phase("hang-noxdist", "threads-gil1-r1")
    assert p.timed_out and p.hang.job_timeout
    assert "did not exit" in p.hang.why
    assert p.tests["tests/test_hang.py::test_lock_order"].outcome == "timeout"


def test_plain_runs_without_trouble_have_no_crash_or_hang():
    p = phase("mix", "plain-gil1")
    assert p.crashes == () and p.crash is None and p.hang is None
