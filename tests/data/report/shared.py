"""Shared by the report tests (import as tests.data.report.shared): reports built from here."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from harness.results import aggregate
from harness.results.load import load_results
from harness.results.report import CompatReport

DATA = Path(__file__).resolve().parent
XSS = "<script>alert(1)</script>"
# the verdict of every result under run1/ (the jobs as decide() wrote them)
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
XSS2 = "</pre><img src=x onerror=alert(1)>"


def load(*names: str) -> list:
    results, problems = load_results([DATA / n for n in names])
    assert problems == []
    return results


def previous() -> CompatReport:
    """run0's report, as a run of the day before (its files carry run1's times; a report's start
    and end are its results', harness.results.aggregate.run_times)."""
    results = [dataclasses.replace(r, started="2026-12-02T07:50:00Z", finished="2026-12-02T08:00:00Z")
               for r in load("run0")]
    return aggregate.build_report(results, meta={})


def full_report(with_previous: bool = True, hostile: bool = True) -> CompatReport:
    results = load("run1", "hostile") if hostile else load("run1")
    return aggregate.build_report(
        results, meta={"matrix_digest": "ab12cd34ef56aa"},
        previous=previous() if with_previous else None,
        expected_jobs=[r.job_id for r in results] + ["cp313t--lost"])


def out_dir(tmp: Path) -> Path:
    """An output dir holding run1's logs, as `ft-harness run` leaves it."""
    out = tmp / "out"
    shutil.copytree(DATA / "run1", out)
    return out
