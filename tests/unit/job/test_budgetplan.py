"""The threaded runs planned to the job's budget (harness.job.budgetplan; issue #58)."""

from __future__ import annotations

from datetime import date

from harness.core.threadplan import ThreadPlan
from harness.job.budgetplan import plan, plan_lines, week_seed

KW = {"threads": 4, "iterations": 5, "repeat": 2, "cores": 2.0, "overhead": 3.0, "seed": "2026-W50"}


def suite(n: int = 300, slow: float = 0.3, cheap: int = 2) -> dict[str, float]:
    d = {f"tests/test_{i // 50}.py::test_work[{i}]": slow for i in range(n)}
    d.update({f"tests/test_z.py::test_cheap_{i}": 0.001 for i in range(cheap)})
    return d


def test_a_suite_that_fits_runs_as_the_settings_say() -> None:
    p = plan(suite(10, 0.01), budget=600, **KW)  # 10 x 0.01 x 20 / 2 = 1 s + 3 s a run
    assert p.record.how == "whole" and p.runs == 2 and p.iterations == {} and p.keep == ()
    assert p.record.in_threads == p.record.tests == 12


def test_too_big_a_suite_gives_its_slow_tests_fewer_iterations_and_keeps_every_test() -> None:
    d = suite()  # a run at 5 iterations: 300 x 0.3 x 20 / 2 = 900 s
    p = plan(d, budget=500, **KW)
    assert p.record.how == "fitted" and p.record.in_threads == p.record.tests == 302 and p.record.left_out == 0
    assert p.runs == 2  # at 1 iteration a run is 183 s: both runs fit
    assert p.record.pass_seconds * p.runs <= 500
    assert all(1 <= p.iterations[t] < 5 for t in d if "work" in t)
    assert not any("cheap" in t for t in p.iterations)  # the cheap ones keep the settings' 5
    assert p.record.iterations[5] == 2 and sum(p.record.iterations.values()) == 302
    lines = plan_lines(p).splitlines()
    assert len(lines) == 300 and all(line.split("\t")[0].isdigit() for line in lines)
    assert not p.threads  # one iteration at 4 threads fits: no test loses threads


def test_fewer_runs_then_fewer_threads_before_fewer_tests_and_a_stated_sample_last() -> None:
    d = suite()  # at 1 iteration: 4 threads 183 s a run, 2 threads 93 s
    two = plan(d, budget=250, **KW)  # two runs fit, some slow tests at 2 threads
    assert two.record.how == "fitted" and two.runs == 2 and two.record.in_threads == 302
    assert two.threads and set(two.threads.values()) == {2} and set(two.record.threads) == {4, 2}
    one = plan(d, budget=150, **KW)  # one run fits
    assert one.record.how == "fitted" and one.runs == 1 and one.record.in_threads == 302
    lines = plan_lines(one).splitlines()
    assert {tuple(line.split("\t")[:2]) for line in lines} <= {
        ("1", "0"),
        ("1", "2"),
        ("2", "0"),
        ("3", "0"),
        ("4", "0"),
    }
    few = plan(d, budget=60, **KW)  # not even one at 2 threads × 1: a sample
    r = few.record
    assert r.how == "sampled" and few.runs == 1 and 0 < r.in_threads < 302 and r.left_out == 302 - r.in_threads
    assert r.seed == "2026-W50" and set(few.keep) == set(few.iterations) and r.pass_seconds <= 60
    assert set(few.threads.values()) == {2} and r.threads == {2: r.in_threads}
    assert "left out by a sample (seed 2026-W50)" in r.reach(5)


def test_the_sample_is_the_same_all_week_and_another_the_next() -> None:
    d = suite()
    a = plan(d, budget=60, **KW).keep
    assert plan(d, budget=60, **KW).keep == a
    b = plan(d, budget=60, **{**KW, "seed": "2026-W51"}).keep
    assert set(a) != set(b)
    assert week_seed(date(2026, 12, 7)) == "2026-W50" and week_seed(date(2026, 12, 13)) == "2026-W50"
    assert week_seed(date(2026, 12, 14)) == "2026-W51"


def test_the_record_reads_back_and_states_its_reach() -> None:
    p = plan(suite(), budget=500, **KW).record
    assert ThreadPlan.from_dict(p.to_dict()) == ThreadPlan.from_dict(p.to_dict())
    back = ThreadPlan.from_dict(p.to_dict())
    assert back is not None and back.iterations == p.iterations and back.how == "fitted"
    assert back.reach(5).startswith("302 of 302 tests in threads (tests × iterations: 2 × 5")
    assert ThreadPlan.from_dict({"how": "everything"}) is None and ThreadPlan.from_dict([]) is None
    assert ThreadPlan.from_dict({"how": "whole", "tests": True, "iterations": {"x": 1}}) == ThreadPlan(how="whole")


def test_a_clean_verdict_s_bound_says_what_the_planned_runs_gave_each_test() -> None:
    """#57/#58: "(4 threads x 3 iterations each)" was said of runs that gave most tests 1 iteration."""
    from harness.core.jobspec import Settings
    from harness.core.model import Phase, TestCase
    from harness.job.job import _rules_out
    from harness.verdict.clean import rules_out
    from tests.unit.job.test_job_stages import pypi_job

    job = pypi_job("pkg", "==1.0")
    job = type(job)(**{**vars(job), "settings": Settings(threads=4, iterations=3)})
    runs = [
        Phase(name=f"threads-gil0-r{i}", kind="threads", gil=0, rep=i, tests={"t": TestCase(outcome="passed")})
        for i in (1, 2)
    ]
    said = rules_out(runs, job.settings)
    assert "(4 threads x 3 iterations each)" in said
    p = plan(suite(), budget=250, **{**KW, "iterations": 3})
    got = _rules_out(said, runs, job, p.record)
    assert "(4 threads x 3 iterations each)" not in got and "as planned to the job's budget: 302 of 302 tests" in got
    assert "0 failures in 2 threaded runs with the GIL off" in got
    whole = plan(suite(10, 0.01), budget=600, **KW).record
    assert _rules_out(said, runs, job, whole) == said
