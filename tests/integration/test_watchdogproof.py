"""A test that defeats both in-process watchdogs costs its run the silence watch's interval, once
(issue #58).

ft_watchdogproof's ``test_wait_for_the_gate`` blocks SIGALRM and disarms the interval timer
(pytest-timeout's signal method never fires), cancels faulthandler's later dump (the harness's
watchdog plugin never fires), then waits on a lock no one releases, in the plain run and in every
thread. Only the backend's silence watch can end it: it asks each process for its stacks
(SIGUSR1, faulthandler), ends the run, and the job names the hang with those stacks within
2 x the watchdog's time, leaves the test out of every later run and goes on; the runs alone of
confirmation (pytest-timeout's thread method, a short limit) confirm it.
"""

from __future__ import annotations

import time

import pytest

from harness.job.watchdog import seconds, stall_seconds
from tests.conftest import cli, fixture_matrix, results

TEST_TIMEOUT = 15  # the watchdog at 40 s, the silence watch at 53 s: 27 s left for pytest's start
SETTINGS = (
    f"settings: {{threads: 4, iterations: 2, repeat: 1, test_timeout: {TEST_TIMEOUT}, job_timeout: 900, confirm: 1}}"
)
TEST = "tests/test_gate.py::test_wait_for_the_gate"
OTHERS = ("tests/test_gate.py::test_add", "tests/test_other.py::test_add_negative")


def _run(tmp_path, backend: str) -> tuple[dict, float]:
    m = fixture_matrix(tmp_path, ["ft_watchdogproof"], SETTINGS)
    t0 = time.monotonic()
    r = cli("run", "--matrix", str(m), "--out", str(tmp_path / "out"), "--backend", backend)
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (d,) = results(tmp_path / "out").values()
    return d, took


def _check(d: dict) -> None:
    watchdog = seconds(TEST_TIMEOUT)
    assert stall_seconds(TEST_TIMEOUT) < 2 * watchdog
    runs = [p for p in d["phases"] if p["kind"] in ("plain", "threads")]
    frozen = [p for p in runs if p["timed_out"]]
    (first,) = frozen  # once: the first run that met it, never a later one
    assert first is runs[0], [p["name"] for p in runs]
    # named with its stacks within 2 x the watchdog's time past what a run of the suite takes
    # without it (pytest's and xdist's start: 5 s idle, 20 s and more on a loaded 2-core machine)
    plain = min(p["duration"] for p in runs[1:])
    assert first["duration"] < 2 * watchdog + plain, (first["duration"], plain)
    hang = first["hang"]
    assert hang["stalled"] and not hang["spent"] and hang["running"] == TEST
    (hung,) = hang["tests"]
    assert hung["test_id"] == TEST and hung["stack_top"].endswith(" in wait_forever"), hung
    assert "its stacks, asked from outside" in hung["excerpt"]
    assert "tests/test_gate.py:9 in test_wait_for_the_gate" in hung["excerpt"], hung["excerpt"]
    assert first["tests"][TEST]["outcome"] == "timeout" and not first["crashes"]
    for p in runs:  # and goes on: every other test has its result in every run
        assert all(p["tests"][t]["outcome"] == "passed" for t in OTHERS), (p["name"], p["tests"])
    for p in runs[1:]:  # the later runs leave it out
        assert f"--deselect={TEST}" in p["command"] and TEST not in p["tests"], p["name"]
        assert not p["timed_out"] and p["duration"] < watchdog, (p["name"], p["duration"])
    alone = [p for p in d["phases"] if p["kind"] == "confirm"]
    assert alone and all(p["tests"][TEST]["outcome"] == "timeout" for p in alone)
    assert all(p["duration"] < TEST_TIMEOUT + 30 for p in alone)
    assert d["verdict"] == "hang", (d["verdict"], d["findings"])
    (f,) = [f for f in d["findings"] if f["kind"] == "hang"]
    assert f["test_id"] == TEST and "wait_forever" in f["excerpt"]
    assert not [f for f in d["findings"] if f["kind"] in ("budget-spent", "crash", "ft-crash", "infra-error")]
    assert "budget" not in d["qualifier"], d["qualifier"]


@pytest.mark.integration
@pytest.mark.slow
def test_local_names_the_hang_with_its_stacks_once_and_goes_on(tmp_path, ft_interpreter) -> None:
    d, took = _run(tmp_path, "local")
    _check(d)
    # the one frozen run, then short runs: far from the 8 x 53 s it cost before
    assert took < 2 * seconds(TEST_TIMEOUT) + 240, took
