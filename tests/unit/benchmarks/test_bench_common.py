"""The benchmark's pure helpers: statistics, lower bound, CLI and pip output parsing, tables."""

from __future__ import annotations

import pytest

from benchmarks import report
from benchmarks.common import count_downloads, iso_epoch, lower_bound, parse_cli, ratio, summarize

# Lines copied from a real `python -m harness run` (CI=true) on this machine.
CLI_FIRST = """interpreter cpython3.13t: cache hit (cpython-3.13.5-ft-aa8650c37ad2)
[    0.0s] 3 jobs: 0 already done, 3 to run
[  249.8s] [3/3] cpython3.13t--ft_mixed: compatible (thread coverage unknown) in 97s
3 jobs ran, 0 reused from /tmp/h8/out1/results
wrote /tmp/h8/out1/report.json
summary: 2 compatible, 1 no-tests
"""
# From a real install.log of the harness (pip 25.1.1 on 3.13t): index files and local files.
PIP_LOG = """Processing /opt/pypi/files/pytest-8.4.2-py3-none-any.whl
Collecting pytest-run-parallel==0.10.0
  Downloading pytest_run_parallel-0.10.0-py3-none-any.whl (19 kB)
Processing /opt/pypi/files/pytest_xdist-3.8.0-py3-none-any.whl
Collecting iniconfig>=1 (from pytest==8.4.2)
  Downloading iniconfig-2.3.1-py3-none-any.whl (7.6 kB)
Collecting pluggy<2,>=1.5 (from pytest==8.4.2)
  Using cached pluggy-1.7.0-py3-none-any.whl (27 kB)
"""


def test_summarize_median_and_spread() -> None:
    s = summarize([1.10, 1.00, 1.30])
    assert s["median"] == 1.1 and s["min"] == 1.0 and s["max"] == 1.3 and s["n"] == 3
    assert s["spread"] == pytest.approx(0.3 / 1.1, abs=1e-4)
    assert summarize([])["median"] is None


def test_ratio_guards_zero() -> None:
    assert ratio(3.0, 2.0) == 1.5
    assert ratio(1.0, 0.0) is None


@pytest.mark.parametrize(
    ("times", "workers", "bound"),
    [
        ([10, 10, 10, 10], 2, 20),  # sum / workers
        ([30, 5, 5], 2, 30),  # the longest job
        ([30, 5, 5], 1, 40),
        ([], 2, 0),
    ],
)
def test_lower_bound(times: list[float], workers: int, bound: float) -> None:
    assert lower_bound(times, workers) == bound


def test_lower_bound_needs_a_worker() -> None:
    with pytest.raises(ValueError):
        lower_bound([1.0], 0)


def test_parse_cli_first_and_second_run() -> None:
    first = parse_cli(CLI_FIRST)
    assert first == {"interpreter_cache_hits": 1, "interpreter_builds": 0, "jobs_ran": 3, "jobs_reused": 0}
    second = parse_cli("interpreter cpython3.13t: built (k)\n0 jobs ran, 3 reused from x\n")
    assert second["interpreter_builds"] == 1 and second["jobs_ran"] == 0
    assert second["jobs_reused"] == 3
    assert parse_cli("")["jobs_ran"] is None


def test_count_downloads_only_network_fetches() -> None:
    assert count_downloads(PIP_LOG) == [
        "pytest_run_parallel-0.10.0-py3-none-any.whl",
        "iniconfig-2.3.1-py3-none-any.whl",
    ]


def test_iso_epoch_difference() -> None:
    assert iso_epoch("2026-12-03T09:12:10+00:00") - iso_epoch("2026-12-03T09:10:40+00:00") == 90


