"""Crashes (faulthandler + xdist's crashed workers + exit by signal) and hangs
(pytest-timeout, job timeout) in captured real runs."""

import json
import signal
from pathlib import Path

from harness.core.model import Phase
from harness.parse import incomplete, parse_phase
from harness.parse.crash import fatal_blocks, find_crashes, phase_signal, signal_of
from harness.parse.hang import timeout_blocks, watchdog_dumps, watchdog_tests

DATA = Path(__file__).resolve().parents[2] / "data" / "parse"


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
    # the log stops inside faulthandler's dump and the JUnit XML mid-case, after xdist's live
    # "[gw1] node down" and "[gw1] ... FAILED <test> Fatal Python error: Segmentation fault":
    # the crash is the one xdist said (no summary, no junit needed), and the excerpt says what was cut
    assert [(c.test_id, c.signal) for c in p.crashes] == [("tests/test_crash.py::test_segv_nogil_only", 11)]
    assert p.exit_code == 1
    assert "junit/plain-gil0.xml is truncated or malformed" in p.excerpt


def test_pytest_timeout_names_the_test_and_its_frame():
    p = phase("hang", "plain-gil0")
    assert p.hang.test_id == "tests/test_hang.py::test_sleeps_forever"
    assert p.hang.tests[0].stack_top == "tests/test_hang.py:14"
    t0 = phase("hang", "threads-gil0-r1").hang.tests
    assert any(x.stack_top == "tests/test_hang.py:14 in test_sleeps_forever: time.sleep(600)" for x in t0)
    lock = next(x for x in t0 if x.test_id.endswith("test_lock_order"))
    # every thread, and where it waits (issue #20: only the test's own frame was shown, 4 times)
    assert lock.excerpt.count(" waits in tests/test_hang.py:") == 4
    assert "in test_lock_order: with second:" in lock.excerpt
    assert "in test_lock_order: with first:" in lock.excerpt
    assert p.hang.job_timeout is False
    t = phase("hang", "threads-gil0-r1")
    assert {x.test_id for x in t.hang.tests} == {
        "tests/test_hang.py::test_sleeps_forever",
        "tests/test_hang.py::test_lock_order",
    }
    assert len(timeout_blocks((DATA / "hang/logs/threads-gil0-r1.log").read_text())) == 2


def test_job_timeout_after_pytest_finished():
    p = phase("hang-noxdist", "threads-gil1-r1")
    assert p.timed_out and p.hang.job_timeout
    assert "did not exit" in p.hang.why
    assert p.tests["tests/test_hang.py::test_lock_order"].outcome == "timeout"


def test_plain_runs_without_trouble_have_no_crash_or_hang():
    p = phase("mix", "plain-gil1")
    assert p.crashes == () and p.crash is None and p.hang is None


# ft_cwait (tests/fixtures/packages/ft_cwait): test_ready_after_setup's main thread waits in
# pthread_cond_wait, which pytest-timeout's signal cannot end; the watchdog plugin dumps every
# thread at 2 x test_timeout + 10 s (20 s here) and ends the process. "watchdog" is the real
# harness run (its plain runs under pytest-xdist), "watchdog-noxdist" its plain-gil0 again
# without workers (tests/data/parse/_tools/rerun_phase.py).
CWAIT = "tests/test_gate.py::test_ready_after_setup"


def test_watchdog_ends_a_wait_in_c_without_xdist_as_a_hang():
    p = phase("watchdog-noxdist", "plain-gil0")
    # faulthandler ended the process: exit 1, no summary line, no JUnit file
    assert p.exit_code == 1 and p.signal is None and p.junit == "" and not p.timed_out
    assert p.crashes == () and p.crash is None
    assert p.tests[CWAIT].outcome == "timeout"
    (t,) = p.hang.tests
    assert t.test_id == CWAIT and not p.hang.job_timeout
    assert t.stack_top == "ft_cwait/__init__.py:7 in ready"
    head, *waits = t.excerpt.splitlines()
    assert head == (
        f"{CWAIT}: still running after 0:00:20 (a wait pytest-timeout's signal cannot "
        "end); ft-harness's watchdog dumped every thread and ended the process"
    )
    assert waits == [
        f"{waits[0].split(' waits in ')[0]} waits in ft_cwait/__init__.py:7 in ready",
        "    called from tests/test_gate.py:5 in test_ready_after_setup",
    ]
    assert incomplete(p) == ""  # the cut log is the watchdog's doing, and the hang says so


