"""benchmarks/stability.py's figures (issue #47) from rounds' facts as its runs write them."""

from benchmarks.stability import NULL, PLANTED, _round_facts, tally


def facts(verdict, ft_race=()):
    return {"verdict": verdict, "ft_race": list(ft_race)}


def test_a_false_claim_is_any_ft_race_of_the_null_fixture_verdict_or_finding():
    rounds = [
        {NULL: facts("thread-unsafe"), PLANTED: facts("ft-race", ["t"])},
        {NULL: facts("thread-unsafe", ["tests/test_tally.py::x[3]"]), PLANTED: facts("ft-race", ["t"])},
        {NULL: facts("ft-race", ["y"]), PLANTED: facts("compatible")},
    ]
    t = tally(rounds)
    assert t["false_claim_rate"]["said"] == "2/3"
    assert t["detection_rate"]["said"] == "2/3"
    # 3 rounds: 3 pairs; the null fixture's verdict is the same in one of them
    assert t["identical"][NULL]["said"] == "1/3" and t["identical"][PLANTED]["said"] == "1/3"


def test_round_facts_read_a_result_file_shape():
    res = {
        "verdict": "ft-race",
        "findings": [{"kind": "ft-race", "test_id": "a"}, {"kind": "unconfirmed"}],
        "phases": [
            {"kind": "confirm", "duration": 1.5},
            {"kind": "threads", "duration": 2.0},
            {"kind": "confirm", "duration": 0.5},
        ],
    }
    f = _round_facts(res)
    assert f["ft_race"] == ["a"] and f["unconfirmed"] == 1 and f["runs_alone"] == 2
    assert f["confirm_seconds"] == 2.0 and f["seconds"] == 4.0


def test_on_a_budget_the_strongest_candidate_holds_sequentially_and_no_false_claim_passes_alpha():
    # issue #58: one race failing 3 runs alone in 4 with the GIL off (never on), nominated first,
    # and 7 decoys failing 30% in both modes; 16 runs alone in all (the harness's own scheduler)
    from benchmarks.stability import budgeted

    d = budgeted([(0.75, 0.0)] + [(0.3, 0.3)] * 7, 16, trials=100)
    assert d["round_robin"]["first_held"] == 0.0  # a pair each: nothing can hold
    assert d["sequential"]["first_held"] > 0.85, d
    null = budgeted([(0.3, 0.3)] * 8, 16, trials=100)
    assert null["sequential"]["false_claim"] <= 0.05, null
