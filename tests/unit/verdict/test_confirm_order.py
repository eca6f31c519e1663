"""The order of the runs alone (issue #58): one candidate at a time, strongest first, each given
all its runs before the next; on captured real jobs (tests/data/parse/confirm-*, crash, mix, flaky).

A job's runs alone are replayed: when ``next_run`` asks for a run of a test in a mode, the next
captured run alone of that test in that mode answers, renamed as the schedule names it. The
captured jobs ran round-robin; replayed sequentially, each candidate's answer is the same.
"""

from __future__ import annotations

from dataclasses import replace

from harness.core.jobspec import Settings
from harness.core.model import Phase
from harness.util.stats import fisher_greater
from harness.verdict import confirm_targets, decide
from harness.verdict.confirm import next_run, reserve, strength
from tests.unit.verdict.test_verdict import load

S = Settings()
MODULE = "test_six.py::TestCustomizedMoves::test_custom_move_module"
ATTRIBUTE = "test_six.py::TestCustomizedMoves::test_custom_move_attribute"


def _suite(case: str) -> list[Phase]:
    return load(case, keep=lambda p: p.kind != "confirm")


def replay(case: str, most: int, *, budget: int = 10_000) -> list[Phase]:
    """The job's suite runs, then its runs alone as ``next_run`` schedules them, each answered by
    the captured run alone of its test and mode, in their order; it ends when ``next_run`` says
    every target is done, a requested run was never captured (the captured job did not reach
    it), or after ``budget`` runs alone."""
    phases = _suite(case)
    captured = [p for p in load(case) if p.kind == "confirm"]
    chosen = confirm_targets(decide(phases, settings=S, claims=False).findings, phases)
    used: set[str] = set()
    for _ in range(budget):
        run = next_run(chosen, phases, most, S.gil_modes)
        if run is None:
            break
        answer = next(
            (
                p
                for p in sorted(captured, key=lambda p: p.rep)
                if p.name not in used and p.gil == run.mode and p.test_command.paths == (run.target.test_id,)
            ),
            None,
        )
        if answer is None:
            break
        used.add(answer.name)
        phases.append(replace(answer, name=run.name, rep=run.rep))
    return phases


def test_the_strongest_only_without_the_gil_candidate_goes_first():
    # six 1.17.0 (docker, 2026-12-03): two ft-race candidates, 2/3 and 1/3 GIL-off suite runs,
    # against 0/3 GIL-on ones; then two thread-unsafe ones
    phases = _suite("confirm-six-docker")
    found = decide(phases, settings=S, claims=False).findings
    chosen = confirm_targets(found, phases)
    assert [(t.kind, t.test_id) for t in chosen[:2]] == [("ft-race", MODULE), ("ft-race", ATTRIBUTE)]
    assert [t.kind for t in chosen[2:]] == ["thread-unsafe", "thread-unsafe"]
    by_id = {f.test_id: f for f in found if f.kind == "ft-race"}
    assert by_id[MODULE].by_mode == {"gil0": "2/3", "gil1": "0/3"}
    assert strength(by_id[MODULE], phases) == fisher_greater(2, 3, 0, 3) < strength(by_id[ATTRIBUTE], phases)
    assert strength(by_id[ATTRIBUTE], phases) == fisher_greater(1, 3, 0, 3)


def test_across_jobs_the_claims_holms_family_decides_come_first_then_crash_then_thread_unsafe():
    # ft_realloc's crash fixture (ft-crash 3/3, a crash in both modes), ft_mixed's race (3/3) and
    # thread-unsafe list, and a rare race (3/4): each job's candidates, in one queue
    found, phases = [], []
    for case in ("crash", "mix", "flaky"):
        ph = load(case)
        found += decide(ph, settings=S, claims=False).findings
        phases += ph
    order = [(t.kind, t.test_id) for t in confirm_targets(found, phases)]
    assert order == [
        ("ft-crash", "tests/test_crash.py::test_segv_nogil_only"),
        ("ft-race", "tests/test_mix.py::test_race"),
        ("ft-race", "tests/test_flaky.py::test_rare_race"),  # 3/4: weaker than 3/3
        ("crash", "tests/test_crash.py::test_segv"),
        ("thread-unsafe", "tests/test_mix.py::test_shared_list"),
    ]


