"""Issue #31, "one place each": values that had two readers (or two computations) that
disagreed now have one, and these tests hold the case where they disagreed."""

from __future__ import annotations

import json
from pathlib import Path

from harness.core.model import Finding, InterpreterInfo, JobResult
from harness.results.load import load_results
from harness.results.report import JobEntry
from harness.util.safefiles import write_json_atomic

# ----------------------------------------------------------------------------- Finding


def _result_with(finding: dict) -> dict:
    res = JobResult(
        job_id="ft--p",
        key="k",
        package="p",
        verdict="crash",
        interpreter=InterpreterInfo(name="ft", version="3.13.5", key="ik"),
        findings=(Finding(kind="crash", modes=(0,), message="m"),),
    ).to_dict()
    res["findings"] = [{**res["findings"][0], **finding}]
    return res


def test_a_finding_with_modes_of_the_wrong_type_reads_the_same_from_a_result_and_a_report(tmp_path: Path) -> None:
    # before: the result reader dropped the whole job on `"modes": 3`, the report reader read ()
    bad = {"modes": 3, "confirmed": ["x"]}
    write_json_atomic(tmp_path / "results" / "ft--p.json", _result_with(bad))
    results, problems = load_results([tmp_path])
    assert problems == [] and len(results) == 1
    (f,) = results[0].findings
    assert f.modes == () and f.confirmed == {} and f.kind == "crash"
    entry = JobEntry.from_dict({"job_id": "ft--p", "verdict": "crash", "findings": [_result_with(bad)["findings"][0]]})
    assert entry.findings == (f,)


def test_a_finding_reads_back_as_it_was_written() -> None:
    f = Finding(kind="ft-crash", test_id="t::x", modes=(0, 1), count=2, runs=3, confirmed={"gil0": "4/5"})
    assert Finding.from_dict(json.loads(json.dumps(f.to_dict()))) == f
    assert JobEntry.from_dict({"job_id": "j", "findings": [f.to_dict()]}).findings == (f,)


# ----------------------------------------------------------------------------- thread coverage


def test_the_least_covered_mode_is_the_same_in_the_qualifier_and_on_the_package_page() -> None:
    # 2/8 with the GIL off, 1/4 with it on: 25 % each. Before, the qualifier took the lower
    # mode (2/8) and the page the smaller suite (1/4 (25%)); the GIL off is the one both name now
    from harness.core.evidence import ModeCoverage, least_covered
    from harness.core.jobspec import Settings
    from harness.render.common import coverage_counts, coverage_summary
    from harness.verdict import coverage

    cov = {
        "gil0": ModeCoverage(mode=0, known=True, in_threads=2, total=8),
        "gil1": ModeCoverage(mode=1, known=True, in_threads=1, total=4),
    }
    for order in (cov, dict(reversed(cov.items()))):
        assert least_covered(order) == cov["gil0"]
        assert (
            coverage.qualifier(order, Settings(min_parallel_fraction=0.5))
            == "low thread coverage: 2/8 tests in threads"
        )
        assert coverage_counts(order) == (2, 8) and coverage_summary(order) == "2/8 (25%)"


def test_least_covered_skips_what_a_result_file_got_wrong() -> None:
    from harness.core.evidence import ModeCoverage, least_covered

    bad = {
        "gil0": ModeCoverage(mode=0, known=True, in_threads="2", total=8),  # type: ignore[arg-type]
        "gil1": ModeCoverage(mode=1, known=True, in_threads=True, total=4),  # type: ignore[arg-type]
        "x": ModeCoverage(mode="x", known=True, in_threads=1, total=0),
    }  # type: ignore[arg-type]
    assert least_covered(bad) is None
    ok = ModeCoverage(mode="?", known=True, in_threads=3, total=4)  # type: ignore[arg-type]
    assert least_covered({**bad, "y": ok}) == ok


# ----------------------------------------------------------------------------- report.json


def _in_thread(fn, *args):
    """fn(*args)'s exception, or None; fails when it does not return within 10 s (a FIFO read
    without the guard blocks for ever)."""
    import threading

    got: list[BaseException | None] = []

    def run() -> None:
        try:
            fn(*args)
            got.append(None)
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            got.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(10)
    assert got, f"{fn.__qualname__} did not return: it read a FIFO unguarded"
    return got[0]


