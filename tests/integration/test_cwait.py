"""A test whose main thread waits in C ends at the watchdog, not the job timeout (issue #20).

ft_cwait's ``ready()`` blocks in ``pthread_cond_wait`` with the GIL released, so pytest-timeout's
signal method cannot end it (the handler would run only when the C call returns). The harness's
watchdog plugin dumps every thread at 2 x test_timeout + 10 s and ends the process; with xdist
the controller says the worker crashed, and the parser must tell that from a crash.
"""

from __future__ import annotations

import pytest

from tests.conftest import run_fixture

pytestmark = [pytest.mark.integration, pytest.mark.slow]
SETTINGS = "settings: {threads: 4, iterations: 2, repeat: 1, test_timeout: 5, job_timeout: 600, confirm: 1}"
TEST = "tests/test_gate.py::test_ready_after_setup"


def test_a_wait_in_c_ends_at_the_watchdog_as_a_hang(tmp_path, ft_interpreter) -> None:
    d = run_fixture(tmp_path, "ft_cwait", SETTINGS)
    assert d["verdict"] == "hang", d["findings"]
    phases = {p["name"]: p for p in d["phases"]}
    for name in ("plain-gil0", "plain-gil1"):  # main thread in C: only the watchdog ends it
        p = phases[name]
        # without it the phase would run to the job timeout (600 s); with it, 20 s plus pytest's
        # and xdist's start and stop (22 s alone, 57 s once on a loaded 2-core machine)
        assert not p["timed_out"] and p["duration"] < 300, (name, p["duration"])
        assert p["tests"][TEST]["outcome"] == "timeout" and not p["crashes"], p["crashes"]
        assert p["tests"]["tests/test_gate.py::test_nothing_to_wait_for"]["outcome"] == "passed"
        assert (p["hang"]["tests"][0]["test_id"]) == TEST
        assert "ft-harness's watchdog dumped every thread" in p["hang"]["tests"][0]["excerpt"]
    (f,) = [f for f in d["findings"] if f["kind"] == "hang"]
    assert f["test_id"] == TEST and f["modes"] == [0, 1]
    # the excerpt is the run alone's (pytest-timeout's thread method dumps a wait in C too)
    assert "ft_cwait/__init__.py:7 in ready" in f["excerpt"], f["excerpt"]
    assert not [x for x in d["findings"] if x["kind"] in ("crash", "ft-crash")]
