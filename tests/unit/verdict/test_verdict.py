"""Every verdict rule of issue #4 (and the coverage rules of #10) on phases parsed from
captured real runs (tests/data/parse/<case>/; the commands are in each CMD file)."""

import dataclasses
import json
import shlex
import subprocess
from pathlib import Path

import pytest

from harness.core.jobspec import Settings
from harness.core.model import FINDING_KINDS, VERDICTS, Phase, TestCommand
from harness.parse import parse_phase
from harness.parse.probe import parse_probe
from harness.verdict import coverage, decide, reproduce

DATA = Path(__file__).resolve().parents[2] / "data" / "parse"
CASES = sorted(p.name for p in DATA.iterdir() if (p / "phases").is_dir())
S = Settings()


def load(*cases: str, keep=lambda p: True) -> list[Phase]:
    out = []
    for case in cases:
        d = DATA / case
        for pj in sorted((d / "phases").glob("*.json")):
            p = parse_phase(Phase.from_dict(json.loads(pj.read_text())), d)
            if keep(p):
                out.append(p)
    return out


def by_kind(decision, kind):
    return {f.test_id: f for f in decision.findings if f.kind == kind}


def test_build_failure_names_the_compiler_error():
    d = decide(load("install-build-failure"), settings=S)
    assert d.verdict == "build-failure"
    (f,) = d.findings
    assert f.evidence == "compiler"
    assert f.excerpt.startswith('src/ext.c:3:2: error: #error "badbuild does not support')
    assert "pip install /tmp/h1/pkgs/badbuild" in f.reproduce


def test_a_compile_failure_after_a_good_fetch_is_build_failure():
    # msgpack 1.0.8 from PyPI: fetch exits 0, install's C++ compile fails (issue #20: the verdict
    # read only the first install-kind phase, the fetch, and said no-tests)
    phases = load("install-pypi-compile")
    assert [(p.name, p.exit_code) for p in phases] == [("fetch", 0), ("install", 1)]
    d = decide(phases, settings=S)
    assert d.verdict == "build-failure"
    (f,) = d.findings
    assert (f.evidence, f.phase) == ("compiler", "install")
    assert f.excerpt.startswith("msgpack/_cmsgpack.cpp:19109:9: error: ")
    assert "CYTHON_METH_FASTCALL" in f.message


@pytest.mark.parametrize("case", ["install-dns", "install-no-match"])
def test_pip_and_network_failures_are_infra_errors(case):
    d = decide(load(case), settings=S)
    assert d.verdict == "infra-error" and d.findings[0].phase == "install"
    # a requirement the index lacks is said as the index's, never as a harness problem
    said = d.findings[0].message
    if case == "install-no-match":
        assert said.startswith("the package index has no release of pytest==0.0.0.1 (a requirement;")
    else:
        assert said.startswith("harness problem during install: ") and "Failed to establish a new connection" in said


def test_timed_out_install_is_infra_even_with_a_partial_log():
    (p,) = load("install-build-failure-cut")
    d = decide([dataclasses.replace(p, timed_out=True, exit_code=None)], settings=S)
    # the compiler had not failed yet when the budget ran out: the harness's timeout, not the package
    assert d.verdict == "infra-error" and d.findings[0].excerpt.startswith("the install timed out")
    # and says which settings bound it, with their values
    assert f"settings.install_timeout {S.install_timeout} s" in d.findings[0].message
    assert f"job_timeout {S.job_timeout} s" in d.findings[0].message
    (q,) = load("install-no-match")
    d = decide([dataclasses.replace(q, timed_out=True, exit_code=None)], settings=S)
    assert d.verdict == "infra-error"