def _doc() -> dict:
    band = summarize([1.01, 1.02, 1.20])
    pkg = {
        "verdict": "compatible",
        "test_phases": band,
        "whole_job": summarize([1.1, 1.2, 1.3]),
        "harness_wall": summarize([50.0]),
        "bare_total": summarize([45.0]),
        "own_seconds": summarize([2.5]),
    }
    run = {
        "jobs": 1,
        "n_jobs": 3,
        "sum_job_seconds": 90.0,
        "longest_job": 40.0,
        "lower_bound": 90.0,
        "span": 92.0,
        "ratio_span": 1.0222,
        "wall": 95.0,
        "ratio_wall": 1.0556,
    }
    row = {
        "packages": 10,
        "matrix_load": 0.01,
        "plan": 0.002,
        "plan_ms_per_package": 0.2,
        "report": 0.4,
        "report_cpu": 0.1,
        "report_ms_per_package": 40.0,
        "load_results": 0.03,
        "build_report": 0.001,
        "write_all": 0.37,
    }
    return {
        "meta": {"date": "d", "cpus": 2, "load_start": "1.0", "command": "python benchmarks/run.py"},
        "sections": {
            "overhead": {
                "rounds": 3,
                "target": 1.05,
                "packages": {"ft_clean": pkg},
                "all_test_phases": band,
                "all_whole_job": summarize([1.2]),
            },
            "schedule": {
                "target": 1.1,
                "skipped": ["the default matrix does not fit"],
                "matrices": [{"matrix": "fixtures", "j1": run, "j2": {**run, "jobs": 2}, "speedup_wall": 1.6}],
            },
            "cache": {
                "first_wall": 95.0,
                "second_wall": 1.5,
                "ratio": 0.0158,
                "first_cli": parse_cli(CLI_FIRST),
                "second_cli": parse_cli("interpreter a: cache hit (k)\n0 jobs ran, 3 reused\n"),
                "first_run_downloads": {"a": ["x.whl", "y.whl"]},
                "results_rewritten": [],
            },
            "scale": {
                "rows": [row],
                "largest": 10,
                "target_report_seconds": 10.0,
                "largest_report_seconds": 12.5,
                "largest_report_cpu_seconds": 3.0,
            },
        },
    }


def test_markdown_tables_carry_the_figures_and_the_verdict_on_targets() -> None:
    md = report.render(_doc())
    assert "| ft_clean | compatible | 1.020× (1.010–1.200, n=3) | 1.200× (1.100–1.300, n=3) |" in md
    assert "test phases 1.020× (1.010–1.200, n=3) [met], whole job 1.200× (1.200–1.200, n=1) [missed]" in md
    assert "| fixtures | 2 | 3 |" in md and "1.022×" in md
    assert "Not measured: the default matrix does not fit" in md
    assert "| second (same command) | 1.5 s | 0 | 1 | 0 | 3 |" in md
    assert "| first (fresh --out) | 95.0 s | 0 | 1 | 3 | 0 | 2 |" in md
    assert "10-package report: 12.5 s wall, 3.0 s CPU [missed]" in md


def test_a_failed_section_is_shown_not_dropped() -> None:
    doc = _doc()
    del doc["sections"]["cache"]
    doc["errors"] = {"cache": "Traceback ...\nRuntimeError: run exited 4"}
    md = report.render(doc)
    assert "## cache: failed" in md and "RuntimeError: run exited 4" in md


@pytest.mark.parametrize(
    ("times", "workers", "best"),
    [
        ([100, 100, 100], 2, 200),  # whole jobs: the relaxed bound says 150
        ([30, 5, 5], 2, 30),
        ([7, 5, 4, 4], 2, 11),  # 7+4 | 5+4; the relaxed bound says 10
        ([], 3, 0),
    ],
)
def test_best_makespan_exact(times: list[float], workers: int, best: float) -> None:
    from benchmarks.common import best_makespan

    assert best_makespan(times, workers) == best
    assert best_makespan(times, workers) >= lower_bound(times, workers)


def test_best_makespan_gives_up_on_many_jobs() -> None:
    from benchmarks.common import best_makespan

    assert best_makespan([1.0] * 13, 2) is None