def test_watchdog_ending_an_xdist_worker_is_a_hang_not_a_crash():
    for name in ("plain-gil0", "plain-gil1"):
        p = phase("watchdog", name)
        # the controller said "worker 'gw0' crashed while running ..." and went on
        assert "worker 'gw0' crashed while running" in (DATA / "watchdog" / p.log).read_text()
        assert p.crashes == () and p.crash is None, p.crashes
        assert p.tests[CWAIT].outcome == "timeout"
        assert p.tests["tests/test_gate.py::test_nothing_to_wait_for"].outcome == "passed"
        (t,) = p.hang.tests
        assert t.test_id == CWAIT and t.stack_top == "ft_cwait/__init__.py:7 in ready"
        assert "ft-harness's watchdog dumped every thread" in t.excerpt
        # the execnet thread (all machinery) is left out; the worker's main thread is shown
        assert t.excerpt.count(" waits in ") == 1 and "<string>" not in t.excerpt
    # its threaded runs: the main thread joins in Python, so pytest-timeout ended the test
    t = phase("watchdog", "threads-gil0-r1").hang.tests[0]
    assert t.excerpt.startswith(f"{CWAIT}: Timeout from pytest-timeout")
    assert t.excerpt.count("waits in ft_cwait/__init__.py:7 in ready: _latch.wait()") == 4


def test_watchdog_tests_needs_the_test_on_a_dumped_stack():
    text = (DATA / "watchdog/logs/plain-gil0.log").read_text()
    assert watchdog_tests(text, [CWAIT, "tests/test_gate.py::test_nothing_to_wait_for"]) == {CWAIT: "0:00:20"}
    (d,) = watchdog_dumps(text)  # its header glued to the other worker's result line
    assert d.before == "[gw1] [ 50%] PASSED tests/test_gate.py::test_nothing_to_wait_for"
    # a genuine crash under xdist has no watchdog dump, and stays a crash
    crash = (DATA / "crash/logs/plain-gil0.log").read_text()
    assert watchdog_dumps(crash) == [] and watchdog_tests(crash, ["tests/test_crash.py::test_segv"]) == {}
    assert {c.test_id for c in phase("crash", "plain-gil0").crashes} == {
        "tests/test_crash.py::test_segv",
        "tests/test_crash.py::test_segv_nogil_only",
    }


def test_watchdog_job_is_one_hang_in_both_modes_and_no_crash():
    from harness.core.jobspec import Settings
    from harness.verdict import decide
    from tests.unit.verdict.test_verdict import load

    d = decide(load("watchdog"), settings=Settings())
    assert d.verdict == "hang"
    (f,) = d.findings
    assert (f.kind, f.test_id, f.modes, f.ratio) == ("hang", CWAIT, (0, 1), "4/4")
    # the suite's plain runs were ended by the watchdog; the finding shows the run alone
    # (pytest-timeout's thread method, its ruler glued to the test id), with source lines
    for name in ("plain-gil0", "plain-gil1"):
        assert "ft-harness's watchdog dumped every thread" in phase("watchdog", name).hang.excerpt
    assert f.excerpt.startswith(f"{CWAIT}: Timeout from pytest-timeout")
    assert "MainThread waits in ft_cwait/__init__.py:7 in ready" in f.excerpt