def test_ft_crash_and_crash():
    d = decide(load("crash"), settings=S, claims=False)  # what the suite's runs nominate
    assert d.verdict == "ft-crash"
    ft = by_kind(d, "ft-crash")["tests/test_crash.py::test_segv_nogil_only"]
    assert ft.modes == (0,) and ft.signal == 11 and ft.ratio == "3/3"
    # its counts per mode, 0 included: what two jobs compare mode by mode (results.flaky)
    assert ft.by_mode == {"gil0": "3/3", "gil1": "0/3"}
    assert ft.stack_top.endswith("line 15 in test_segv_nogil_only")
    both = by_kind(d, "crash")["tests/test_crash.py::test_segv"]
    assert both.modes == (0, 1) and both.ratio == "6/6" and both.by_mode == {"gil0": "3/3", "gil1": "3/3"}
    assert "tests/test_crash.py::test_segv" not in by_kind(d, "ft-crash")
    # never re-run alone (issue #47): the runs that nominated it are no evidence for "only without
    # the GIL", so it stays a crash, saying so
    claimed = by_kind(decide(load("crash"), settings=S), "crash")["tests/test_crash.py::test_segv_nogil_only"]
    assert claimed.modes == (0,) and "whether only without the GIL is not established" in claimed.message


def test_crash_without_xdist():
    d = decide(load("crash-noxdist"), settings=S)
    assert d.verdict == "crash"
    assert set(by_kind(d, "crash")) == {"tests/test_crash.py::test_segv"}


def test_gil_off_crash_claims_nothing_of_the_gil_when_gil_on_was_not_run():
    # uvloop 0.23.0 was published as `crash` "in modes [0]": a both-modes word from one mode
    d = decide(load("crash", keep=lambda p: p.gil == 0), settings=S)
    assert not by_kind(d, "crash") and not by_kind(d, "ft-crash")
    u = by_kind(d, "unconfirmed")["tests/test_crash.py::test_segv_nogil_only"]
    assert u.message.startswith("crash not claimed: no run of it with the GIL on")
    assert d.verdict == "compatible" or d.verdict not in ("crash", "ft-crash")


def test_hang_with_modes_and_kinds():
    d = decide(load("hang"), settings=S)
    assert d.verdict == "hang"
    h = by_kind(d, "hang")
    assert h["tests/test_hang.py::test_lock_order"].modes == (0, 1)
    assert "in threads runs" in h["tests/test_hang.py::test_lock_order"].message
    assert "plain/threads" in h["tests/test_hang.py::test_sleeps_forever"].message
    assert h["tests/test_hang.py::test_sleeps_forever"].evidence == "timeout"


def test_job_level_timeout_is_a_hang_not_an_infra_error():
    d = decide(load("hang-noxdist"), settings=S)
    assert d.verdict == "hang" and not by_kind(d, "infra-error")


def test_ft_race_thread_unsafe_and_baseline_in_one_suite():
    d = decide(load("mix"), settings=S, claims=False)
    assert d.verdict == "ft-race"
    race = by_kind(d, "ft-race")
    assert set(race) == {"tests/test_mix.py::test_race"}
    assert race["tests/test_mix.py::test_race"].modes == (0,)
    assert race["tests/test_mix.py::test_race"].ratio == "3/3"
    assert race["tests/test_mix.py::test_race"].by_mode == {"gil0": "3/3", "gil1": "0/3"}
    unsafe = by_kind(d, "thread-unsafe")
    assert set(unsafe) == {"tests/test_mix.py::test_shared_list"}
    assert unsafe["tests/test_mix.py::test_shared_list"].modes == (0, 1)
    assert unsafe["tests/test_mix.py::test_shared_list"].ratio == "6/6"
    base = by_kind(d, "baseline-failure")
    assert set(base) == {"tests/test_mix.py::test_baseline_fail"}  # and blamed for nothing else
    kinds = [f.kind for f in d.findings]
    assert kinds == sorted(kinds, key=VERDICTS.index)


