"""`plan --shards auto`: as few shards as keep each under a margin of the runner's limit, by
measured durations where there are some; `plan` refuses a matrix whose `top:` resolved nothing
(issue #32)."""

from __future__ import annotations

import json
from pathlib import Path

from harness.config import matrix, plan, sharding
from harness.config.select import read_names
from tests.conftest import cli

INTERP = 'interpreters: [{name: cpython3.13t, version: "3.13.5", source: "debian:trixie"}]\n'


def _jobs(n: int):
    names = "".join(f"  - {{name: pkg{i}, version: '==1.0'}}\n" for i in range(n))
    return plan.make_plan(matrix.loads(INTERP + "packages:\n" + names))


def test_the_fewest_shards_that_fit_under_the_margin():
    jobs = _jobs(10)
    hour = {j.job_id: 3600.0 for j in jobs}  # measured: an hour each
    # 360 min x 0.8 = 288 min a shard: 4 one-hour jobs fit, 5 do not -> 3 shards (4+4+2)
    assert sharding.shards_to_fit(jobs, hour, 360) == 3
    assert not sharding.over_limit(jobs, 3, hour, 360 * sharding.MARGIN)
    assert sharding.over_limit(jobs, 2, hour, 360 * sharding.MARGIN)
    assert sharding.shards_to_fit(jobs, hour, 60) == 10  # one job a shard: no fewer fits
    assert sharding.shards_to_fit(jobs, {j.job_id: 10.0 for j in jobs}, 360) == 1


def test_a_job_longer_than_the_limit_gets_a_shard_of_its_own():
    jobs = _jobs(3)
    took = {jobs[0].job_id: 30000.0, jobs[1].job_id: 60.0, jobs[2].job_id: 60.0}
    n = sharding.shards_to_fit(jobs, took, 360)
    assert n == 2  # the long one alone, the two short ones together; over_limit says so
    assert len(sharding.over_limit(jobs, n, took, 360)) == 1


def test_plan_shards_auto_from_a_previous_report(tmp_path: Path):
    names = "".join(f"  - {{name: pkg{i}, version: '==1.0'}}\n" for i in range(6))
    m = tmp_path / "m.yaml"
    m.write_text(INTERP + "packages:\n" + names)
    report = {
        "packages": [
            {"job_id": f"cpython3.13t--pkg{i}", "verdict": "compatible", "phases": [{"duration": 7200}]}
            for i in range(6)
        ]
    }  # two hours each: one job a 288-min shard
    (tmp_path / "report.json").write_text(json.dumps(report))
    r = cli(
        "plan",
        "--matrix",
        str(m),
        "--shards",
        "auto",
        "--format",
        "github",
        "--durations",
        str(tmp_path / "report.json"),
    )
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)["include"]) == 3
    assert "--shards auto: 3 shard(s), each expected under 80% of 360 min (6 from --durations)" in r.stderr


def test_plan_refuses_a_top_that_resolved_nothing(tmp_path: Path):
    m = tmp_path / "m.yaml"
    m.write_text(INTERP + "packages:\n  - {top: 2}\n")
    record = tmp_path / "resolved.json"  # what the plan recorded when the index did not answer
    record.write_text(json.dumps([{"name": n, "error": "index: <urlopen error timed out>"} for n in read_names()[:2]]))
    r = cli("plan", "--matrix", str(m), "--resolved", str(record))
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0] == (f"{m}: no `top:` entry could be resolved (2 tried; index: <urlopen error timed out>)")
