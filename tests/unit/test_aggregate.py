"""harness.aggregate: reading result files, building report.json, schema, shard merging."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from harness import aggregate
from harness.errors import ConfigError
from harness.model import READABLE_SCHEMAS, VERDICTS, JobResult, write_json_atomic

DATA = Path(__file__).resolve().parents[1] / "data" / "report"
SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "harness" / "schema" / "report.schema.json").read_text()
)
EXPECTED_VERDICTS = {
    "cp313t--attrs": "compatible",
    "cp313t--fx-all-unsafe": "compatible",
    "cp313t--fx-baseline": "baseline-failure",
    "cp313t--fx-crash": "crash",
    "cp313t--fx-ft-crash": "ft-crash",
    "cp313t--fx-hang": "hang",
    "cp313t--fx-notests": "no-tests",
    "cp313t--fx-race": "ft-race",
    "cp313t--fx-refuses-ft": "build-failure",
    "cp313t--fx-thread-unsafe": "thread-unsafe",
    "cp313t--idna": "infra-error",
    "cp313t--msgpack": "gil-reenabled",
    "cp31315t--attrs": "compatible",
    "cp31315t--fx-race": "compatible",
    "cp31315t--msgpack": "gil-reenabled",
}


def validator() -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    return jsonschema.Draft202012Validator(SCHEMA)


def run1_report(**kw) -> dict:
    results, problems = aggregate.load_results([DATA / "run1"])
    assert problems == []
    return aggregate.build_report(results, meta={"matrix_digest": "d1"}, **kw)


def test_load_run_dir_reads_every_result():
    results, problems = aggregate.load_results([DATA / "run1"])
    assert problems == []
    assert {r.job_id: r.verdict for r in results} == EXPECTED_VERDICTS


def test_load_accepts_the_results_dir_itself():
    a, _ = aggregate.load_results([DATA / "run1"])
    b, _ = aggregate.load_results([DATA / "run1" / "results"])
    assert [r.to_dict() for r in a] == [r.to_dict() for r in b]


def test_corrupt_files_are_named_and_left_out():
    results, problems = aggregate.load_results([DATA / "corrupt"])
    assert [r.job_id for r in results] == ["cp313t--attrs"]
    by_file = {p.split(":")[0].rsplit("/", 1)[-1]: p for p in problems}
    assert set(by_file) == {"notjson.json", "truncated.json", "wrongschema.json"}
    assert "not valid JSON (line 1)" in by_file["notjson.json"]
    assert "not valid JSON (line " in by_file["truncated.json"]
    assert f"result schema 99, expected one of {READABLE_SCHEMAS}" in by_file["wrongschema.json"]
    assert all(p.startswith(str(DATA / "corrupt" / "results")) for p in problems)


def test_unknown_verdict_is_a_problem(tmp_path):
    d = json.loads((DATA / "run1/results/cp313t--attrs.json").read_text())
    d["verdict"] = "mostly-fine"
    write_json_atomic(tmp_path / "results" / "x.json", d)
    results, problems = aggregate.load_results([tmp_path])
    assert results == []
    assert problems == [f"{tmp_path / 'results' / 'x.json'}: unknown verdict 'mostly-fine'"]


def test_same_job_with_different_content_in_two_dirs_is_an_error(tmp_path):
    for n in ("a", "b"):
        shutil.copytree(DATA / "run1" / "results", tmp_path / n / "results")
    f = tmp_path / "b" / "results" / "cp313t--fx-race.json"
    d = json.loads(f.read_text())
    d["verdict"] = "compatible"
    write_json_atomic(f, d)
    with pytest.raises(ConfigError) as e:
        aggregate.load_results([tmp_path / "a", tmp_path / "b"])
    msg = str(e.value)
    assert "cp313t--fx-race" in msg
    assert str(tmp_path / "a" / "results" / "cp313t--fx-race.json") in msg
    assert str(f) in msg
    assert e.value.return_code == 2


def test_identical_copies_merge_once(tmp_path):
    for n in ("a", "b"):
        shutil.copytree(DATA / "run1" / "results", tmp_path / n / "results")
    results, problems = aggregate.load_results([tmp_path / "a", tmp_path / "b"])
    assert len(results) == len(EXPECTED_VERDICTS) and problems == []


def test_missing_dir_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="not a directory"):
        aggregate.load_results([tmp_path / "nope"])


def test_report_validates_against_schema_with_previous_and_missing():
    r0, _ = aggregate.load_results([DATA / "run0"])
    old = aggregate.build_report(r0, meta={})
    rep = run1_report(previous=old, expected_jobs=[*EXPECTED_VERDICTS, "cp313t--lost"])
    validator().validate(rep)
    validator().validate(old)
    assert rep["missing"] == ["cp313t--lost"]
    assert rep["changes"]  # run0 differs from run1


def test_schema_rejects_what_it_should():
    v = validator()
    rep = run1_report()
    bad = json.loads(json.dumps(rep))
    bad["packages"][0]["verdict"] = "fine"
    assert not v.is_valid(bad)
    bad = json.loads(json.dumps(rep))
    bad["packages"][0]["phases"][0]["log"] = "../../etc/passwd"
    assert not v.is_valid(bad)
    bad = json.loads(json.dumps(rep))
    del bad["summary"]["hang"]
    assert not v.is_valid(bad)
    bad = json.loads(json.dumps(rep))
    bad["packages"][0]["findings"] = [{"kind": "crash"}]
    assert not v.is_valid(bad)


def test_package_entries_carry_what_the_issue_lists():
    rep = run1_report()
    assert rep["schema"] == 2
    on_first = [v for j, v in EXPECTED_VERDICTS.items() if j.startswith("cp313t--")]
    assert rep["summary"] == {v: on_first.count(v) for v in VERDICTS}  # see the table test
    assert list(rep["summary"]) == list(VERDICTS)
    names = [p["name"] for p in rep["packages"]]
    assert names == sorted(names, key=str.lower)
    crash = next(p for p in rep["packages"] if p["job_id"] == "cp313t--fx-ft-crash")
    assert crash["interpreter"] == {
        "name": "cp313t", "version": "3.13.5", "key": "3.13.5-3f1a9c2e-disable-gil",
        "configure": ["--disable-gil"], "free_threaded": True, "sanitizer": None,
        "source": "debian:trixie", "full_version": "3.13.5",
    }
    (f,) = crash["findings"]
    assert (f["kind"], f["test_id"], f["modes"], f["ratio"], f["signal"]) == (
        "ft-crash", "tests/test_grow.py::test_concurrent_append", [0], "1/1", 11)
    assert "Fatal Python error: Segmentation fault" in f["excerpt"]
    assert f["reproduce"].startswith("cd src && PYTHON_GIL=0 ")
    ph = {p["name"]: p for p in crash["phases"]}
    assert ph["plain-gil0"]["outcome"] == "crashed" and ph["plain-gil0"]["signal"] == 11
    assert ph["plain-gil1"]["outcome"] == "ok"
    assert crash["duration"] == pytest.approx(sum(p["duration"] for p in crash["phases"]))
    assert "work/cp313t--fx-ft-crash/logs/plain-gil0.log" in crash["logs"]
    meta = rep["meta"]
    assert meta["matrix_digest"] == "d1" and meta["backends"] == ["local"]
    assert meta["started"] == "2026-12-03T08:10:00Z" and meta["finished"] == "2026-12-03T08:22:30Z"
    unsafe = next(p for p in rep["packages"] if p["name"] == "fx-all-unsafe")
    assert unsafe["verdict_label"] == "compatible (low thread coverage: 0/8 tests in threads)"
    msgpack = next(p for p in rep["packages"] if p["name"] == "msgpack")
    assert msgpack["links"] == ["https://github.com/msgpack/msgpack-python/issues/613"]
    assert msgpack["wheel"]["installed"] == "built from sdist"


def test_findings_sorted_most_severe_first():
    d = json.loads((DATA / "hostile/results/cp313t--evil.json").read_text())
    d["findings"] = list(reversed(d["findings"]))
    rep = aggregate.build_report([JobResult.from_dict(d)], meta={})
    assert [f["kind"] for f in rep["packages"][0]["findings"]] == ["ft-race", "no-thread-coverage"]


def test_unsafe_log_paths_are_dropped():
    d = json.loads((DATA / "run1/results/cp313t--attrs.json").read_text())
    d["phases"][0]["log"] = "../../../etc/passwd"
    d["phases"][1]["log"] = "/etc/passwd"
    rep = aggregate.build_report([JobResult.from_dict(d)], meta={})
    p = rep["packages"][0]
    assert p["phases"][0]["log"] == "" and p["phases"][1]["log"] == ""
    assert all(not lp.startswith(("/", "..")) for lp in p["logs"])


def test_three_shards_merge_to_the_unsharded_report(tmp_path):
    files = sorted((DATA / "run1" / "results").glob("*.json"))
    shards = [tmp_path / f"shard{i}" for i in range(3)]
    for i, f in enumerate(files):
        (shards[i % 3] / "results").mkdir(parents=True, exist_ok=True)
        shutil.copy(f, shards[i % 3] / "results" / f.name)
    merged, problems = aggregate.load_results(list(reversed(shards)))
    assert problems == []
    whole = run1_report(expected_jobs=list(EXPECTED_VERDICTS))
    parts = aggregate.build_report(merged, meta={"matrix_digest": "d1"},
                                   expected_jobs=list(EXPECTED_VERDICTS))
    assert json.dumps(parts, sort_keys=True) == json.dumps(whole, sort_keys=True)
    lost = aggregate.build_report(merged[1:], meta={}, expected_jobs=list(EXPECTED_VERDICTS))
    assert lost["missing"] == [merged[0].job_id]


def test_copy_logs_brings_linked_logs_into_a_new_out_dir(tmp_path):
    rep = run1_report()
    n = aggregate.copy_logs(rep, [DATA / "run1"], tmp_path)
    on_disk = {str(p.relative_to(DATA / "run1")) for p in (DATA / "run1" / "work").rglob("*.log")}
    assert n == len(on_disk)
    for rel in on_disk:
        assert (tmp_path / rel).read_bytes() == (DATA / "run1" / rel).read_bytes()
    assert aggregate.copy_logs(rep, [DATA / "run1"], tmp_path) == 0  # already there


def test_per_test_outcomes_are_kept_only_when_asked(tmp_path):
    d = json.loads((DATA / "run1/results/cp313t--fx-race.json").read_text())
    d["phases"][2]["tests"] = {"tests/test_buf.py::test_shared_buffer": {
        "outcome": "failed", "message": "AssertionError", "parallel": True}}
    write_json_atomic(tmp_path / "results" / "x.json", d)
    (lean,), _ = aggregate.load_results([tmp_path])
    (full,), _ = aggregate.load_results([tmp_path], tests=True)
    assert full.to_dict() == JobResult.from_dict(d).to_dict()
    assert full.phases[2].tests["tests/test_buf.py::test_shared_buffer"].outcome == "failed"
    assert all(not ph.tests for ph in lean.phases)
    assert lean.to_dict() == {**full.to_dict(), "phases": [
        {**ph.to_dict(), "tests": {}} for ph in full.phases]}
    assert aggregate.build_report([lean], meta={}) == aggregate.build_report([full], meta={})


def test_safe_log_fast_path_agrees_with_the_slow_one():
    for path, want in [("work/j/logs/a.log", "work/j/logs/a.log"), ("./a", "a"), ("a/./b", "a/b"),
                       ("a//b", "a/b"), ("a/", "a"), ("a/.", "a"), (".", ""), ("a/../b", ""),
                       ("..", ""), ("/a", ""), ("c:/a", ""), ("a\\b", ""), ("a..b/c", "a..b/c")]:
        assert aggregate._safe_log(path) == want, path


def test_a_row_per_package_a_cell_per_interpreter_and_what_differs():
    rep = run1_report()
    assert [c["name"] for c in rep["interpreters"]] == ["cp313t", "cp31315t"]  # 3.13.5 first
    assert rep["meta"]["interpreters"] == ["cp313t", "cp31315t"]
    first, second = rep["interpreters"]
    assert (first["label"], first["source"], first["jobs"]) == ("3.13.5t", "debian:trixie", 12)
    assert (second["label"], second["source"], second["jobs"]) == ("3.13.15t", "debian:forky", 3)
    rows = {r["name"]: r for r in rep["table"]}
    assert len(rep["table"]) == 12 and len(rep["packages"]) == rep["meta"]["jobs"] == 15
    assert [r["name"] for r in rep["table"]] == list(dict.fromkeys(p["name"] for p in rep["packages"]))
    race = rows["fx-race"]
    assert race["cells"] == {
        "cp313t": {"verdict": "ft-race", "qualifier": "", "version": "0.1",
                   "job_id": "cp313t--fx-race"},
        "cp31315t": {"verdict": "compatible", "qualifier": "", "version": "0.1",
                     "job_id": "cp31315t--fx-race"}}
    assert list(race["cells"]) == ["cp313t", "cp31315t"]  # column order
    assert race["verdict"] == "ft-race"  # the most severe cell: what the summary counts
    assert race["across"] == "ft-race on 3.13.5t, compatible on 3.13.15t"
    assert rows["msgpack"]["across"] == "" and len(rows["msgpack"]["cells"]) == 2
    assert rows["fx-crash"]["across"] == "" and list(rows["fx-crash"]["cells"]) == ["cp313t"]
    # the summary counts packages (12 rows), not jobs (15): fx-race once, as ft-race
    assert sum(rep["summary"].values()) == 12
    assert rep["summary"]["ft-race"] == 1 and rep["summary"]["compatible"] == 2
    assert rep["summary"]["gil-reenabled"] == 1


def test_across_groups_interpreters_by_verdict_in_column_order():
    cols = [{"name": n, "label": n} for n in ("a", "b", "c")]
    cells = {"c": {"verdict": "compatible"}, "a": {"verdict": "build-failure"},
             "b": {"verdict": "compatible"}}
    assert aggregate.across(cells, cols) == "build-failure on a, compatible on b and c"
    assert aggregate.across({"a": {"verdict": "hang"}, "c": {"verdict": "hang"}}, cols) == ""


def test_columns_labelled_by_version_or_by_name_when_two_share_one():
    results, _ = aggregate.load_results([DATA / "run1"])
    d = json.loads((DATA / "run1/results/cp313t--attrs.json").read_text())
    d["job_id"], d["interpreter"]["name"] = "tsan--attrs", "tsan"
    d["interpreter"]["sanitizer"] = "thread"
    e = json.loads((DATA / "run1/results/cp313t--attrs.json").read_text())
    e["job_id"], e["interpreter"]["name"] = "again--attrs", "again"
    rep = aggregate.build_report([*results, JobResult.from_dict(d), JobResult.from_dict(e)],
                                 meta={})
    assert [(c["name"], c["label"]) for c in rep["interpreters"]] == [
        ("again", "again"), ("cp313t", "cp313t"), ("tsan", "3.13.5t+thread"),
        ("cp31315t", "3.13.15t")]
    validator().validate(rep)


def test_hostile_result_files_are_skipped_with_a_reason_and_every_output_written(tmp_path):
    # issue #17: package code can write into its workspace and a shard's artifact can be anything
    import math
    import os
    import shutil

    from harness import render

    res = tmp_path / "out" / "results"
    res.mkdir(parents=True)
    good = sorted((DATA / "run1" / "results").glob("*.json"))[0]
    shutil.copy(good, res / good.name)
    base = json.loads(good.read_text())

    def variant(name, change):
        d = json.loads(json.dumps(base))
        change(d)
        d["job_id"] = d["job_id"] + "-" + name if isinstance(d["job_id"], str) else d["job_id"]
        (res / f"{name}.json").write_text(json.dumps(d))

    variant("duration-string", lambda d: d["phases"][0].update(duration="12s"))
    variant("duration-nan", lambda d: d["phases"][0].update(duration=math.nan))
    variant("metadata-list", lambda d: d.update(metadata=["x"]))
    variant("job-id-int", lambda d: d.update(job_id=7))
    variant("finding-kind", lambda d: d.update(findings=[{"kind": "pwned", "message": "x"}]))
    (res / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    os.mkfifo(res / "fifo.json")
    (res / "zero.json").symlink_to("/dev/zero")
    outside = tmp_path / "elsewhere.json"
    shutil.copy(good, outside)
    (res / "outside.json").symlink_to(outside)

    results, problems = aggregate.load_results([tmp_path / "out"])
    assert [r.job_id for r in results] == [base["job_id"]]
    why = {Path(p.split(":", 1)[0]).name: p for p in problems}
    assert set(why) == {"duration-string.json", "duration-nan.json", "metadata-list.json",
                        "job-id-int.json", "finding-kind.json", "deep.json", "fifo.json",
                        "zero.json", "outside.json"}
    assert "not a regular file" in why["fifo.json"] and "skipped:" in why["zero.json"]
    assert "outside its results dir" in why["outside.json"]
    assert "nested too deeply" in why["deep.json"] or "not valid JSON" in why["deep.json"]
    assert all("\n" not in p for p in problems)  # one line each
    report = aggregate.build_report(results, meta={})
    written = render.write_all(report, tmp_path / "out")
    assert {p.name for p in written} >= {"report.json", "report.md", "junit.xml", "index.html"}


def _shards(tmp_path: Path, n: int = 3) -> list[Path]:
    """run1 split into ``n`` shard output dirs, each with its own jobs' results and logs."""
    files = sorted((DATA / "run1" / "results").glob("*.json"))
    shards = [tmp_path / f"shard-{i}" for i in range(n)]
    for i, f in enumerate(files):
        d = shards[i % n]
        (d / "results").mkdir(parents=True, exist_ok=True)
        shutil.copy(f, d / "results" / f.name)
        work = DATA / "run1" / "work" / f.stem
        if work.is_dir():
            shutil.copytree(work, d / "work" / f.stem)
    return shards