def test_a_budget_spent_mid_suite_is_its_own_cause_not_a_hang():
    # a real run (test_timeout 5): the job's budget (120 s) ran out in plain-gil0, 106 s long,
    # with 212 tests passed and one running; the watchdog (20 s) would have ended a stuck test
    from harness.core.jobspec import Settings
    from harness.verdict import decide
    from tests.unit.verdict.test_verdict import load

    p = phase("budget-spent", "plain-gil0")
    assert p.timed_out and p.hang is not None and p.hang.spent and not p.hang.tests
    assert p.counts == {"passed": 212}  # the running test is not a timeout
    assert p.hang.running == "tests/test_slow.py::test_step[215]"
    d = decide(load("budget-spent"), settings=Settings(job_timeout=120))
    assert d.verdict == "infra-error"  # nothing red in what ran, but the runs are not whole
    (f,) = d.findings
    assert f.kind == "budget-spent" and f.phase == "plain-gil0" and not f.test_id
    assert f.message.startswith(
        "the job's budget (job_timeout 120 s) ran out during plain-gil0 with the suite still running"
    )
    assert "Raise `settings.job_timeout`" in f.message
    assert f.excerpt == (
        "the job's budget ran out with the suite still running: 212 tests had "
        "finished in this run of 106 s, tests/test_slow.py::test_step[215] was "
        "running (the watchdog ends a test at 20 s)"
    )


def test_a_job_timeout_before_the_watchdog_could_fire_claims_no_hang():
    # the same run, as if the watchdog were armed at 250 s (test_timeout 120): the budget cut the
    # phase at 106 s, before any test could have run past the watchdog, so nothing says the
    # running test was stuck (issue #36: a claim only from evidence; six 1.17.0's last GIL-off
    # run was cut so, and was published as the hang-free ft-race it could not show)
    import dataclasses
    import json

    from harness.core.model import Phase
    from harness.parse import parse_phase

    d = DATA / "budget-spent"
    raw = Phase.from_dict(json.loads((d / "phases" / "plain-gil0.json").read_text()))
    p = parse_phase(dataclasses.replace(raw, env={**raw.env, "FT_HARNESS_WATCHDOG": "250"}), d)
    assert p.hang is not None and p.hang.spent and not p.hang.tests
    assert p.hang.why.startswith("the job's budget ran out 106 s into this run, before the watchdog's 250 s")
    assert (
        "tests/test_slow.py::test_step[215]" not in p.tests
        or p.tests["tests/test_slow.py::test_step[215]"].outcome != "timeout"
    )


def test_a_job_timeout_without_the_watchdog_names_the_running_test_once():
    # sqlalchemy's run from before the watchdog: a wait in C would look the same, so it names the
    # running test (the log is its first and last lines); seen once and never run alone, it is no
    # `hang` verdict (issue #58), it is shown unconfirmed with its counts
    from harness.core.jobspec import Settings
    from harness.verdict import decide
    from tests.unit.verdict.test_verdict import load

    p = phase("job-timeout-nowatchdog", "plain-gil0")
    assert p.hang is not None and p.hang.job_timeout and not p.hang.spent
    assert p.hang.why.startswith("job timeout while running test/orm/declarative/")
    d = decide(load("job-timeout-nowatchdog"), settings=Settings())
    # and the budget it took is said: no threaded run happened after it (shown, not the verdict)
    assert d.verdict == "infra-error" and [f.kind for f in d.findings] == ["budget-spent", "unconfirmed"]
    assert d.findings[1].message.startswith("hang not claimed: seen once (1/1 suite runs with the GIL off)")


