"""util.stats and the stopping rule of verdict.confirm (issue #47): exact values, by hand."""

from harness.core.model import Phase, TestCase, TestCommand
from harness.util.stats import bound_text, fisher_greater, holm, least_failures, rules_out
from harness.verdict.confirm import Target, done, tally


def test_fisher_exact_values():
    assert fisher_greater(1, 2, 0, 2) == 0.5
    assert fisher_greater(3, 3, 0, 3) == 0.05
    assert abs(fisher_greater(4, 16, 0, 16) - 0.0506) < 1e-3  # 4 of 16 against 0 of 16: not enough
    assert fisher_greater(5, 16, 0, 16) < 0.05
    assert fisher_greater(0, 3, 0, 3) == 1.0 and fisher_greater(2, 2, 0, 0) == 1.0


def test_holm_steps_down_and_stops_at_the_first_that_fails():
    # m = 3: the smallest against 0.05/3, the next against 0.05/2, the last against 0.05
    assert holm([0.01, 0.02, 0.04]) == [True, True, True]
    assert holm([0.02, 0.01, 0.04]) == [True, True, True]
    assert holm([0.03, 0.04, 0.001]) == [False, False, True]  # 0.03 > 0.05/2 stops it
    assert holm([0.03]) == [True] and holm([0.06]) == [False] and holm([]) == []


def test_least_failures_and_what_a_clean_run_rules_out():
    assert least_failures(16) == 5 and least_failures(8) == 4 and least_failures(2) is None
    assert abs(rules_out(3) - 0.632) < 1e-3 and abs(rules_out(16) - 0.171) < 1e-3 and rules_out(0) == 1.0
    assert bound_text(15) == "0 failures in 15 runs: a per-run failure rate above 18% would have shown (95%)"


def runs(tid, outcomes):
    """Runs alone of ``tid``: (mode, outcome) in order."""
    return [
        Phase(
            name=f"c{i}",
            kind="confirm",
            gil=m,
            tests={tid: TestCase(outcome=o)},
            test_command=TestCommand(head=("python",), paths=(tid,)),
        )
        for i, (m, o) in enumerate(outcomes)
    ]


def suite(tid, n):
    """``n`` threaded suite runs that ran ``tid`` (passing): what its floor is computed from."""
    return [
        Phase(name=f"threads-gil{i % 2}-r{i}", kind="threads", gil=i % 2, tests={tid: TestCase(outcome="passed")})
        for i in range(n)
    ]


def test_a_race_candidate_that_fails_with_the_gil_on_goes_on_to_tell_its_rate():
    t = Target(test_id="t", kind="ft-race", phase="threads-gil0-r1")
    ph = runs("t", [(0, "failed"), (1, "passed"), (0, "failed"), (1, "failed")])
    assert tally("t", "ft-race", ph) == {0: (2, 2), 1: (1, 2)}
    # no longer "only without the GIL"; 3 of 4 runs failed, 7 (of 16) show its floor's rate
    assert not done(t, suite("t", 6) + ph, 16, (0, 1))
    assert done(t, suite("t", 6) + ph + runs("t", [(0, "failed")] * 4), 16, (0, 1))


def test_a_race_candidate_stops_when_it_can_no_longer_hold():
    t = Target(test_id="t", kind="ft-race", phase="threads-gil0-r1")
    # 16 a mode need 5 failures against 0: 1 failure after 12 pairs leaves 4 runs, 5 at most
    twelve = runs("t", [(m, "failed" if (i == 0 and m == 0) else "passed") for i in range(12) for m in (0, 1)])
    assert not done(t, twelve, 16, (0, 1))
    assert done(t, twelve + runs("t", [(0, "passed"), (1, "passed")]), 16, (0, 1))
    # and with no failure at all it stops after half its runs
    seven = runs("t", [(m, "passed") for _ in range(7) for m in (0, 1)])
    assert not done(t, seven, 16, (0, 1)) and done(t, seven + runs("t", [(0, "passed"), (1, "passed")]), 16, (0, 1))


def test_a_thread_unsafe_candidate_runs_until_its_rate_is_told():
    t = Target(test_id="t", kind="thread-unsafe", phase="threads-gil1-r1")
    # 6 threaded suite runs are sure to show a rate of 39%: 7 failures in up to 16 runs alone
    six = suite("t", 6)
    assert not done(t, six + runs("t", [(0, "failed"), (1, "failed")]), 16, (0, 1))
    seven = runs("t", [(m, "failed") for _ in range(4) for m in (0, 1)])[:7]
    assert done(t, six + seven, 16, (0, 1))  # told: its rate holds
    # 1 failure in 10 runs: 6 left could still make 7; in 11, 5 left cannot
    rare = [(m, "failed" if i == m == 0 else "passed") for i in range(6) for m in (0, 1)]
    assert not done(t, six + runs("t", rare[:10]), 16, (0, 1)) and done(t, six + runs("t", rare[:11]), 16, (0, 1))
    # a race that failed alone with the GIL on goes on the same way (no stop at that first failure)
    race = Target(test_id="t", kind="ft-race", phase="threads-gil0-r1")
    assert not done(race, six + runs("t", [(0, "failed"), (1, "failed")]), 16, (0, 1))