def test_every_report_json_reader_is_the_guarded_one(tmp_path: Path) -> None:
    # plan --durations read report.json with read_text and its own checks; reproduce too; now
    # each goes through load.read_report (load_json's guards, check_report's checks)
    import os

    from harness.cli import reproduce
    from harness.config import estimate
    from harness.core.errors import ConfigError
    from harness.results.load import read_report

    assert reproduce.read_report is read_report
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    for reader in (estimate.durations_from_report, lambda p: read_report(p, "the")):
        e = _in_thread(reader, fifo)
        assert isinstance(e, ConfigError) and "not a regular file" in str(e) and str(fifo) in str(e)
    bogus = tmp_path / "bogus.json"
    bogus.write_text(json.dumps({"packages": [{"job_id": "a--b", "verdict": "fine", "phases": []}]}))
    for reader in (estimate.durations_from_report, lambda p: read_report(p, "the")):
        e = _in_thread(reader, bogus)
        assert isinstance(e, ConfigError) and "'fine', not one of the harness's verdicts" in str(e)
        assert str(e).startswith(f"{bogus}: ")


# ----------------------------------------------------------------------------- test_setup

# the shapes a job writes (harness.testsetup.suitesetup): decided, skipped by a recipe, stopped before
DECIDED = {
    "tests": "tests",
    "tests_from": "inferred",
    "requires": ["hypothesis"],
    "requires_from": "recipe",
    "pytest_args": ["-p", "no:cacheprovider"],
    "pytest_args_from": "recipe + inferred",
    "sources": ["tests dir: tests/"],
    "recipe": {"registry": "r", "used": ["test deps hypothesis"], "not_held": []},
}
SKIPPED = {"recipe": {"registry": "r", "skip": "no 3.15"}, "sources": ["recipe (r): not run on 3.15: no 3.15"]}


def test_a_test_setup_is_one_type_from_the_job_to_the_result_file_to_the_report() -> None:
    # before: a dict built by the job, kept as a dict by JobResult, read by the report's own class
    from harness.core.suiterecord import TestSetup
    from harness.results import aggregate, report
    from harness.testsetup import infer

    assert not hasattr(report, "TestSetup") or report.TestSetup is TestSetup
    assert infer.Inferred is not TestSetup and not hasattr(infer, "TestSetup")
    for shape in (DECIDED, {k: v for k, v in DECIDED.items() if k != "recipe"}, SKIPPED, {}):
        ts = TestSetup.from_dict(shape)
        res = JobResult(
            job_id="ft--p",
            key="k",
            package="p",
            interpreter=InterpreterInfo(name="ft", version="3.13.5", key="ik"),
            test_setup=ts,
        )
        # the result file's bytes as the dict gave them: the same keys, in the same order
        assert json.dumps(res.to_dict()["test_setup"]) == json.dumps(shape)
        assert JobResult.from_dict(json.loads(json.dumps(res.to_dict()))).test_setup == ts
        entry = aggregate._job(res)
        assert entry.test_setup == (ts if shape else None)  # None: not recorded
        # report.json: every field whatever the result had ({} when it had none), read back as it was
        written = json.loads(json.dumps(entry.to_dict()))["test_setup"]
        assert list(written) == ([*DECIDED] if shape else [])
        assert JobEntry.from_dict({"job_id": "j", "test_setup": written}).test_setup == entry.test_setup


def test_a_test_setup_of_the_wrong_shape_reads_the_same_from_a_result_and_a_report(tmp_path: Path) -> None:
    # before: the result reader dropped the job on a non-object test_setup, the report's read it
    # field by field without looking at the types
    for bad, want in (
        ("x", {}),
        (
            {"tests": 3, "requires": ["a", 1], "recipe": [], "extra": 1},
            {"tests_from": "", "requires": ("a",), "recipe": {}},
        ),
    ):
        res = _result_with({})
        res["test_setup"] = bad
        write_json_atomic(tmp_path / "results" / "ft--p.json", res)
        results, problems = load_results([tmp_path])
        assert problems == [] and len(results) == 1
        ts = results[0].test_setup
        assert all(getattr(ts, k) == v for k, v in want.items()) and ts.tests == ""
        entry = JobEntry.from_dict({"job_id": "ft--p", "test_setup": bad})
        assert entry.test_setup == (ts if ts.recorded else None)
