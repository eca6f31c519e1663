"""The failing per-test outcomes a result keeps (#56: ``result_failing_tests``): a suite of
many failing tests used to keep every one of them, so its result grew past what ``report``
reads (load.MAX_RESULT_BYTES) and the job dropped out of the report.  Now at most the limit is
kept, the tests findings come from first, each phase counts what it left out, and the report
says how many more there were."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import jsonschema

from harness.core import limits
from harness.core.evidence import Crash
from harness.core.model import JobResult, Phase, TestCase, read_result
from harness.render.markdown import render
from harness.results import aggregate
from harness.results.load import MAX_RESULT_BYTES, load_results
from harness.util.safefiles import write_json_atomic

ROOT = Path(__file__).resolve().parents[3]
RUN1 = ROOT / "tests" / "data" / "report" / "run1" / "results"
SCHEMA = json.loads((ROOT / "harness" / "schema" / "report.schema.json").read_text())


def _phase(name: str, outcomes: dict[str, str], **kw) -> Phase:
    counts: dict[str, int] = {}
    for o in outcomes.values():
        counts[o] = counts.get(o, 0) + 1
    tests = {t: TestCase(outcome=o, message=f"{t}: AssertionError") for t, o in outcomes.items()}
    return Phase(name=name, kind="threads", tests=tests, counts=counts, excerpt="=== summary ===", **kw)


def _suite() -> tuple[Phase, ...]:
    """30 tests failing alike in both runs; r2 failing with the GIL off only (a race), listed
    last; c1 crashing with the GIL off (named by the phase's crash); p0 passing everywhere."""
    base = {f"f{i:02}": "failed" for i in range(30)}
    gil0 = {"p0": "passed", **base, "c1": "error", "r2": "failed"}
    gil1 = {"p0": "passed", **base, "c1": "passed", "r2": "passed"}
    return (
        _phase("threads-gil0-r1", gil0, gil=0, crashes=(Crash(test_id="c1", signal=11),)),
        _phase("threads-gil1-r1", gil1, gil=1),
    )


def test_the_tests_findings_come_from_are_kept_first_and_the_rest_counted(monkeypatch):
    monkeypatch.setenv("FT_HARNESS_LIMIT_RESULT_FAILING_TESTS", "12")
    phases = _suite()
    got = limits.cap_result_tests(phases)
    failing = [sum(tc.outcome not in ("passed", "skipped") for tc in p.tests.values()) for p in got]
    assert sum(failing) <= 12
    for p in got:  # kept whole across phases: the crash's test, the race's, then the first alike
        assert {"c1", "r2", "p0", "f00", "f01", "f02", "f03", "f04"} <= set(p.tests)
        assert "f05" not in p.tests and "f29" not in p.tests
    assert got[0].tests["r2"].outcome == "failed" and got[1].tests["r2"].outcome == "passed"
    assert [p.failing_not_kept for p in got] == [25, 25]
    assert [p.counts for p in got] == [p.counts for p in phases]  # the counts stay whole
    assert "limit result_failing_tests (12) exceeded: 25 of this phase's failing per-test outcomes" in got[0].excerpt
    monkeypatch.setenv("FT_HARNESS_LIMIT_RESULT_FAILING_TESTS", str(sum(failing) + 50))
    assert limits.cap_result_tests(phases) == phases


def test_the_count_survives_the_result_file_and_is_only_written_when_some_were_left_out(monkeypatch):
    monkeypatch.setenv("FT_HARNESS_LIMIT_RESULT_FAILING_TESTS", "12")
    got = limits.cap_result_tests(_suite())
    assert Phase.from_dict(json.loads(json.dumps(got[0].to_dict()))).failing_not_kept == 25
    assert "failing_not_kept" not in _suite()[0].to_dict()  # the shape of every other result: unchanged


def _huge(job: JobResult, n: int) -> JobResult:
    """``job`` with a threads phase of ``n`` failing tests, each with a 1 kB message."""
    tests = {f"tests/test_x.py::test_{i}": TestCase(outcome="failed", message="E " + "x" * 1000) for i in range(n)}
    ph = Phase(name="threads-gil0-r1", kind="threads", gil=0, tests=tests, counts={"failed": n}, excerpt="")
    return replace(job, phases=(*job.phases, ph))


def test_a_result_of_100k_failing_tests_stays_in_the_report_and_says_how_many_more(tmp_path):
    job = read_result(RUN1 / "cp313t--attrs.json")
    big = _huge(job, 100_000)
    capped = replace(big, phases=limits.cap_result_tests(big.phases))
    path = tmp_path / "results" / f"{job.job_id}.json"
    write_json_atomic(path, capped.to_dict())
    assert path.stat().st_size < MAX_RESULT_BYTES  # 100 MB uncapped: `report` skipped it
    results, problems = load_results([tmp_path])
    assert problems == [] and [r.job_id for r in results] == [job.job_id]
    default = limits.LIMITS["result_failing_tests"].default
    assert results[0].phases[-1].failing_not_kept == 100_000 - default
    report = aggregate.build_report(results, meta={})
    row = report.packages[0].phases[-1]
    assert row.failing_not_kept == 100_000 - default and row.counts == {"failed": 100_000}
    doc = report.to_dict()
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert doc["packages"][0]["phases"][-1]["failing_not_kept"] == 100_000 - default
    assert all("failing_not_kept" not in p for p in doc["packages"][0]["phases"][:-1])
    md = render(report)
    assert f"` {job.job_id} ` {100_000 - default:,} more not kept" in md


def test_a_report_without_cut_results_says_nothing():
    results, _ = load_results([RUN1.parent])
    md = render(aggregate.build_report(results, meta={}))
    assert "more not kept" not in md
