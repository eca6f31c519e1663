"""The runs alone's budget is kept from the start of the job's (issue #58), on the real
free-threaded interpreter: a suite whose runs would fill the whole budget still leaves its
candidate's runs alone their time.

ft_sharedbuf's race fails every GIL-off threaded run (1-3 s each); with ``repeat: 200`` its GIL-off
runs alone would take far more than ``job_timeout: 60``. Before #58 they took all of it and the
runs alone got what was left, nothing: the race was "not re-run alone", the verdict
``infra-error``. Now they stop 20 s (``confirm_budget``) before the job's end and the race holds on
its runs alone.
"""

from __future__ import annotations

import pytest

from tests.conftest import run_fixture

pytestmark = [pytest.mark.integration, pytest.mark.slow]
RACE = "tests/test_label.py::test_label_roundtrip"


def test_a_suite_that_fills_the_budget_leaves_its_runs_alone_their_time(tmp_path, ft_interpreter) -> None:
    d = run_fixture(
        tmp_path,
        "ft_sharedbuf",
        "settings: {threads: 4, iterations: 5, repeat: 200, test_timeout: 20, job_timeout: 60, "
        "confirm: 5, confirm_budget: 20}",
    )
    before = [p for p in d["phases"] if p["kind"] != "confirm"]
    alone = [p for p in d["phases"] if p["kind"] == "confirm"]
    threads = [p["name"] for p in before if p["kind"] == "threads"]
    # the suite's runs stopped: far fewer than the 200 asked, none with the GIL on, and every phase
    # before the runs alone within the 40 s the reserve left (60 s without it)
    assert 2 <= len(threads) < 100 and all("gil0" in n for n in threads), threads
    assert sum(p["duration"] for p in before) <= 60 - 20 + 3, [(p["name"], p["duration"]) for p in before]
    # ... and the runs alone still ran, interleaved, to a claim that holds
    assert [p["gil"] for p in alone] == [0, 1] * (len(alone) // 2) and len(alone) >= 8, [p["name"] for p in alone]
    assert d["verdict"] == "ft-race", d["findings"]
    (f,) = [f for f in d["findings"] if f["kind"] == "ft-race"]
    assert f["test_id"] == RACE and "holds on fresh runs alone" in f["message"], f["message"]