def test_flaky_race_is_counted_k_of_r():
    d = decide(load("flaky"), settings=S, claims=False)
    assert d.verdict == "ft-race"
    f = by_kind(d, "ft-race")["tests/test_flaky.py::test_rare_race"]
    assert (f.count, f.runs) == (3, 4) and f.ratio == "3/4" and f.by_mode == {"gil0": "3/4", "gil1": "0/4"}


def test_a_gil_off_only_race_needs_runs_alone_that_hold_it():
    # 3/4 with the GIL off against 0/4 with it on in the suite's runs, nothing run alone: the runs
    # that nominated it are no evidence for "only with the GIL off" (issue #47)
    d = decide(load("flaky"), settings=S)
    assert d.verdict != "ft-race"
    u = by_kind(d, "unconfirmed")["tests/test_flaky.py::test_rare_race"]
    assert u.message.startswith("ft-race not claimed: it was not re-run alone")


def probed(phases: list[Phase], **probe) -> list[Phase]:
    """``phases`` with a probe phase whose probe.json had ``probe`` (parsed as the job's is)."""
    done = Phase(name="probe", kind="probe", exit_code=0, probe=parse_probe(json.dumps(probe).encode()))
    return [done, *(p for p in phases if p.kind != "probe")]


def test_gil_reenabled_names_the_module():
    d = decide(load("probe-gil", "gilext"), settings=S)  # probe-gil/logs/probe.json, on its phase
    assert d.verdict == "gil-reenabled"
    (f,) = d.findings
    assert f.module == "legacyext" and f.evidence == "warning"
    assert "has been enabled to load module 'legacyext'" in f.excerpt
    assert "import sys, legacyext" in f.reproduce and "env -u PYTHON_GIL" in f.reproduce


def test_a_result_is_decided_again_from_its_phases_alone():
    # the probe is parsed onto its phase (issue #31): phases written to a result and read back
    # give the same decision, with no probe.json and no second input
    phases = load("probe-gil", "gilext")
    assert phases[0].kind == "probe" and phases[0].probe and phases[0].probe.modules == ("legacyext",)
    back = [Phase.from_dict(json.loads(json.dumps(p.to_dict()))) for p in phases]
    assert back == phases
    assert decide(back, settings=S) == decide(phases, settings=S)
    assert decide(back, settings=S).verdict == "gil-reenabled"


def test_gil_reenabled_beats_no_tests():
    assert decide(load("probe-gil", "empty"), settings=S).verdict == "gil-reenabled"


def test_a_test_module_missing_a_third_party_module_is_a_setup_problem_not_baseline():
    # tests/test_broken.py imports a module nothing installs: its tests could not run, which is
    # not the package's failure (issue #14); the other test passed
    d = decide(load("collerr"), settings=S)
    assert not by_kind(d, "baseline-failure")
    (f,) = [f for f in d.findings if f.kind == "setup-error"]
    assert f.test_id == "tests/test_broken.py" and f.evidence == "setup"
    assert "No module named 'no_such_module_xyz'" in f.excerpt


def test_baseline_failure_from_a_collection_error_of_the_packages_own_module():
    # the same log, the missing module being the package's own (an extension that was not
    # built): the package's failure
    d = decide(probed(load("collerr"), imported=["no_such_module_xyz"]), settings=S)
    assert d.verdict == "baseline-failure"
    assert set(by_kind(d, "baseline-failure")) == {"tests/test_broken.py"}


def test_compatible_with_full_coverage():
    d = decide(probed(load("gilext"), gil_enabled=False, modules=[]), settings=S)
    assert d.verdict == "compatible" and d.qualifier == "" and d.findings == ()
    assert d.coverage["gil0"].in_threads == d.coverage["gil0"].total == 2


def test_no_tests():
    d = decide(load("empty"), settings=S)
    assert d.verdict == "no-tests" and d.findings == ()


