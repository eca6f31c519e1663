"""harness.results.aggregate: building the report from results, report.json's schema, shard merging.

(Reading the result files is harness.results.load's: tests/unit/results/test_load.py.)"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from harness.core.model import VERDICTS, JobResult
from harness.results import aggregate
from harness.results.load import load_results
from harness.results.report import REPORT_SCHEMA, Cell, Column, CompatReport
from tests.data.report.shared import EXPECTED_VERDICTS

DATA = Path(__file__).resolve().parents[2] / "data" / "report"
SCHEMA = json.loads((Path(__file__).resolve().parents[3] / "harness" / "schema" / "report.schema.json").read_text())


def validator() -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    return jsonschema.Draft202012Validator(SCHEMA)


def run1_report(**kw) -> CompatReport:
    results, problems = load_results([DATA / "run1"])
    assert problems == []
    return aggregate.build_report(results, meta={"matrix_digest": "d1"}, **kw)


def test_report_validates_against_schema_with_previous_and_missing():
    r0, _ = load_results([DATA / "run0"])
    old = aggregate.build_report(r0, meta={})
    rep = run1_report(previous=old, expected_jobs=[*EXPECTED_VERDICTS, "cp313t--lost"])
    validator().validate(rep.to_dict())
    validator().validate(old.to_dict())
    assert rep.missing == ("cp313t--lost",)
    assert rep.changes  # run0 differs from run1
    assert rep.to_dict()["changes"] == [c.to_dict() for c in rep.changes]


def test_schema_rejects_what_it_should():
    v = validator()
    rep = run1_report().to_dict()
    assert v.is_valid(rep)
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
    typed = run1_report()
    assert typed.schema == REPORT_SCHEMA
    rep = typed.to_dict()  # report.json
    assert rep["schema"] == REPORT_SCHEMA
    on_first = [v for j, v in EXPECTED_VERDICTS.items() if j.startswith("cp313t--")]
    assert rep["summary"] == {v: on_first.count(v) for v in VERDICTS}  # see the table test
    assert list(rep["summary"]) == list(VERDICTS)
    names = [p["name"] for p in rep["packages"]]
    assert names == sorted(names, key=str.lower)
    crash = next(p for p in rep["packages"] if p["job_id"] == "cp313t--fx-ft-crash")
    assert crash["interpreter"] == {
        "name": "cp313t",
        "version": "3.13.5",
        "key": "3.13.5-3f1a9c2e-disable-gil",
        "configure": ["--disable-gil"],
        "free_threaded": True,
        "sanitizer": None,
        "source": "debian:trixie",
        "full_version": "3.13.5",
    }
    (f,) = crash["findings"]
    assert (f["kind"], f["test_id"], f["modes"], f["ratio"], f["signal"]) == (
        "ft-crash",
        "tests/test_grow.py::test_concurrent_append",
        [0],
        "1/1",
        11,
    )
    assert "Fatal Python error: Segmentation fault" in f["excerpt"]
    assert f["reproduce"].startswith("cd src && PYTHONFAULTHANDLER=1 PYTHON_GIL=0 ")
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
    # the typed values say the same
    entry = next(p for p in typed.packages if p.job_id == "cp313t--fx-ft-crash")
    assert entry.findings[0].signal == 11 and entry.phases[2].outcome == "crashed"
    assert entry.logs == crash["logs"] and entry.verdict_label == "ft-crash"
    assert typed.meta.backends == ("local",) and typed.meta.matrix_digest == "d1"


def test_findings_sorted_most_severe_first():
    d = json.loads((DATA / "hostile/results/cp313t--evil.json").read_text())
    d["findings"] = list(reversed(d["findings"]))
    rep = aggregate.build_report([JobResult.from_dict(d)], meta={})
    assert [f.kind for f in rep.packages[0].findings] == ["ft-race", "no-thread-coverage"]
    assert [f["kind"] for f in rep.to_dict()["packages"][0]["findings"]] == ["ft-race", "no-thread-coverage"]


def test_unsafe_log_paths_are_dropped():
    d = json.loads((DATA / "run1/results/cp313t--attrs.json").read_text())
    d["phases"][0]["log"] = "../../../etc/passwd"
    d["phases"][1]["log"] = "/etc/passwd"
    rep = aggregate.build_report([JobResult.from_dict(d)], meta={})
    p = rep.packages[0]
    assert p.phases[0].log == "" and p.phases[1].log == ""
    assert p.logs and all(not lp.startswith(("/", "..")) for lp in p.logs)


def test_three_shards_merge_to_the_unsharded_report(tmp_path):
    files = sorted((DATA / "run1" / "results").glob("*.json"))
    shards = [tmp_path / f"shard{i}" for i in range(3)]
    for i, f in enumerate(files):
        (shards[i % 3] / "results").mkdir(parents=True, exist_ok=True)
        shutil.copy(f, shards[i % 3] / "results" / f.name)
    merged, problems = load_results(list(reversed(shards)))
    assert problems == []
    whole = run1_report(expected_jobs=list(EXPECTED_VERDICTS))
    parts = aggregate.build_report(merged, meta={"matrix_digest": "d1"}, expected_jobs=list(EXPECTED_VERDICTS))
    assert parts == whole
    assert json.dumps(parts.to_dict(), sort_keys=True) == json.dumps(whole.to_dict(), sort_keys=True)
    lost = aggregate.build_report(merged[1:], meta={}, expected_jobs=list(EXPECTED_VERDICTS))
    assert lost.missing == (merged[0].job_id,)


def test_copy_logs_brings_linked_logs_into_a_new_out_dir(tmp_path):
    rep = run1_report()
    n = aggregate.copy_logs(rep, [DATA / "run1"], tmp_path)
    on_disk = {str(p.relative_to(DATA / "run1")) for p in (DATA / "run1" / "work").rglob("*.log")}
    assert n == len(on_disk)
    for rel in on_disk:
        assert (tmp_path / rel).read_bytes() == (DATA / "run1" / rel).read_bytes()
    assert aggregate.copy_logs(rep, [DATA / "run1"], tmp_path) == 0  # already there


def test_safe_log_fast_path_agrees_with_the_slow_one():
    for path, want in [
        ("work/j/logs/a.log", "work/j/logs/a.log"),
        ("./a", "a"),
        ("a/./b", "a/b"),
        ("a//b", "a/b"),
        ("a/", "a"),
        ("a/.", "a"),
        (".", ""),
        ("a/../b", ""),
        ("..", ""),
        ("/a", ""),
        ("c:/a", ""),
        ("a\\b", ""),
        ("a..b/c", "a..b/c"),
    ]:
        assert aggregate._safe_log(path) == want, path


def test_a_row_per_package_a_cell_per_interpreter_and_what_differs():
    rep = run1_report()
    assert [c.name for c in rep.interpreters] == ["cp313t", "cp31315t"]  # 3.13.5 first
    assert rep.meta.interpreters == ("cp313t", "cp31315t")
    first, second = rep.interpreters
    assert (first.label, first.source, first.jobs) == ("3.13.5t", "debian:trixie", 12)
    assert (second.label, second.source, second.jobs) == ("3.13.15t", "debian:forky", 3)
    rows = {r.name: r for r in rep.table}
    assert len(rep.table) == 12 and len(rep.packages) == rep.meta.jobs == 15
    assert [r.name for r in rep.table] == list(dict.fromkeys(p.name for p in rep.packages))
    race = rows["fx-race"]
    assert race.cells == {
        "cp313t": Cell(
            verdict="ft-race",
            version="0.1",
            job_id="cp313t--fx-race",
            answer="ft-problem",
            checked=10,
            tests=10,
            wheel="n/a",
        ),
        "cp31315t": Cell(
            verdict="compatible",
            version="0.1",
            job_id="cp31315t--fx-race",
            answer="no-ft-problem",
            checked=10,
            tests=10,
            wheel="n/a",
        ),
    }
    assert race.answer == "ft-problem"  # the most serious of the cells' answers
    assert list(race.cells) == ["cp313t", "cp31315t"]  # column order
    assert race.verdict == "ft-race"  # the most severe cell: what the summary counts
    # 2/3 threaded suite runs against 0/3: not a difference (results.flaky), said with both counts
    assert race.across == (
        "flaky: `tests/test_buf.py::test_shared_buffer` 2/3 GIL-off runs on 3.13.5t, 0/3 on 3.13.15t (one-sided "
        "Fisher p = 0.20 > 0.05): not a difference the runs hold: ft-race on 3.13.5t, compatible on 3.13.15t"
    )
    assert race.cell("cp313t") is race.cells["cp313t"]
    assert rows["msgpack"].across == "" and len(rows["msgpack"].cells) == 2
    assert rows["fx-crash"].across == "" and list(rows["fx-crash"].cells) == ["cp313t"]
    assert rows["fx-crash"].cell("cp31315t") is None  # did not run there
    # the summary counts packages (12 rows), not jobs (15): fx-race once, as ft-race
    assert sum(rep.summary.values()) == 12
    assert rep.summary["ft-race"] == 1 and rep.summary["compatible"] == 2
    assert rep.summary["gil-reenabled"] == 1
    # report.json: a cell is its four keys, a column its eight
    d = rep.to_dict()
    assert next(t for t in d["table"] if t["name"] == "fx-race")["cells"]["cp313t"] == {
        "verdict": "ft-race",
        "qualifier": "",
        "version": "0.1",
        "job_id": "cp313t--fx-race",
        "answer": "ft-problem",
        "caveat": "",
        "cause": "",
        "reach": {"checked": 10, "tests": 10},
        "wheel": "n/a",
    }  # schema 10: the answer, the reach of the check, the wheel
    assert d["interpreters"][0] == {
        "name": "cp313t",
        "version": "3.13.5",
        "full_version": "3.13.5",
        "source": "debian:trixie",
        "configure": ["--disable-gil"],
        "sanitizer": None,
        "jobs": 12,
        "label": "3.13.5t",
    }


def test_across_groups_interpreters_by_verdict_in_column_order():
    cols = [Column(name=n, label=n) for n in ("a", "b", "c")]
    cells = {"c": Cell(verdict="compatible"), "a": Cell(verdict="build-failure"), "b": Cell(verdict="compatible")}
    assert aggregate.across(cells, cols) == "build-failure on a, compatible on b and c"
    assert aggregate.across({"a": Cell(verdict="hang"), "c": Cell(verdict="hang")}, cols) == ""


def test_columns_labelled_by_version_or_by_name_when_two_share_one():
    results, _ = load_results([DATA / "run1"])
    d = json.loads((DATA / "run1/results/cp313t--attrs.json").read_text())
    d["job_id"], d["interpreter"]["name"] = "tsan--attrs", "tsan"
    d["interpreter"]["sanitizer"] = "thread"
    e = json.loads((DATA / "run1/results/cp313t--attrs.json").read_text())
    e["job_id"], e["interpreter"]["name"] = "again--attrs", "again"
    rep = aggregate.build_report([*results, JobResult.from_dict(d), JobResult.from_dict(e)], meta={})
    assert [(c.name, c.label) for c in rep.interpreters] == [
        ("again", "again"),
        ("cp313t", "cp313t"),
        ("tsan", "3.13.5t+thread"),
        ("cp31315t", "3.13.15t"),
    ]
    validator().validate(rep.to_dict())


def test_columns_are_labelled_by_minor_version_when_it_is_theirs_alone():
    """One column per minor version (the published matrix): ``3.13t``, ``3.14t``, ``3.15t``,
    the exact version and source kept in the column (issue #32)."""
    base = json.loads((DATA / "run1/results/cp313t--attrs.json").read_text())
    results = []
    for name, version, source in (
        ("py315", "3.15.0", "python:python3.15t"),
        ("py313", "3.13.5", "debian:trixie"),
        ("py314", "3.14.7", "url:https://www.python.org/x.tar.xz"),
    ):
        d = json.loads(json.dumps(base))
        d["job_id"] = f"{name}--attrs"
        d["interpreter"].update(name=name, version=version, full_version=version, source=source)
        results.append(JobResult.from_dict(d))
    rep = aggregate.build_report(results, meta={})
    assert [(c.label, c.full_version, c.source) for c in rep.interpreters] == [
        ("3.13t", "3.13.5", "debian:trixie"),
        ("3.14t", "3.14.7", "url:https://www.python.org/x.tar.xz"),
        ("3.15t", "3.15.0", "python:python3.15t"),
    ]
    assert rep.table[0].across == ""


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
    assert "3 Dec 2026, 08:10–08:22 UTC" in (merged / "report.md").read_text()  # human dates
    assert (
        json.loads((merged / "site/history.json").read_text())["runs"][-1]["id"] == "2026-12-03T08:22:30Z"
    )  # re-rendering the same results is the same run
    validator().validate(json.loads((merged / "report.json").read_text()))
    # the merged site stands alone: the shards' logs are in it
    assert (merged / "site/logs/cp313t--fx-ft-crash/plain-gil0.log.txt").is_file()
    from tests.unit.render.test_site_links import check_site

    assert check_site(merged / "site") == []


def test_run_times_compare_as_times_and_skip_what_is_not_one(tmp_path):
    results, _ = load_results([DATA / "run1"])
    a = dataclasses.replace(
        results[0], started="2026-12-03T09:00:00+01:00", finished="2026-12-03T10:30:00+01:00"
    )  # 08:00-09:30Z
    b = dataclasses.replace(results[1], started="2026-12-03T08:30:00Z", finished="2026-12-03T09:00:00Z")
    c = dataclasses.replace(results[2], started="not a time", finished="")
    assert aggregate.run_times([a, b, c]) == ("2026-12-03T09:00:00+01:00", "2026-12-03T10:30:00+01:00")
    assert aggregate.run_times([c]) == ("", "")
    rep = aggregate.build_report([c], meta={"started": "2026-12-04T01:00:00Z", "finished": "2026-12-04T01:00:00Z"})
    assert rep.meta.started == rep.meta.finished == "2026-12-04T01:00:00Z"
    assert rep.meta.generated == "" and "generated" not in rep.to_dict()["meta"]
    rep = aggregate.build_report([a, b], meta={"started": "2026-12-04T01:00:00Z", "finished": "2026-12-04T01:00:05Z"})
    assert (rep.meta.started, rep.meta.finished, rep.meta.generated) == (
        "2026-12-03T09:00:00+01:00",
        "2026-12-03T10:30:00+01:00",
        "2026-12-04T01:00:05Z",
    )


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