def test_pytest_timeout_firing_inside_pytest_is_the_tests_timeout_not_a_broken_pytest():
    # psutil: SIGALRM landed in pytest's report formatting; the worker's INTERNALERROR names the
    # running test (xdist's crashitem). A hang of that test, the rest of the run's results kept.
    from harness.core.jobspec import Settings
    from harness.verdict import decide
    from tests.unit.verdict.test_verdict import load

    p = phase("internal-timeout", "threads-gil0-r1")
    tid = "tests/test_process.py::TestProcess::test_long_name"
    assert p.exit_code == 3 and p.tests[tid].outcome == "timeout"
    assert p.tests[tid].message == (
        "Timeout (>60.0s) from pytest-timeout, raised inside pytest's own code (INTERNALERROR)"
    )
    from harness.parse import incomplete

    assert incomplete(p) == ""  # no "pytest INTERNALERROR" note: the results stand
    # pytest's own count; the JUnit's two nameless `<testcase time="0.000" />` are no tests
    assert p.counts["passed"] == 235 and ".py" not in p.tests
    assert p.hang is not None and p.hang.test_id == tid
    d = decide(load("internal-timeout"), settings=Settings(test_timeout=60), claims=False)
    assert d.verdict == "hang"  # what the run nominates
    assert not [f for f in d.findings if f.kind == "infra-error"], [f.message for f in d.findings]
    (h,) = [f for f in d.findings if f.kind == "hang"]
    assert h.test_id == tid and h.modes == (0,)
    # one captured run, never run alone: no `hang` verdict from it (issue #58), shown with its counts
    claimed = decide(load("internal-timeout"), settings=Settings(test_timeout=60))
    assert [f.kind for f in claimed.findings if f.test_id == tid] == ["unconfirmed"]


def test_a_watchdog_dump_that_names_no_test_is_paired_with_its_worker():
    # pygments 2.21.0, zero configuration, threads-gil0-r1 (cut): in two workers a test_cmdline
    # test stalled in threads; pytest-timeout fired and, while it dumped stacks, the watchdog
    # ended the worker. The dumps name no test (the test's threads had no Python frame); each is
    # followed by "[gwN] node down", and xdist's later "worker 'gwN' crashed while running X"
    # is the watchdog's ending of X: a timeout, not a crash
    text = (DATA / "watchdog-nameless" / "threads-gil0-r1.log").read_text()
    got = watchdog_tests(text, ["tests/test_cmdline.py::test_F_opt", "tests/test_cmdline.py::test_P_opt"])
    assert got == {"tests/test_cmdline.py::test_F_opt": "0:02:10", "tests/test_cmdline.py::test_P_opt": "0:02:10"}
    # a worker that crashed with no dump before its "node down" is not paired
    assert watchdog_tests(text.split("[... lines cut ...]", 1)[1], ["tests/test_cmdline.py::test_F_opt"]) == {}
    # the same log cut before xdist's summary (the job's budget): its live "[gwN] node down" and
    # "[gwN] ... FAILED X" pair them the same, and parse.crash names the same two crashed workers
    cut = text[: text.index("worker 'gw0' crashed while running")]
    assert watchdog_tests(cut, ["tests/test_cmdline.py::test_F_opt", "tests/test_cmdline.py::test_P_opt"]) == got
    assert [c.test_id for c in find_crashes(cut, exit_code=None, sig=None, unfinished=[])] == list(got)


def test_interleaved_dumps_of_two_crashing_threads_keep_the_tests_stack():
    """Captured from ft_realloc with 8 threads: a second ``Fatal Python error`` inside a frame
    line, a second block with no ``Current thread``, a dump cut before any."""
    d = DATA / "crash-interleaved"
    for name, fatal in (
        ("two-fatal-on-a-line", "Segmentation fault"),
        ("two-fatal-in-a-frame", "Segmentation fault"),
        ("no-current-thread", "Aborted"),
    ):
        text = (d / f"{name}.log").read_text()
        assert len(fatal_blocks(text)) == (1 if name == "no-current-thread" else 2)
        (c,) = find_crashes(text, exit_code=-11, sig=None, unfinished=["tests/test_fill.py::test_fill_large"])
        assert c.test_id == "tests/test_fill.py::test_fill_large"
        assert "test_fill.py" in c.stack_top and "test_fill_large" in c.test_frame, (name, c)
        assert c.fatal == fatal and c.excerpt.startswith(f"Fatal Python error: {fatal}\n"), (name, c.excerpt)
        assert '  File "/src/tests/test_fill.py", line 13 in test_fill_large' in c.excerpt
    named = find_crashes((d / "two-fatal-on-a-line.log").read_text(), exit_code=-6, sig=None, unfinished=[])[0]
    assert "(crashed):" in named.excerpt
    cut = find_crashes((d / "no-current-thread.log").read_text(), exit_code=-6, sig=None, unfinished=[])[0]
    assert "names no crashing thread" in cut.excerpt and cut.signal == signal.SIGABRT