def test_all_thread_unsafe_suite_gets_the_finding_and_the_qualifier():
    for case in ("allunsafe", "allunsafe-noxdist"):
        d = decide(load(case), settings=S)
        assert d.verdict == "compatible"
        assert d.qualifier == "low thread coverage: 0/3 tests in threads"
        (f,) = d.findings
        assert f.kind == "no-thread-coverage" and f.modes == (0, 1) and f.ratio == "0/3"
        assert "uses thread-unsafe fixture(s): {'capsys'}" in f.excerpt
        cov = d.coverage["gil0"]
        assert (cov.in_threads, cov.single, cov.skipped, cov.total) == (0, 3, 1, 3)


def test_mixed_coverage_counts_and_threshold():
    cov = decide(load("mix"), settings=S).coverage
    g0 = cov["gil0"]
    assert (g0.in_threads, g0.single, g0.skipped, g0.total) == (8, 2, 2, 10)
    assert g0.reasons["tests/test_mix.py::test_marked_unsafe"] == "touches global config"
    assert coverage.qualifier(cov, S) == ""
    strict = Settings(min_parallel_fraction=0.9)
    assert coverage.qualifier(cov, strict) == "low thread coverage: 8/10 tests in threads"


def test_coverage_unknown_without_a_trusted_source():
    phases = load("gilext", keep=lambda p: p.kind != "collect")
    d = decide(phases, settings=S)
    assert d.verdict == "compatible" and d.qualifier == "thread coverage unknown"
    assert d.coverage["gil0"].in_threads is None


@pytest.mark.parametrize("case", ["mix-cut", "hang-cut", "mix-garbled"])
def test_cut_or_garbled_runs_are_infra_errors_with_the_raw_tail(case):
    d = decide(load(case), settings=S)
    assert d.verdict == "infra-error"
    f = by_kind(d, "infra-error")
    assert all(x.excerpt and "incomplete" in x.message for x in f.values())


def test_pytest_internal_error_is_infra():
    d = decide(load("gilext-default"), settings=S)
    assert d.verdict == "infra-error"
    assert any(f.phase == "threads-default" for f in d.findings)


@pytest.mark.parametrize("case", CASES)
def test_every_decision_is_in_the_contract_and_has_evidence(case):
    d = decide(load(case), settings=S)
    assert d.verdict in VERDICTS
    for f in d.findings:
        assert f.kind in FINDING_KINDS
        assert f.excerpt.strip() and f.reproduce.strip() and f.message


def test_reproduce_threads_finding():
    d = decide(load("mix"), settings=S, claims=False)
    cmd = by_kind(d, "ft-race")["tests/test_mix.py::test_race"].reproduce
    assert cmd.startswith("cd /tmp/h1/suites/mix && ")
    argv = shlex.split(cmd.split(" && ", 1)[1])
    assert "PYTHON_GIL=0" in argv and "PYTHONFAULTHANDLER=1" in argv
    assert "--parallel-threads=4" in argv and "--iterations=5" in argv and "--timeout=10" in argv
    assert "-n" not in argv and not any(a.startswith("--junitxml") for a in argv)
    assert argv[-1] == "tests/test_mix.py::test_race" and "tests" not in argv


def test_reproduce_plain_finding_drops_thread_flags_and_quotes_ids():
    (p,) = load("mix", keep=lambda p: p.name == "plain-gil1")
    cmd = reproduce(p, "tests/test_mix.py::test_param[d e]")
    assert "--parallel-threads" not in cmd and "PYTHON_GIL=1" in cmd
    assert cmd.endswith("'tests/test_mix.py::test_param[d e]'")
    assert reproduce(p, None).endswith(" tests")  # no id: the whole suite, minus junit/-n


