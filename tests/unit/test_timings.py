"""harness.config.timings: the shipped table of measured per-package times, scaled to a job's
settings, used by plan's estimate where no --durations report covers a job."""

from __future__ import annotations

import json
from dataclasses import replace

from harness.config import matrix, plan, timings


def _jobs(settings: str, *pkgs: str) -> list[plan.Job]:
    return plan.make_plan(matrix.loads(
        'interpreters: [{name: cpython3.13t, version: "3.13.5", source: "debian:trixie"}]\n'
        f"settings: {settings}\npackages: [" + ", ".join(f"{{name: {p}}}" for p in pkgs) + "]\n"))


def _table(tmp_path, **rows):
    path = tmp_path / "durations.json"
    path.write_text(json.dumps({"packages": rows}))
    timings.table.cache_clear()
    return path


def test_a_measured_package_takes_its_time_scaled_to_the_job_settings(tmp_path):
    path = _table(tmp_path, Six={"seconds": 300.0, "settings": {"threads": 4, "iterations": 3, "repeat": 2}})
    same, = _jobs("{threads: 4, iterations: 3, repeat: 2}", "six")
    more, = _jobs("{threads: 4, iterations: 3, repeat: 4}", "six")
    assert timings.measured([same], plan.heuristic_seconds, path) == {same.job_id: 300.0}
    doubled = timings.measured([more], plan.heuristic_seconds, path)[more.job_id]
    ratio = plan.heuristic_seconds(more) / plan.heuristic_seconds(same)
    assert doubled == round(300.0 * ratio, 1) and doubled > 300.0


def test_capped_at_the_budget_and_not_for_tsan_or_unknown_packages(tmp_path):
    path = _table(tmp_path, six={"seconds": 99999.0, "settings": {}})
    job, other = _jobs("{job_timeout: 600}", "six", "idna")
    got = timings.measured([job, other], plan.heuristic_seconds, path)
    assert got == {job.job_id: 600.0 + job.settings.install_timeout}
    tsan = replace(job, interpreter=replace(job.interpreter, sanitizer="thread"))
    assert timings.measured([tsan], plan.heuristic_seconds, path) == {}


def test_a_missing_or_broken_table_is_no_table(tmp_path):
    timings.table.cache_clear()
    assert timings.table(tmp_path / "none.json") == {}
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert timings.table(bad) == {}


def test_the_shipped_table_reads_and_plan_uses_it():
    rows = timings.table()
    assert rows, "harness/data/durations.json is shipped and readable"
    name = next(iter(rows))
    job, = _jobs("{threads: 4}", name)
    assert plan.expected_seconds([job]) == [timings.measured([job], plan.heuristic_seconds)[job.job_id]]
