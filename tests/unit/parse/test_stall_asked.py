"""A frozen run's stacks, asked for by the silence watch, name the hang (issue #58).

tests/data/parse/stall-asked/ is a real harness run (docker backend, 3.13.5t; its CMD): fixture
ft_watchdogproof, whose test disarms both in-process watchdogs and waits forever. Its plain-gil0
run fell silent; the backend wrote its note, sent SIGUSR1 to each process of the container, and
the controller and both xdist workers wrote their threads' stacks before the kill; every later run
left the test out (``--deselect``), and the runs alone timed out under pytest-timeout's thread
method."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from harness.core.jobspec import Settings
from harness.core.model import Phase
from harness.job.testruns import frozen_tests
from harness.parse import parse_phase
from harness.parse.hang import asked_dumps
from harness.verdict import decide

CASE = Path(__file__).resolve().parents[2] / "data" / "parse" / "stall-asked"
TEST = "tests/test_gate.py::test_wait_for_the_gate"
SETTINGS = dataclasses.replace(Settings(), threads=4, iterations=2, repeat=1, test_timeout=15, confirm=1)


def phases() -> list[Phase]:
    return [
        parse_phase(Phase.from_dict(json.loads(pj.read_text())), CASE)
        for pj in sorted((CASE / "phases").glob("*.json"))
    ]


def test_the_stacks_every_process_gave_are_read_between_the_two_notes() -> None:
    text = (CASE / "logs" / "plain-gil0.log").read_text()
    threads = asked_dumps(text)
    assert sum(h.startswith("Current thread") for h, _ in threads) == 3  # controller, gw0, gw1
    waiting = [fr for _, fr in threads if any(" in wait_forever" in f for f in fr)]
    assert len(waiting) == 1 and any(" in test_wait_for_the_gate" in f for f in waiting[0])
    assert asked_dumps(text.replace("asked every process", "asked no process")) == []


def test_the_frozen_run_names_the_test_with_where_it_waits() -> None:
    p = {p.name: p for p in phases()}["plain-gil0"]
    assert p.timed_out and p.hang is not None and p.hang.stalled and not p.hang.spent
    (hung,) = p.hang.tests
    assert hung.test_id == TEST == p.hang.running
    assert hung.stack_top == "ft_watchdogproof/__init__.py:24 in wait_forever"
    assert "called from tests/test_gate.py:9 in test_wait_for_the_gate" in hung.excerpt
    assert hung.excerpt.startswith(f"{TEST}: no output for 53 s, then ended by ft-harness")
    assert p.tests[TEST].outcome == "timeout" and not p.crashes
    assert {t: c.outcome for t, c in p.tests.items() if t != TEST} == {
        "tests/test_gate.py::test_add": "passed",
        "tests/test_other.py::test_add_negative": "passed",
    }


def test_later_runs_leave_it_out_and_the_job_decides_a_hang_not_its_budget() -> None:
    ps = phases()
    assert frozen_tests(ps) == (TEST,)
    assert frozen_tests([p for p in ps if p.name != "plain-gil0"]) == ()
    for p in ps:
        if p.kind in ("plain", "threads") and p.name != "plain-gil0":
            assert f"--deselect={TEST}" in p.command and TEST not in p.tests and not p.timed_out
    d = decide(ps, settings=SETTINGS)
    assert d.verdict == "hang", d.findings
    (f,) = [f for f in d.findings if f.kind == "hang"]
    assert f.test_id == TEST and "took every thread's stack from outside" in f.message
    assert not [f for f in d.findings if f.kind == "budget-spent"] and "budget" not in d.qualifier
