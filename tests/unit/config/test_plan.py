"""Plan and shards: disjoint, complete, identical across processes, balanced."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from harness.config import estimate, matrix, plan, plantext, sharding, timings
from harness.core.errors import ConfigError
from harness.core.model import InterpreterInfo, JobResult, Phase
from harness.util.safefiles import write_json_atomic
from tests.conftest import HARNESS, SOURCE_PATH

ROOT = Path(__file__).resolve().parents[3]
N_PYPI = 22
N_LOCAL = 8  # half of them carry a C source file


def _write_matrix(tmp: Path) -> Path:
    """A 60-job matrix: 30 packages (PyPI names and local trees) x 2 interpreters."""
    lines = [
        "settings: {repeat: 2, iterations: 4, gil_modes: [0, 1]}",
        "interpreters:",
        "  - {name: ft313, version: 3.13.5, source: 'debian:trixie'}",
        "  - {name: ft313-tsan, version: 3.13.5, source: 'debian:trixie', sanitizer: thread}",
        "packages:",
    ]
    for i in range(N_PYPI):
        lines.append(f"  - {{name: pypi-pkg-{i:02d}, version: '>=1.{i}'}}")
    for i in range(N_LOCAL):
        tree = tmp / "src" / f"local{i}"
        (tree / "pkg").mkdir(parents=True)
        (tree / "pkg" / "__init__.py").write_text("")
        if i % 2:
            (tree / "pkg" / "_speedups.c").write_text("/* native */\n")
        lines.append(f"  - {{name: local-{i}, path: src/local{i}}}")
    path = tmp / "matrix.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def matrix_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write_matrix(tmp_path_factory.mktemp("plan"))


@pytest.fixture(scope="module")
def jobs(matrix_file: Path) -> list[plan.Job]:
    return plan.make_plan(matrix.load(matrix_file))


def _durations(jobs: list[plan.Job], seed: int = 7) -> dict[str, float]:
    """Skewed, recorded-looking durations: a few long jobs, many short ones."""
    rng = random.Random(seed)
    return {j.job_id: round(rng.lognormvariate(5.0, 1.1), 2) for j in jobs}


def test_matrix_has_50_plus_jobs(jobs):
    assert len(jobs) == 2 * (N_PYPI + N_LOCAL) >= 50


@pytest.mark.parametrize("count", range(1, 9))
@pytest.mark.parametrize("with_durations", [False, True])
def test_shards_are_disjoint_and_cover_the_plan(jobs, count, with_durations):
    durations = _durations(jobs) if with_durations else None
    seen: list[str] = []
    for index in range(1, count + 1):
        part = sharding.shard(jobs, index, count, durations)
        seen += [j.job_id for j in part]
        # plan order is kept inside a shard
        positions = [jobs.index(j) for j in part]
        assert positions == sorted(positions)
    assert len(seen) == len(set(seen)), "a job is in two shards"
    assert sorted(seen) == sorted(j.job_id for j in jobs), "a job is in no shard"


@pytest.mark.parametrize("count", range(1, 9))
def test_balance_with_recorded_durations(jobs, count):
    durations = _durations(jobs)
    totals = [sum(durations[j.job_id] for j in sharding.shard(jobs, i, count, durations)) for i in range(1, count + 1)]
    total = sum(durations.values())
    bound = 1.15 * max(total / count, max(durations.values()))
    assert max(totals) <= bound, (count, totals, bound)


def test_balance_check_can_fail(jobs):
    """Round-robin on the same skewed durations breaks the bound: the check above has teeth."""
    durations = _durations(jobs)
    count = 5
    totals = [sum(durations[j.job_id] for j in jobs[i::count]) for i in range(count)]
    bound = 1.15 * max(sum(durations.values()) / count, max(durations.values()))
    assert max(totals) > bound


def test_heuristic_ranks_tsan_and_native_jobs_longer(jobs):
    by_id = {j.job_id: j for j in jobs}
    plain = estimate.heuristic_seconds(by_id["ft313--pypi-pkg-00"])
    tsan = estimate.heuristic_seconds(by_id["ft313-tsan--pypi-pkg-00"])
    native = estimate.heuristic_seconds(by_id["ft313--local-1"])
    pure = estimate.heuristic_seconds(by_id["ft313--local-0"])
    assert tsan > plain and native > pure


def test_heuristic_grows_with_modes_and_repeat(tmp_path):
    def one(settings: str) -> float:
        spec = matrix.loads(
            f"settings: {settings}\ninterpreters:\n"
            "  - {name: a, version: 3.13.5, source: 'debian:trixie'}\npackages:\n  - {name: x}\n"
        )
        return estimate.heuristic_seconds(plan.make_plan(spec)[0])

    assert one("{gil_modes: [0], repeat: 1}") < one("{gil_modes: [0, 1], repeat: 1}")
    assert one("{gil_modes: [0], repeat: 1}") < one("{gil_modes: [0], repeat: 3}")


def test_heuristic_balances_without_durations(jobs):
    expected = dict(zip((j.job_id for j in jobs), estimate.expected_seconds(jobs), strict=True))
    totals = [sum(expected[j.job_id] for j in sharding.shard(jobs, i, 3)) for i in (1, 2, 3)]
    assert max(totals) <= 1.15 * max(sum(expected.values()) / 3, max(expected.values()))


def test_partial_durations_scale_the_heuristic(jobs):
    # every recorded job took 10x its heuristic: unrecorded ones are expected to as well
    rec = {j.job_id: estimate.heuristic_seconds(j) * 10 for j in jobs[:5]}
    got = estimate.expected_seconds(jobs, rec)
    assert got[:5] == [rec[j.job_id] for j in jobs[:5]]
    assert got[5] == pytest.approx(estimate.heuristic_seconds(jobs[5]) * 10, rel=1e-3)


_CHILD = """
import json, sys
from harness.config import estimate, matrix, plan, plantext, sharding, timings
jobs = plan.make_plan(matrix.load(sys.argv[1]))
d = json.loads(sys.argv[2])
print(json.dumps({f"{n}{k}": sharding.assign(jobs, n, dur)
                  for n in range(1, 9) for k, dur in (("h", None), ("d", d))}))