def test_a_merged_report_says_when_the_tests_ran_not_when_it_merged(tmp_path):
    # issue #16: `report shard-*/` stamped the merge time as the run's start and end
    from tests.conftest import cli

    shards = _shards(tmp_path)
    merged = tmp_path / "merged"
    r = cli("report", *map(str, shards), "--out", str(merged))
    assert r.returncode == 0, r.stderr
    meta = json.loads((merged / "report.json").read_text())["meta"]
    assert meta["started"] == "2026-12-03T08:10:00Z"  # the earliest result's start
    assert meta["finished"] == "2026-12-03T08:22:30Z"  # the latest result's end
    assert meta["generated"] > "2026-12-04"  # when the merge ran, kept apart
    assert "2026-12-03T08:10:00Z → 2026-12-03T08:22:30Z" in (merged / "report.md").read_text()
    assert json.loads((merged / "site/history.json").read_text())["runs"][-1]["id"] == \
        "2026-12-03T08:22:30Z"  # re-rendering the same results is the same run
    validator().validate(json.loads((merged / "report.json").read_text()))
    # the merged site stands alone: the shards' logs are in it
    assert (merged / "site/logs/cp313t--fx-ft-crash/plain-gil0.log.txt").is_file()
    from tests.unit.test_site_links import check_site

    assert check_site(merged / "site") == []


