"""The scale section's synthetic results are real JobResults and cover every verdict."""

from __future__ import annotations

import json

from benchmarks import scale
from benchmarks.common import write_matrix
from harness.config import matrix, plan
from harness.core.model import VERDICTS, InterpreterInfo, JobResult


def test_synthetic_results_round_trip_and_cycle_verdicts(tmp_path) -> None:
    n = len(VERDICTS) + 2
    spec = matrix.load(str(write_matrix(tmp_path / "m.yaml", [scale._package_entry(i) for i in range(n)])))
    jobs = plan.make_plan(spec)
    assert len(jobs) == n
    interp = InterpreterInfo(name="cpython3.13t", version="3.13.5", key="k", python="/x")
    results = [scale.synthetic_result(j, i, interp) for i, j in enumerate(jobs)]
    back = [JobResult.from_dict(json.loads(json.dumps(r.to_dict()))) for r in results]
    assert back == results
    assert {r.verdict for r in results} == set(VERDICTS)
    for r in results:
        tests = [p for p in r.phases if p.kind in ("plain", "threads")]
        assert len(tests) == 4 and all(len(p.tests) == scale.TESTS for p in tests)
        assert bool(r.findings) == (r.verdict not in ("compatible", "no-tests"))
        assert r.key == jobs[results.index(r)].key("k")


def test_one_size_times_every_step(tmp_path) -> None:
    row = scale.one_size(3, tmp_path)
    assert row["packages"] == 3
    steps = ("matrix_load", "plan_make", "plan_render", "load_results", "build_report", "write_all")
    for key in steps:  # every step was timed (kept to 0.1 ms: a tiny step may read 0.0)
        assert isinstance(row[key], float) and isinstance(row["cpu"][key], float)
    assert row["write_all"] > 0 and row["load_results"] > 0  # these read and write files: time moved
    assert sum(row[k] for k in steps) <= row["plan"] + row["report"] + row["matrix_load"] + 0.01
    assert row["files_written"] >= 3 and not (tmp_path / "scale-3").exists()


def test_bare_steps_are_the_commands_a_person_runs() -> None:
    from benchmarks.overhead import bare_steps

    interp = InterpreterInfo(name="cpython3.13t", version="3.13.5", key="k", python="/x")
    spec = matrix.loads(
        'interpreters: [{name: cpython3.13t, version: "3.13.5", source: "debian:trixie"}]\n'
        "packages: [{name: six, version: '==1.17.0'}]\n"
    )
    res = scale.synthetic_result(plan.make_plan(spec)[0], 9, interp).to_dict()
    names = [p["name"] for p in bare_steps(res)]
    assert names == ["fetch", "install", "plain-gil0", "threads-gil0-r1", "plain-gil1", "threads-gil1-r1"]


def test_written_results_name_their_own_job(tmp_path) -> None:
    from harness.core.model import read_result

    spec = matrix.load(str(write_matrix(tmp_path / "m.yaml", [scale._package_entry(i) for i in range(13)])))
    jobs = plan.make_plan(spec)
    interp = InterpreterInfo(name="cpython3.13t", version="3.13.5", key="k", python="/x")
    scale.write_results(jobs, interp, tmp_path)
    for i, job in enumerate(jobs):
        r = read_result(tmp_path / f"{job.job_id}.json")
        assert (r.job_id, r.package, r.key) == (job.job_id, job.package.name, job.key("k"))
        assert r.requested == job.package.version and "zzdummy" not in json.dumps(r.to_dict())
        assert r.verdict == VERDICTS[i % len(VERDICTS)]