"""


def test_split_is_identical_across_processes(matrix_file, jobs):
    durations = _durations(jobs)
    # a reversed dict: the split must not depend on the order of the durations mapping
    arg = json.dumps(dict(reversed(list(durations.items()))))
    procs = [
        subprocess.Popen(
            [sys.executable, "-P", "-c", _CHILD, str(matrix_file), arg],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": seed, **SOURCE_PATH},
        )
        for seed in ("1", "31337")
    ]
    outs = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    here = {f"{n}{k}": sharding.assign(jobs, n, dur) for n in range(1, 9) for k, dur in (("h", None), ("d", durations))}
    assert outs[0] == outs[1] == here
    assert here["3h"] != here["3d"]  # the durations did change the split


def test_cli_plan_shards_identical_across_processes(matrix_file):
    """`ft-harness plan --shards N --format json` for N in 1..8, two hash seeds, in parallel."""
    base = [*HARNESS, "plan", "--matrix", str(matrix_file)]
    if (
        subprocess.run([*base, "--help"], capture_output=True, cwd=ROOT, env={**os.environ, **SOURCE_PATH}).returncode
        != 0
    ):
        pytest.skip("the `plan` subcommand is not wired into harness/__main__.py yet")
    runs = {
        (n, seed): subprocess.Popen(
            [*base, "--shards", str(n), "--format", "json"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": seed, **SOURCE_PATH},
        )
        for n in range(1, 9)
        for seed in ("0", "12345")
    }
    docs = {k: json.loads(p.communicate(timeout=120)[0]) for k, p in runs.items()}
    assert all(p.returncode == 0 for p in runs.values())
    for n in range(1, 9):
        a, b = docs[(n, "0")], docs[(n, "12345")]
        assert a == b
        shard_of = {j["job_id"]: j["shard"] for j in a["jobs"]}
        assert len(shard_of) == len(a["jobs"]) == 2 * (N_PYPI + N_LOCAL)
        assert set(shard_of.values()) == set(range(1, n + 1))


@pytest.mark.parametrize("text", ["0/3", "4/3", "3/0", "1", "a/b", "-1/3", "1/3/4", "", "1.5/3"])
def test_parse_shard_rejects(text):
    with pytest.raises(ConfigError, match=r"--shard must be I/N with 1 <= I <= N, got"):
        sharding.parse_shard(text)


def test_parse_shard_accepts():
    assert sharding.parse_shard("2/3") == (2, 3)
    assert sharding.parse_shard(" 1 / 1 ") == (1, 1)


@pytest.mark.parametrize(("index", "count"), [(0, 2), (3, 2), (1, 0), (True, 2)])
def test_shard_validates(jobs, index, count):
    with pytest.raises(ConfigError, match="--shard must be I/N"):
        sharding.shard(jobs, index, count)


def test_more_shards_than_jobs(jobs):
    few = jobs[:3]
    parts = [sharding.shard(few, i, 5) for i in range(1, 6)]
    assert sorted(len(p) for p in parts) == [0, 0, 1, 1, 1]
    gh = json.loads(plantext.render_plan(few, fmt="github", shards=5))
    assert [e["shard"] for e in gh["include"]] == ["1/5", "2/5", "3/5"]


# --------------------------------------------------------------------------- durations


def _result(job_id: str, secs: list[float]) -> JobResult:
    phases = tuple(
        Phase(name=n, kind=n.split("-")[0], duration=s)
        for n, s in zip(["install", "probe", "plain-gil0", "threads-gil0-r1"], secs, strict=False)
    )
    return JobResult(
        job_id=job_id,
        key="k",
        package=job_id.split("--")[1],
        interpreter=InterpreterInfo(name="ft313", version="3.13.5", key="ik"),
        phases=phases,
    )


def _measured(got: dict) -> dict:
    """job id -> the seconds a previous run measured (its phases together)."""
    return {k: v.measured if isinstance(v, timings.Profile) else v for k, v in got.items()}


def test_durations_from_report_json(tmp_path):
    report = {
        "schema": 1,
        "packages": [
            {
                "job_id": "ft313--a",
                "verdict": "compatible",
                "phases": [{"name": "install", "duration": 10.5}, {"name": "plain-gil0", "duration": 4.5}],
            },
            {"job_id": "ft313--b", "verdict": "compatible", "phases": [{"name": "install", "duration": 2}]},
            {"job_id": "ft313--c", "verdict": "compatible", "phases": []},  # nothing recorded: left to the heuristic
        ],
    }
    p = tmp_path / "report.json"
    p.write_text(json.dumps(report))
    assert _measured(estimate.durations_from_report(p)) == {"ft313--a": 15.0, "ft313--b": 2.0}
    assert _measured(estimate.durations_from_report(tmp_path)) == {"ft313--a": 15.0, "ft313--b": 2.0}
    a = estimate.durations_from_report(p)["ft313--a"]
    assert isinstance(a, timings.Profile) and a.install == 10.5 and a.plain == {0: 4.5}


def test_durations_from_aggregated_report(tmp_path):
    """The report.json that harness.results.aggregate writes, from captured results, gives the same."""
    from harness.core.model import read_result
    from harness.results import aggregate

    run0 = ROOT / "tests" / "data" / "report" / "run0"
    results = [read_result(f) for f in sorted((run0 / "results").glob("*.json"))]
    report = aggregate.build_report(results, meta={})
    p = tmp_path / "report.json"
    p.write_text(json.dumps(report.to_dict()))
    got = _measured(estimate.durations_from_report(p))
    assert got == _measured(estimate.durations_from_report(run0))
    assert len(got) == len(results) and got["cp313t--idna"] > got["cp313t--fx-refuses-ft"]


def test_durations_from_result_files(tmp_path):
    out = tmp_path / "out"
    write_json_atomic(out / "results" / "ft313--a.json", _result("ft313--a", [3, 1, 20, 40]).to_dict())
    write_json_atomic(out / "results" / "ft313--b.json", _result("ft313--b", [5, 1]).to_dict())
    assert _measured(estimate.durations_from_report(out)) == {"ft313--a": 64.0, "ft313--b": 6.0}
    assert _measured(estimate.durations_from_report(out / "results")) == {"ft313--a": 64.0, "ft313--b": 6.0}


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"packages": 3}', "\xff\xfe".encode("latin-1")])
def test_durations_bad_report_names_file(tmp_path, content):
    p = tmp_path / "old-report.json"
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content)
    with pytest.raises(ConfigError) as e:
        estimate.durations_from_report(p)
    assert str(p) in str(e.value)


def test_durations_missing_and_bad_result(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        estimate.durations_from_report(tmp_path / "nope.json")
    with pytest.raises(ConfigError, match="no report.json and no result files"):
        estimate.durations_from_report(tmp_path)
    bad = tmp_path / "results" / "x.json"
    bad.parent.mkdir()
    bad.write_text('{"schema": 99}')
    with pytest.raises(ConfigError) as e:
        estimate.durations_from_report(tmp_path)
    assert str(bad) in str(e.value)


# --------------------------------------------------------------------------- rendering


def test_render_github_matrix(jobs):
    text = plantext.render_plan(jobs, fmt="github", shards=4, durations=_durations(jobs))
    assert "\n" not in text  # one line, for $GITHUB_OUTPUT
    doc = json.loads(text)
    assert [e["shard"] for e in doc["include"]] == ["1/4", "2/4", "3/4", "4/4"]
    assert [e["index"] for e in doc["include"]] == [1, 2, 3, 4]
    assert sum(e["jobs"] for e in doc["include"]) == len(jobs)
    for e in doc["include"]:
        i, n = sharding.parse_shard(e["shard"])
        mine = sharding.shard(jobs, i, n, _durations(jobs))
        assert e["jobs"] == len(mine)
        assert e["interpreters"].split(",") == list(dict.fromkeys(j.interpreter.name for j in mine))


def test_every_interpreter_package_pair_is_one_job_in_exactly_one_shard(tmp_path):
    """Several interpreters (two built versions and an installed one): one job per
    (interpreter, package), each in one shard; a shard names the interpreters it needs."""
    exe = tmp_path / "bin" / "python3.14t"
    exe.parent.mkdir()
    exe.write_text("")
    f = tmp_path / "m.yaml"
    f.write_text(
        "interpreters:\n"
        "  - {name: cp313-trixie, version: 3.13.5, source: 'debian:trixie'}\n"
        "  - {name: cp313-forky, version: 3.13.15, source: 'debian:forky'}\n"
        "  - {name: cp314t, source: 'python:bin/python3.14t'}\n"
        "packages: [{name: a}, {name: b}, {name: c, version: '1.0'}]\n"
    )
    jobs = plan.make_plan(matrix.load(f))
    assert [j.job_id for j in jobs] == [f"{i}--{p}" for i in ("cp313-trixie", "cp313-forky", "cp314t") for p in "abc"]
    doc = json.loads(plantext.render_plan(jobs, fmt="json", shards=4))
    by_id = {j["job_id"]: j for j in doc["jobs"]}
    assert by_id["cp313-forky--a"]["interpreter_version"] == "3.13.15"
    assert by_id["cp313-forky--a"]["interpreter_source"] == "debian:forky"
    assert by_id["cp314t--c"]["interpreter_version"] == ""
    assert by_id["cp314t--c"]["interpreter_source"] == f"python:{exe}"
    seen = [j.job_id for i in range(1, 5) for j in sharding.shard(jobs, i, 4)]
    assert sorted(seen) == sorted(by_id)
    gh = json.loads(plantext.render_plan(jobs, fmt="github", shards=4))
    named = {n for e in gh["include"] for n in e["interpreters"].split(",")}
    assert named == {"cp313-trixie", "cp313-forky", "cp314t"}


def test_render_json_plan(jobs):
    durations = _durations(jobs)
    doc = json.loads(plantext.render_plan(jobs, fmt="json", shards=3, durations=durations))
    assert doc["schema"] == plantext.PLAN_SCHEMA and doc["shards"] == 3
    assert [j["job_id"] for j in doc["jobs"]] == [j.job_id for j in jobs]
    first = doc["jobs"][0]
    assert set(first) >= {"job_id", "interpreter", "package", "source", "shard", "expected_seconds"}
    assert first["expected_seconds"] == round(durations[first["job_id"]], 1)
    sources = {j["package"]: j["source"] for j in doc["jobs"]}
    assert sources["local-0"] == "local" and sources["pypi-pkg-00"] == "pypi"
    for j in doc["jobs"]:
        assert j["job_id"] in {x.job_id for x in sharding.shard(jobs, j["shard"], 3, durations)}


def test_render_rejects_bad_format_and_count(jobs):
    with pytest.raises(ConfigError, match="--format must be one of json, github"):
        plantext.render_plan(jobs, fmt="yaml", shards=2)
    with pytest.raises(ConfigError, match="--shards must be a positive integer"):
        plantext.render_plan(jobs, fmt="json", shards=0)


def test_the_table_is_a_line_a_shard_then_a_line_a_job(jobs):
    durations = _durations(jobs)
    text = plantext.render_plan(jobs, fmt="table", shards=3, durations=durations)
    lines = text.splitlines()
    assert lines[0].startswith(f"{len(jobs)} jobs in 3 shard(s), expected ")
    assert [ln.split()[0] for ln in lines[2:5]] == ["1/3", "2/3", "3/3"]
    rows = lines[7:]
    assert len(rows) == len(jobs) and {r.split()[-1] for r in rows} == {j.job_id for j in jobs}
    gh = {
        e["shard"]: e
        for e in json.loads(plantext.render_plan(jobs, fmt="github", shards=3, durations=durations))["include"]
    }
    for ln in lines[2:5]:  # the same split and sums as the workflow's matrix
        shard, n, minutes = ln.split()[:3]
        assert int(n) == gh[shard]["jobs"] and float(minutes) == round(gh[shard]["expected_seconds"] / 60, 1)
    assert (
        f"({len(jobs)} guessed from the settings)" in plantext.render_plan(jobs, fmt="table", shards=2).splitlines()[0]
    )
    assert f"({len(jobs)} from --durations)" in lines[0]


def test_a_shard_over_the_runners_limit_is_warned_about(jobs):
    durations = _durations(jobs)
    total_min = sum(estimate.expected_seconds(jobs, durations)) / 60
    (w,) = sharding.over_limit(jobs, 1, durations, limit_min=total_min / 2)
    assert w.startswith("shard 1/1 is expected to take ") and "plan more --shards" in w
    assert sharding.over_limit(jobs, 1, durations, limit_min=total_min + 1) == []
    assert len(sharding.over_limit(jobs, 4, durations, limit_min=0.001)) == 4


# --------------------------------------------------------------------------- the estimate

DEFMAT = ROOT / "tests" / "data" / "timings" / "defmat"  # captured: the default matrix's 3.13.5t column


def _default_jobs(gil_on: str) -> list[plan.Job]:
    text = (ROOT / "matrix.yaml").read_text().replace("settings:\n", f"settings:\n  gil_on: {gil_on}\n", 1)
    return [j for j in plan.make_plan(matrix.loads(text)) if j.interpreter.name == "cpython3.13t"]


def test_a_previous_runs_phases_win_and_follow_the_settings():
    """--durations of captured results: under the settings they ran with, each job is expected
    to take what it took; with targeted GIL-on runs, less (no GIL-on run for iniconfig)."""
    durations = estimate.durations_from_report(DEFMAT)
    full, targeted = _default_jobs("full"), _default_jobs("targeted")
    got = dict(zip((j.job_id for j in full), estimate.expected_seconds(full, durations), strict=True))
    for job_id, prof in durations.items():
        assert got[job_id] == pytest.approx(prof.measured, rel=0.005)
    assert estimate.estimate_sources(full, durations).count("durations") == len(durations) == 5
    less = dict(zip((j.job_id for j in targeted), estimate.expected_seconds(targeted, durations), strict=True))
    assert less["cpython3.13t--iniconfig"] < got["cpython3.13t--iniconfig"]
    assert less["cpython3.13t--idna"] < got["cpython3.13t--idna"] / 3  # its GIL-on-only hang is not run
    assert less["cpython3.13t--cffi"] == got["cpython3.13t--cffi"]  # build failure: no tests either way


def test_the_heuristic_is_a_typical_job_not_the_worst_case():
    """Without a measurement, a PyPI job of the default matrix's settings is expected to take a
    few minutes (its measured jobs: median 1.7 min, mean 3.6 min at load ~15), not the budget."""
    jobs = _default_jobs("full")
    guess = [estimate.heuristic_seconds(j) for j in jobs]
    assert all(60 <= g <= 300 for g in guess), guess
    targeted = [estimate.heuristic_seconds(j) for j in _default_jobs("targeted")]
    assert all(t < g for t, g in zip(targeted, guess, strict=True))


def test_plan_checks_that_installed_interpreters_exist_before_it_plans(tmp_path, capsys, monkeypatch):
    """#44: `plan` said nothing of a `python:python3.14t` that is not on PATH (exit 0), and only
    `build` refused it; now it refuses it at its matrix line, or says it did not look."""
    import sys as _sys

    from harness import __main__ as cli_main

    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    m = tmp_path / "m.yaml"
    m.write_text(
        "interpreters:\n  - name: py314t\n    source: python:python3.14t\n"
        "packages:\n  - name: six\n    version: '1.17.0'\n"
    )
    assert cli_main.main(["plan", "--matrix", str(m)]) == 2
    err = capsys.readouterr().err
    assert f"{m}:3: " in err and "no 'python3.14t' on PATH" in err and "--installed-elsewhere" in err
    assert cli_main.main(["plan", "--matrix", str(m), "--installed-elsewhere"]) == 0
    out, err = capsys.readouterr()
    assert "py314t--six" in out and "not checked (--installed-elsewhere)" in err
    # found on PATH, or named by its path: planned as before
    (tmp_path / "empty-bin").mkdir()
    (tmp_path / "empty-bin" / "python3.14t").symlink_to(_sys.executable)
    assert cli_main.main(["plan", "--matrix", str(m)]) == 0
    m.write_text(m.read_text().replace("python:python3.14t", f"python:{_sys.executable}"))
    assert cli_main.main(["plan", "--matrix", str(m)]) == 0
    assert "not checked" not in capsys.readouterr().err
