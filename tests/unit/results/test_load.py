"""harness.results.load: reading result files, naming every file it cannot use, merging shards."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.core.model import READABLE_SCHEMAS, JobResult
from harness.results import aggregate
from harness.results.load import load_results
from harness.util.safefiles import write_json_atomic
from tests.data.report.shared import EXPECTED_VERDICTS

DATA = Path(__file__).resolve().parents[2] / "data" / "report"


def test_load_run_dir_reads_every_result():
    results, problems = load_results([DATA / "run1"])
    assert problems == []
    assert {r.job_id: r.verdict for r in results} == EXPECTED_VERDICTS


def test_load_accepts_the_results_dir_itself():
    a, _ = load_results([DATA / "run1"])
    b, _ = load_results([DATA / "run1" / "results"])
    assert [r.to_dict() for r in a] == [r.to_dict() for r in b]


def test_corrupt_files_are_named_and_left_out():
    results, problems = load_results([DATA / "corrupt"])
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
    results, problems = load_results([tmp_path])
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
        load_results([tmp_path / "a", tmp_path / "b"])
    msg = str(e.value)
    assert "cp313t--fx-race" in msg
    assert str(tmp_path / "a" / "results" / "cp313t--fx-race.json") in msg
    assert str(f) in msg
    assert e.value.return_code == 2


def test_identical_copies_merge_once(tmp_path):
    for n in ("a", "b"):
        shutil.copytree(DATA / "run1" / "results", tmp_path / n / "results")
    results, problems = load_results([tmp_path / "a", tmp_path / "b"])
    assert len(results) == len(EXPECTED_VERDICTS) and problems == []


def test_missing_dir_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="not a directory"):
        load_results([tmp_path / "nope"])


def test_per_test_outcomes_are_kept_only_when_asked(tmp_path):
    d = json.loads((DATA / "run1/results/cp313t--fx-race.json").read_text())
    d["phases"][2]["tests"] = {
        "tests/test_buf.py::test_shared_buffer": {"outcome": "failed", "message": "AssertionError", "parallel": True}
    }
    write_json_atomic(tmp_path / "results" / "cp313t--fx-race.json", d)
    (lean,), _ = load_results([tmp_path])
    (full,), _ = load_results([tmp_path], tests=True)
    assert full.to_dict() == JobResult.from_dict(d).to_dict()
    assert full.phases[2].tests["tests/test_buf.py::test_shared_buffer"].outcome == "failed"
    assert all(not ph.tests for ph in lean.phases)
    assert lean.to_dict() == {**full.to_dict(), "phases": [{**ph.to_dict(), "tests": {}} for ph in full.phases]}
    assert aggregate.build_report([lean], meta={}) == aggregate.build_report([full], meta={})


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

    results, problems = load_results([tmp_path / "out"])
    assert [r.job_id for r in results] == [base["job_id"]]
    why = {Path(p.split(":", 1)[0]).name: p for p in problems}
    assert set(why) == {
        "duration-string.json",
        "duration-nan.json",
        "metadata-list.json",
        "job-id-int.json",
        "finding-kind.json",
        "deep.json",
        "fifo.json",
        "zero.json",
        "outside.json",
    }
    assert "not a regular file" in why["fifo.json"] and "skipped:" in why["zero.json"]
    assert "outside its results dir" in why["outside.json"]
    assert "nested too deeply" in why["deep.json"] or "not valid JSON" in why["deep.json"]
    assert all("\n" not in p for p in problems)  # one line each
    report = aggregate.build_report(results, meta={})
    written = render.write_all(report, tmp_path / "out")
    assert {p.name for p in written} >= {"report.json", "report.md", "junit.xml", "index.html"}


def test_every_field_is_type_checked_and_the_name_must_be_the_job_id(tmp_path):
    """#46: a phase's excerpt as a number, a crash's signal as a string, a count as a list were
    read back and raised later in the verdict rules; now each is named as the file is read."""
    d = json.loads((DATA / "run1/results/cp313t--fx-race.json").read_text())
    cases = {
        "excerpt": ("phases", 1, "excerpt", 7, "phases[1].excerpt: int where str is expected"),
        "counts": ("phases", 0, "counts", {"passed": [1]}, "phases[0].counts['passed']: list"),
        "exit": ("phases", 0, "exit_code", "0", "phases[0].exit_code: str where"),
        "nan": ("phases", 0, "duration", float("nan"), "phases[0].duration: 'nan' is not a finite"),
        "kind": ("phases", 0, "kind", "warmup", "phases[0].kind: 'warmup' is not one of ('install', "),
    }
    for name, (field, i, key, value, why) in cases.items():
        bad = json.loads(json.dumps(d))
        bad[field][i][key] = value
        write_json_atomic(tmp_path / name / "results" / "cp313t--fx-race.json", bad)
        results, problems = load_results([tmp_path / name])
        assert results == [] and len(problems) == 1 and why in problems[0], (name, problems)
    write_json_atomic(tmp_path / "named" / "results" / "cp313t--other.json", d)
    results, problems = load_results([tmp_path / "named"])
    assert results == [] and "refused: it holds job 'cp313t--fx-race'" in problems[0]


def _phase_kinds(x: object) -> set[str]:
    """Every phase kind in a JSON value: the "kind" of each object in a "phases" list."""
    if isinstance(x, dict):
        ph = x.get("phases")
        here = {p["kind"] for p in ph if isinstance(p, dict) and "kind" in p} if isinstance(ph, list) else set()
        return here.union(*(_phase_kinds(v) for v in x.values()))
    return set().union(*(_phase_kinds(v) for v in x)) if isinstance(x, list) else set()


def test_every_stored_phase_kind_is_one_of_the_closed_set():
    """Phase.kind is a closed set (core.model.PhaseKind): the results and reports the tests keep,
    written by every harness version since, name no other."""
    from typing import get_args

    from harness.core.model import PhaseKind

    seen: set[str] = set()
    for f in (DATA.parent).rglob("*.json"):
        try:
            seen |= _phase_kinds(json.loads(f.read_text()))
        except (ValueError, UnicodeDecodeError):
            continue  # the corrupt fixtures
    assert seen and seen <= set(get_args(PhaseKind)), seen - set(get_args(PhaseKind))