def test_reproduce_tox_command():
    (p,) = load("mix", keep=lambda p: p.name == "threads-gil0-r1")
    tc = TestCommand(
        head=("/v/bin/python", "-m", "tox", "-e", "py313t", "--"),
        options=("-v",),
        threads=("--parallel-threads=4",),
        paths=("tests",),
        this_run=("-n", "auto", "--junitxml=/w/junit/x.xml"),
    )
    cmd = reproduce(dataclasses.replace(p, command=tc.argv(), test_command=tc), "tests/t.py::t")
    assert cmd.endswith("-m tox -e py313t -- -v --parallel-threads=4 tests/t.py::t")
    assert reproduce(dataclasses.replace(p, command=tc.argv(), test_command=tc), None).endswith(
        "--parallel-threads=4 tests"
    )


def test_a_phase_without_parts_is_its_command_as_it_ran():
    (p,) = load("install-build-failure")
    assert p.test_command is None
    assert reproduce(p, "ignored::id").endswith("pip install /tmp/h1/pkgs/badbuild")


def test_oom_killed_run_is_infra_error_out_of_memory():
    phases = load("mix")
    victim = next(p for p in phases if p.kind == "threads")
    oom = dataclasses.replace(victim, oom_killed=True, exit_code=137, signal=9)
    d = decide([oom if p is victim else p for p in phases], settings=S)
    assert d.verdict == "infra-error"
    assert any("out of memory" in f.message for f in d.findings if f.kind == "infra-error")


def test_a_module_name_from_package_output_never_reaches_code_unchecked():
    from harness.verdict import probe_command

    (probe,) = load("probe-gil", keep=lambda p: p.kind == "probe") or [None]
    ok = probe_command(probe, [], "legacyext._speedups")
    assert "import sys, legacyext._speedups;" in ok
    evil = probe_command(probe, [], "os; import shutil; shutil.rmtree('/')  #")
    assert "rmtree" not in evil and "import sys, os" not in evil


def test_a_test_too_slow_for_its_threaded_runs_is_not_a_hang():
    # numpy 2.5.5, zero configuration: test_warning_calls takes 6.7-9.8 s in a plain run; 4
    # threads x 3 iterations cannot end within test_timeout 60 s, so its threaded timeouts (and
    # the confirmation runs', alone) say nothing of a hang
    s = Settings(threads=4, iterations=3, test_timeout=60)
    d = decide(load("slow-numpy"), settings=s)
    assert not by_kind(d, "hang")
    (f,) = by_kind(d, "slow-in-threads").values()
    assert f.test_id == "numpy/tests/test_warnings.py::test_warning_calls" and f.modes == (0, 1)
    assert "takes 9.8 s alone" in f.message and "117 s one after another" in f.message
    # shown, never the verdict: what decides is the rest (numpy-config found on the host's PATH
    # in this run, which the venv's bin first on PATH has fixed since)
    assert d.verdict == "baseline-failure"
    # the same runs under a budget the serial cost fits in twice (SLOW_SHARE): a hang again
    d = decide(load("slow-numpy"), settings=dataclasses.replace(s, test_timeout=250))
    assert set(by_kind(d, "hang")) == {"numpy/tests/test_warnings.py::test_warning_calls"}
    assert not by_kind(d, "slow-in-threads")


def test_a_test_whose_serial_cost_is_near_the_timeout_is_too_slow_to_tell():
    # bottleneck 1.6.1 on docker (runs/s17/acc3): test_move[move_median] takes 4.5-4.7 s in a
    # plain run, so 4 threads x 3 iterations is 56 s one after another, under test_timeout 60 s
    # but not by much: it timed out in all 4 threaded suite runs (xdist's other worker shares the
    # cores) and passed alone in threads in 15 to 56 s. Within SLOW_SHARE of the timeout, a
    # timeout in threads cannot tell a hang from a slow test (on 2026-12-05, at 6.1 s, it was so)
    s = Settings(threads=4, iterations=3, test_timeout=60)
    d = decide(load("slow-bottleneck"), settings=s)
    assert not by_kind(d, "hang") and d.verdict != "hang"
    f = by_kind(d, "slow-in-threads")["bottleneck/tests/move_test.py::test_move[move_median]"]
    assert "takes 4.7 s alone" in f.message and "56 s one after another" in f.message
    assert "Raise `settings.test_timeout` past 112 s" in f.message