def test_xdist_lines_without_a_progress_column_are_read_and_a_cut_run_is_the_budget_spent():
    # pandas 3.1.1 (#43 acceptance 4, docker): its pytest config prints no progress column, so
    # xdist's lines read "[gw1] PASSED <id>". The job's budget ended plain-gil0 after 815 s with
    # no JUnit file; unread, those lines left 0 tests finished and the running test a `hang`.
    from harness.core.jobspec import Settings
    from harness.verdict import decide
    from tests.unit.verdict.test_verdict import load

    running = "pandas/tests/groupby/test_groupby.py::test_empty_groupby[True-max-attr-dt64-keys1-columns1]"
    p = phase("budget-spent-xdist-classic", "plain-gil0")
    assert p.timed_out and p.hang is not None and p.hang.spent and not p.hang.tests
    assert p.hang.running == running and running not in p.tests
    assert p.counts["passed"] == 164 and "timeout" not in p.counts  # every PASSED line the kept log has
    d = decide(load("budget-spent-xdist-classic"), settings=Settings(job_timeout=1500))
    assert d.verdict == "infra-error" and not [f for f in d.findings if f.kind == "hang"]
    (f,) = [f for f in d.findings if f.kind == "budget-spent"]
    assert f.phase == "plain-gil0" and f"{running} was running" in f.excerpt


def test_a_log_in_colour_is_read_without_its_codes():
    # wcwidth 0.9.5 (#43 acceptance 4): its pytest config asks for colour, so its summary line
    # read "\x1b[32m=== \x1b[32m\x1b[1m2009 passed\x1b[0m, ..." and every run was "incomplete"
    p = phase("ansi-color", "plain-gil0")
    assert incomplete(p) == ""
    assert "\x1b" not in p.excerpt and "2009 passed, 14 skipped in 17.08s" in p.excerpt
    assert p.counts.get("passed", 0) > 0 and not p.counts.get("failed")


def test_a_test_the_watchdog_ended_under_xdist_is_named_when_the_budget_cuts_the_run_later():
    # sqlalchemy 2.1.9: the watchdog ended a memusage test (its dump glued to another worker's
    # test id), xdist said "node down" and FAILED, then the job's budget cut the run with no
    # summary and no junit. The hang was published on the test the budget cut.
    from harness.verdict.crashhang import hang_findings
    from tests.unit.verdict.test_verdict import S

    ended = "test/aaa_profiling/test_memusage.py::MemUsageTest::test_registry_dispose_releases_classes[declare_last]"
    cut = "test/sql/test_types.py::LiteralExecuteTest::test_safestr_literal_execute[Unicode-MySQLDialect_aiomysql]"
    p = phase("watchdog-xdist-budget-cut", "plain-gil0")
    assert p.crashes == () and p.tests[ended].outcome == "timeout"
    assert [t.test_id for t in p.hang.tests] == [ended] and p.hang.running == cut
    assert "still running after 0:02:10" in p.hang.tests[0].excerpt
    assert "test_memusage.py:360 in test_registry_dispose_releases_classes" in p.hang.tests[0].excerpt
    (f,) = hang_findings([p], S)
    assert f.test_id == ended and "job's budget" not in f.message
