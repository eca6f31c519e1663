"""A job plans its threaded runs to its budget (issue #58, acceptance 1), on the real 3.13t.

ft_budgetrace: 300 CPU-bound tests and, in its last file, one cheap test that loses an update in
threads with the GIL off. At the settings' iterations its threaded runs do not fit the job's
budget; the plan gives the slow tests fewer iterations, so every test (the last file's too) runs
in threads, the confirmation runs keep their reserve, and the race is held on its runs alone.
The test runs a copy 20 times lighter than the fixture as shipped (the closing note's run of
issue #58 used the fixture itself, at ``job_timeout: 600``), with the budget cut to match.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, INTERP_YAML, cli

pytestmark = [pytest.mark.integration, pytest.mark.slow]
RACE = "tests/test_z_tally.py::test_tally_counts_every_add"
SETTINGS = "settings: {threads: 4, iterations: 5, repeat: 2, test_timeout: 60, job_timeout: 200, confirm: 5, confirm_budget: 45}"


def lighter(tmp: Path) -> Path:
    pkg = tmp / "ft_budgetrace"
    shutil.copytree(FIXTURES / "ft_budgetrace", pkg)
    init = pkg / "src" / "ft_budgetrace" / "__init__.py"
    text = init.read_text()
    assert "n: int = 2_000_000" in text
    init.write_text(text.replace("n: int = 2_000_000", "n: int = 100_000"))
    return pkg


def test_a_suite_too_big_for_its_threaded_runs_still_finds_the_race_in_its_last_file(tmp_path, ft_interpreter) -> None:
    pkg = lighter(tmp_path)
    m = tmp_path / "matrix.yaml"
    m.write_text(f"{INTERP_YAML.rstrip()}\n{SETTINGS}\npackages:\n  - {{name: ft_budgetrace, path: {pkg}}}\n")
    t0 = time.monotonic()
    r = cli("run", "--matrix", str(m), "--out", str(tmp_path / "out"), "--backend", "local")
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (res,) = (json.loads(p.read_text()) for p in (tmp_path / "out" / "results").glob("*.json"))
    plan = res["thread_plan"]
    # the settings' runs would not have fitted: the plan says so and gave slow tests fewer iterations
    assert plan["how"] == "fitted", plan
    assert plan["tests"] == plan["in_threads"] == 302 and plan["left_out"] == 0, plan
    assert max(map(int, plan["iterations"])) == 5 and min(map(int, plan["iterations"])) < 5, plan
    assert (tmp_path / "out" / plan["file"]).is_file()
    # every test ran in threads in every GIL-off threaded run, the race among them
    threaded = [p for p in res["phases"] if p["kind"] == "threads" and p["gil"] == 0]
    assert threaded and all(p["exit_code"] is not None and not p["timed_out"] for p in threaded), threaded
    for p in threaded:
        assert len(p["tests"]) >= 302 - 1 and p["tests"][RACE]["outcome"] == "failed", p["name"]
    assert res["verdict"] == "ft-race", (res["verdict"], res["findings"])
    (f,) = [f for f in res["findings"] if f["kind"] == "ft-race"]
    assert f["test_id"] == RACE and f["confirmed"]["gil1"].startswith("0/"), f
    assert not any(f["kind"] == "infra-error" for f in res["findings"])
    assert took < 200 + 120, took  # the budget, and the install and the venv around it
