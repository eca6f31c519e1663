"""Claims that hold up when run again (issue #47), on the real free-threaded interpreter.

ft_nullflaky's 40 tests each fail in about 40% of threaded runs with the GIL on and off alike:
whatever its suite's runs nominate, no "only without the GIL" may be published (a false claim
happens in about 1 job in 1,000 at the defaults, by simulation of the procedure; the bench's
`stability` section measures it). ft_halfrace's one test fails in about half the GIL-off threaded
runs and never with the GIL on: with ``repeat: 8`` its suite runs nominate it in 255 jobs of 256 and
with examples/published.yaml's ``confirm: 24`` its runs alone hold ``ft-race`` in about 999 of 1,000
(the defaults, repeat 4 and confirm 20: 93% in all, docs/explanation/evidence.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config import matrix
from tests.conftest import run_fixture

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.integration, pytest.mark.slow]
RACE = "tests/test_tally.py::test_tally_counts_every_add"


def test_the_same_rate_in_both_modes_is_never_published_as_a_race(tmp_path, ft_interpreter) -> None:
    d = run_fixture(tmp_path, "ft_nullflaky", "settings: {job_timeout: 1200}")  # the defaults
    assert d["verdict"] == "thread-unsafe", d["findings"]
    assert not [f for f in d["findings"] if f["kind"] in ("ft-race", "ft-crash")], d["findings"]
    # the thread-unsafe ones re-run alone stop at their first failure with the GIL on: few runs
    alone = [p for p in d["phases"] if p["kind"] == "confirm"]
    assert 0 < len(alone) <= 2 * 20 * 8, len(alone)
    # every candidate nominated as "only with the GIL off" says what its runs alone showed
    for f in d["findings"]:
        if f["kind"] == "unconfirmed" and f["test_id"]:
            assert "not claimed" in f["message"] or "not again alone" in f["message"], f["message"]


def test_a_gil_off_only_race_holds_on_its_runs_alone(tmp_path, ft_interpreter) -> None:
    # on examples/published.yaml's settings for the runs alone (#58: its `confirm: 2` could hold
    # none), with fewer threads and iterations and the repeats that nominate the race
    pub = matrix.load(ROOT / "examples" / "published.yaml").settings
    keep = ("confirm", "confirm_budget", "test_timeout", "job_timeout")
    settings = ", ".join(f"{k}: {getattr(pub, k)}" for k in keep)
    d = run_fixture(tmp_path, "ft_halfrace", f"settings: {{threads: 2, iterations: 2, repeat: 8, {settings}}}")
    assert d["settings"]["confirm"] == pub.confirm >= 5, d["settings"]
    assert d["verdict"] == "ft-race", d["findings"]
    (f,) = [f for f in d["findings"] if f["kind"] == "ft-race"]
    assert f["test_id"] == RACE and f["modes"] == [0]
    k0, n0 = map(int, f["confirmed"]["gil0"].split("/"))
    assert f["confirmed"]["gil1"] == f"0/{n0}" and k0 >= 5, f["confirmed"]
    assert (
        "holds on fresh runs alone, interleaved" in f["message"]
        and "Holm level 0.05 over the job's 1 candidate(s)" in f["message"]
    ), f["message"]
    # the runs alone alternate the modes: off, on, off, on...
    alone = [p["gil"] for p in d["phases"] if p["kind"] == "confirm"]
    assert alone == [0, 1] * (len(alone) // 2)
    assert not [x for x in d["findings"] if x["test_id"] != RACE and x["kind"] not in ("no-thread-coverage",)]