def test_the_serial_cost_decides_between_hang_and_too_slow_to_tell():
    # test_lock_order takes 0.3 s alone; 4 threads x 5 iterations is 6 s one after another.
    # Under test_verdicts' budget (test_timeout 20) its threaded timeouts are a hang ...
    d = decide(load("hang"), settings=Settings(threads=4, iterations=5, test_timeout=20))
    assert "tests/test_hang.py::test_lock_order" in by_kind(d, "hang")
    assert not by_kind(d, "slow-in-threads")
    # ... under the 5 s it was captured with, it could not have finished serialized: no hang
    # is claimed, and the fix is named
    d = decide(load("hang"), settings=Settings(threads=4, iterations=5, test_timeout=5))
    f = by_kind(d, "slow-in-threads")["tests/test_hang.py::test_lock_order"]
    assert "Raise `settings.test_timeout` past 12 s" in f.message  # twice the cost: SLOW_SHARE
    # a test that times out in plain runs too is a hang whatever its cost
    assert "tests/test_hang.py::test_sleeps_forever" in by_kind(d, "hang")


def test_a_reproduce_line_puts_the_venv_first_on_the_users_path():
    p = Phase(
        name="plain-gil0",
        kind="plain",
        gil=0,
        command=("/ws/venv/bin/python", "-m", "pytest"),
        env={"PATH": "/ws/venv/bin:/root/.pyenv/shims:/usr/bin", "PYTHON_GIL": "0"},
        cwd="/ws/src",
    )
    line = reproduce(p, None)
    assert 'PATH=/ws/venv/bin:"$PATH" PYTHON_GIL=0 /ws/venv/bin/python -m pytest' in line
    assert ".pyenv" not in line
    # run by a shell, the venv's bin is first and the user's PATH follows
    out = subprocess.run(
        ["sh", "-c", line.split(" && ", 1)[1].split(" /ws/")[0] + " sh -c 'echo $PATH'"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.strip() == "/ws/venv/bin:/usr/bin:/bin"


def test_a_budget_spent_before_any_gil_on_run_claims_no_gil_off_only_finding():
    # issue #36 (six 1.17.0 published as ft-race with no GIL-on run at all): the race failed in
    # the first GIL-off threaded run, the budget ran out in the second; nothing ran with the GIL on
    d = decide(load("budget-gil0-only"), settings=dataclasses.replace(S, job_timeout=150))
    assert d.verdict == "infra-error", [(f.kind, f.message) for f in d.findings]
    assert not by_kind(d, "ft-race") and not by_kind(d, "hang") and not by_kind(d, "slow-in-threads")
    u = by_kind(d, "unconfirmed")["tests/test_label.py::test_label_roundtrip"]
    assert u.message.startswith("ft-race not claimed: no run of it with the GIL on (the job's budget ran out before)")
    (b,) = [f for f in d.findings if f.kind == "budget-spent"]
    assert b.phase == "threads-gil0-r2"


def test_a_suite_that_mostly_did_not_run_is_no_package_verdict():
    # multiprocess 0.70.19, zero config: every Python version's tree collected from the sdist's
    # root, 39 passed and 1,191 errors in the plain run (issues #35, #36: it was published as a
    # verdict about the package); now the harness's setup error, with the first error
    d = decide(load("multiprocess-errors"), settings=S)
    assert d.verdict == "infra-error", [(f.kind, f.message[:100]) for f in d.findings[:5]]
    f = d.findings[0]
    assert f.evidence == "setup" and (f.count, f.runs) == (1191, 1230)
    assert f.message.startswith("plain-gil0: setup: the suite mostly did not run: 1191 of 1230 items errored")


def test_arguments_pytest_refused_are_no_no_tests_verdict():
    # pymongo 4.20.1, zero config (the not-tuned-on slice of #35): an addopts item split on
    # spaces gave pytest the paths "or" and "default_async"; the collect step said "file or
    # directory not found: or" (exit 4) and every xdist run "0 items" (exit 5): published as
    # no-tests before; the harness's setup error, naming pytest's words
    d = decide(load("usage-error-xdist"), settings=S)
    assert d.verdict == "infra-error"
    (f,) = d.findings
    assert f.evidence == "setup" and f.phase == "collect"
    assert "ERROR: file or directory not found: or" in f.message
    assert decide(load("empty"), settings=S).verdict == "no-tests"  # a suite with no test in it


def test_a_budget_spent_before_any_threaded_run_is_no_compatible():
    # packaging 26.4 on a loaded machine: its plain run took the budget; the collect step was cut
    s = dataclasses.replace(S, threads=4, iterations=3, repeat=2, test_timeout=60, job_timeout=900)
    d = decide(load("budget-before-threads"), settings=s)
    assert d.verdict == "infra-error"
    (b,) = d.findings
    assert b.kind == "budget-spent" and b.phase == "collect"
    assert "no threaded run with the GIL off or with the GIL on happened" in b.excerpt


def test_a_gil_module_of_another_distribution_is_said_so():
    # aiohttp 3.14.5 (the published slice, docker): importing aiohttp with its test deps beside
    # it loaded Brotli's `_brotli`, which re-enabled the GIL; aiohttp's own modules did not (a
    # fresh venv with aiohttp alone has no `_brotli`: benchmarks/crosscheck.py)
    d = decide(load("probe-gil-dependency"), settings=S)
    (f,) = d.findings
    assert f.kind == "gil-reenabled" and f.module == "_brotli"
    assert "not a module of the package" in f.message and "importing aiohttp loads" in f.message
    (own,) = decide(load("probe-gil"), settings=S).findings
    assert own.message == "GIL re-enabled by `legacyext`"


def test_a_missing_module_that_is_a_test_dep_which_did_not_install_is_said_so():
    # tree-sitter 0.26.1 (the not-tuned-on slice): its `tests` extra names tree-sitter-html,
    # -json, -rust, which build with the limited API that free-threaded 3.13 does not have; the
    # test-deps step recorded them as not installed. The tests that import them could not run:
    # the fix is not "add tree_sitter_html to test_requires", it was there
    d = decide(load("testdeps-not-built"), settings=S)
    f = d.findings[0]
    assert f.kind == "infra-error" and f.evidence == "setup"
    assert "fix: tree-sitter-html is a test dependency the harness tried to install and could not" in f.message


def test_a_conftest_import_of_a_test_dep_which_did_not_install_is_said_so():
    # coverage 7.18.0 (#43 acceptance 4, docker, 2026-12-07): hypothesis 6.170.15's sdist builds a
    # Rust part and crates.io is not reachable, so it did not install; tests/conftest.py imports it,
    # and every run stopped before a test. The broken run's fix was "test_requires: [hypothesis]":
    # it was there; it did not build
    d = decide(load("testdeps-crates-conftest"), settings=S)
    f = d.findings[0]
    assert d.verdict == "infra-error" and f.evidence == "setup" and f.phase == "plain-gil0"
    assert "No module named 'hypothesis'" in f.message
    assert "fix: hypothesis is a test dependency the harness tried to install and could not" in f.message
    assert "test_requires: [hypothesis]" not in f.message
    (deps,) = [x for x in d.findings if x.phase == "test-deps"]
    assert "crates.io" in deps.message


def test_a_run_silent_before_any_test_started_is_no_hang_of_the_package():
    # pycryptodome 4.5.0 (the not-tuned-on slice, docker, load ~15): with the GIL off, pytest-xdist's
    # workers were still collecting Crypto.SelfTest's 106,028 items when the run had been silent
    # for 190 s and was ended; with the GIL on they collected in time and tests ran. No test is
    # named, the import (the probe) took a second: the harness's setup finding, not a `hang`
    s = dataclasses.replace(S, threads=4, iterations=2, repeat=1, test_timeout=60, job_timeout=900)
    d = decide(load("stall-collecting"), settings=s)
    assert d.verdict == "infra-error" and not by_kind(d, "hang")
    f = d.findings[0]
    assert f.evidence == "setup" and f.phase == "plain-gil0"
    assert f.message.startswith("plain-gil0: setup: no test started: no output for 190 s")
    assert decide(load("watchdog"), settings=S).verdict == "hang"  # a named test that froze still is


def test_a_single_threaded_test_failing_only_in_threaded_runs_is_no_thread_finding():
    # watchdog 7.1.1 (#35's slice): pytest-run-parallel ran test_case_change single-threaded
    # (recwarn, a thread-unsafe fixture) but twice (--iterations 2) on one tmp_path: its second
    # iteration's mkdir raised FileExistsError in both modes; alone, or with --iterations 1, it
    # passes (checked directly, no harness). It was published as thread-unsafe.
    phases = load("repeat-watchdog")
    d = decide(phases, settings=dataclasses.replace(S, iterations=2, repeat=1))
    tid = "tests/test_emitter.py::test_case_change"
    assert tid not in by_kind(d, "thread-unsafe") and tid not in by_kind(d, "ft-race")
    f = by_kind(d, "repeat-failure")[tid]
    assert f.modes == (0, 1) and (f.count, f.runs) == (2, 2)
    assert "ran it single-threaded (uses thread-unsafe fixture(s): {'recwarn'})" in f.message, f.message
    assert "FileExistsError" in f.excerpt
    assert "repeat-failure" in FINDING_KINDS


def test_a_verdict_from_a_run_the_budget_cut_says_so():
    # the hang of a threaded run that the job's timeout killed (issue #47: uvloop 0.23.0 took
    # `hang` from such a run and said nothing of it)
    d = decide(load("hang-noxdist"), settings=S)
    h = next(f for f in d.findings if f.kind == "hang")
    assert h.phase == "threads-gil0-r1"
    assert h.message.endswith(
        "the job's budget (job_timeout) ended that run while the test was still running past test_timeout"
    )
    assert d.qualifier == "taken from threads-gil0-r1, a run the job's budget (job_timeout) cut"


def test_a_worker_the_memory_limit_killed_is_out_of_memory_not_a_crash():
    # charset-normalizer 3.5.3 on docker, 6 GiB: its large-payload test in 4 threads x 3 was
    # killed by the kernel's OOM killer, in the suite's threaded run (xdist: "worker 'gw1'
    # crashed") and in 3 of 4 runs alone (SIGKILL). It was published as "crashes with the GIL on too"
    from harness.verdict.confirm import event

    tid = "tests/test_large_payload.py::test_misleading_large_sequence"
    phases = load("confirm-oom-charset")
    oom = [p for p in phases if p.oom_killed]
    assert {p.name for p in oom} == {"threads-gil0-r1", "confirm1-gil0-r1", "confirm1-gil0-r2", "confirm1-gil1-r2"}
    assert not any(p.crashes for p in oom) and all(tid not in p.tests for p in oom)
    assert [event(p, tid) for p in phases if p.kind == "confirm" and p.oom_killed] == ["out of memory"] * 3
    d = decide(phases, settings=dataclasses.replace(S, threads=4, iterations=3, repeat=2, test_timeout=60, confirm=2))
    assert d.verdict == "infra-error"
    assert not [f for f in d.findings if f.kind in ("crash", "ft-crash") or f.test_id == tid]
    assert any(f.message.startswith("threads-gil0-r1: out of memory") for f in d.findings if f.kind == "infra-error")