def test_run_times_compare_as_times_and_skip_what_is_not_one(tmp_path):
    results, _ = aggregate.load_results([DATA / "run1"])
    a = dataclasses.replace(results[0], started="2026-12-03T09:00:00+01:00",
                            finished="2026-12-03T10:30:00+01:00")  # 08:00-09:30Z
    b = dataclasses.replace(results[1], started="2026-12-03T08:30:00Z", finished="2026-12-03T09:00:00Z")
    c = dataclasses.replace(results[2], started="not a time", finished="")
    assert aggregate.run_times([a, b, c]) == ("2026-12-03T09:00:00+01:00", "2026-12-03T10:30:00+01:00")
    assert aggregate.run_times([c]) == ("", "")
    rep = aggregate.build_report([c], meta={"started": "2026-12-04T01:00:00Z",
                                            "finished": "2026-12-04T01:00:00Z"})
    assert rep["meta"]["started"] == rep["meta"]["finished"] == "2026-12-04T01:00:00Z"
    rep = aggregate.build_report([a, b], meta={"started": "2026-12-04T01:00:00Z",
                                               "finished": "2026-12-04T01:00:05Z"})
    assert (rep["meta"]["started"], rep["meta"]["finished"], rep["meta"]["generated"]) == (
        "2026-12-03T09:00:00+01:00", "2026-12-03T10:30:00+01:00", "2026-12-04T01:00:05Z")


def test_copy_logs_never_follows_a_planted_link(tmp_path):
    shard = _shards(tmp_path, 1)[0]
    secret = tmp_path / "host-secret"
    secret.write_text("HOST SECRET\n")
    log = shard / "work/cp313t--fx-crash/logs/plain-gil0.log"
    log.unlink()
    log.symlink_to(secret)
    logs = shard / "work/cp313t--fx-race/logs"
    shutil.move(logs, tmp_path / "elsewhere")
    logs.symlink_to(tmp_path / "elsewhere")
    out = tmp_path / "merged"
    assert aggregate.copy_logs(run1_report(), [shard], out) > 0
    assert not (out / "work/cp313t--fx-crash/logs/plain-gil0.log").exists()
    assert not (out / "work/cp313t--fx-race").exists()
    assert (out / "work/cp313t--fx-crash/logs/probe.log").is_file()