def test_each_candidate_gets_all_its_runs_before_the_next_and_decides_the_same():
    # six ran with confirm: 5, round-robin; replayed sequentially, the first candidate's runs alone
    # (interleaved off, on) all come before the second's: each fails alone with the GIL on too, so
    # each stops once its rate is told (2 pairs, 4 failures: verdict.confirm.done) and the next
    # starts; both decide as they did (the two thread-unsafe ones after them were never re-run)
    phases = replay("confirm-six-docker", 5)
    alone = [(p.name, p.test_command.paths[0]) for p in phases if p.kind == "confirm"]
    assert alone == [(f"confirm1-gil{m}-r{r}", MODULE) for r in (1, 2) for m in (0, 1)] + [
        (f"confirm2-gil{m}-r{r}", ATTRIBUTE) for r in (1, 2) for m in (0, 1)
    ]
    five = Settings(confirm=5)
    was = {f.test_id: f for f in decide(load("confirm-six-docker"), settings=five).findings}
    now = {f.test_id: f for f in decide(phases, settings=five).findings}
    for tid in (MODULE, ATTRIBUTE):
        assert was[tid].kind == now[tid].kind == "thread-unsafe"
        assert now[tid].confirmed == {"gil0": "2/2", "gil1": "2/2"}, now[tid].confirmed


def test_a_budget_that_ends_early_goes_to_the_strongest_not_a_pair_to_each():
    # four runs alone: round-robin gave each ft-race candidate one pair; now the strongest has two
    phases = replay("confirm-six-docker", 5, budget=4)
    alone = [p for p in phases if p.kind == "confirm"]
    assert [(p.name, p.test_command.paths[0]) for p in alone] == [
        ("confirm1-gil0-r1", MODULE),
        ("confirm1-gil1-r1", MODULE),
        ("confirm1-gil0-r2", MODULE),
        ("confirm1-gil1-r2", MODULE),
    ]


def test_a_candidate_stops_early_and_the_next_starts():
    # wrapt (docker, confirm: 20): its rare ft-race failed in none of its first ten pairs alone, so
    # it stops at half its runs (verdict.confirm.done); then the thread-unsafe one, as far as the
    # captured job went (four pairs)
    phases = replay("confirm-wrapt-rare", 20)
    names = [p.name for p in phases if p.kind == "confirm"]
    assert names == [f"confirm1-gil{m}-r{r}" for r in range(1, 11) for m in (0, 1)] + [
        f"confirm2-gil{m}-r{r}" for r in range(1, 5) for m in (0, 1)
    ]
    suite = _suite("confirm-wrapt-rare")
    chosen = confirm_targets(decide(suite, settings=S, claims=False).findings, suite)
    # the second is not decided yet (one failure): its next pair is the one the captured job's
    # budget never reached
    assert next_run(chosen, phases, 20, S.gil_modes).name == "confirm2-gil0-r5"
    was, now = decide(load("confirm-wrapt-rare"), settings=S), decide(phases, settings=S)
    assert now.verdict == was.verdict
    assert [(f.kind, f.test_id, f.confirmed) for f in now.findings] == [
        (f.kind, f.test_id, f.confirmed) for f in was.findings
    ]


def test_the_reserve_is_the_confirm_budget_at_most_a_third_of_the_job_s():
    assert reserve(S) == 600.0  # the defaults: 600 s of 1,800
    assert reserve(Settings(job_timeout=1500, confirm=24, confirm_budget=300)) == 300.0  # published.yaml
    assert reserve(Settings(job_timeout=900, confirm_budget=600)) == 300.0  # never more than a third
    assert reserve(Settings(confirm=0)) == 0.0  # no runs alone: nothing kept
    assert reserve(S, tsan=True) == 0.0  # none under ThreadSanitizer
