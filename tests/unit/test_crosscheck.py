"""benchmarks/crosscheck.py: a run's event read from captured runs alone, and what reproduces what."""

from __future__ import annotations

import json

import pytest

from benchmarks.crosscheck import event, reproduced
from tests.unit.test_verdict import DATA


@pytest.mark.parametrize(("case", "phase", "want"), [
    ("confirm-realloc", "confirm1-gil0-r1", "crashed"),  # SIGABRT, faulthandler's dump
    ("confirm-deadlock", "confirm1-gil0-r1", "hung"),  # pytest-timeout's thread method
    ("confirm-sharedbuf", "confirm1-gil0-r1", "failed"),  # the race, by assertion
    ("confirm-sharedbuf", "confirm1-gil1-r1", "passed"),
])
def test_the_event_of_a_captured_run_alone(case: str, phase: str, want: str) -> None:
    p = json.loads((DATA / case / "phases" / f"{phase}.json").read_text())
    text = (DATA / case / p["log"]).read_text()
    assert event(p["exit_code"], text) == want
    if want == "crashed":  # the same run as `sh -ec` reports it: 128 + the signal
        assert event(128 + p["signal"], text.replace("Fatal Python error", "")) == "crashed"
    assert event(None, "") == "hung"  # past the wall limit


def test_what_reproduces_each_kind() -> None:
    assert reproduced("ft-crash", (0,), {0: ["crashed", "failed"], 1: ["failed", "failed"]})
    assert not reproduced("ft-crash", (0,), {0: ["crashed"], 1: ["crashed"]})
    assert reproduced("crash", (0, 1), {0: ["crashed"], 1: ["passed", "crashed"]})
    assert reproduced("ft-race", (0,), {0: ["failed", "passed"], 1: ["passed", "passed"]})
    assert not reproduced("ft-race", (0,), {0: ["failed"], 1: ["failed"]})  # click's: thread-unsafe
    assert reproduced("thread-unsafe", (0, 1), {0: ["failed"], 1: ["failed"]})
    assert reproduced("thread-unsafe", (0, 1), {0: ["passed"], 1: ["passed", "failed"]})
    assert not reproduced("thread-unsafe", (0, 1), {0: ["failed"], 1: ["passed"]})
    assert reproduced("hang", (1,), {0: ["passed"], 1: ["hung"]})
    assert not reproduced("hang", (1,), {0: ["hung"], 1: ["passed"]})
