"""harness.render.common: coverage, wheel, URLs and test setup as the report types carry them."""

from __future__ import annotations

from harness.core.evidence import ModeCoverage, Wheel
from harness.core.suiterecord import TestSetup
from harness.render import common
from harness.results.report import ProjectMeta


def mode(m, *, known=True, in_threads=5, total=10, **kw):
    return ModeCoverage(
        mode=m,
        known=known,
        source="junit",
        in_threads=in_threads if known else None,
        single=1,
        skipped_unsafe=0,
        skipped=0,
        total=total,
        **kw,
    )


def test_coverage_summary_is_the_least_covered_mode():
    cov = {"gil0": mode(0, in_threads=3, total=120), "gil1": mode(1, in_threads=100, total=120)}
    assert common.coverage_counts(cov) == (3, 120)
    assert common.coverage_summary(cov) == "3/120 (2%)"


def test_coverage_unknown_and_empty():
    assert common.coverage_summary({}) == "—"
    assert common.coverage_summary({"gil0": mode(0, known=False)}) == "unknown"
    assert common.coverage_summary({"gil0": mode(0, in_threads=0, total=0)}) == "no tests"
    # a value of the wrong type (a hand-edited result) is not counted, never a crash
    assert common.coverage_summary({"gil0": mode(0, in_threads="5", total=10)}) == "unknown"
    rows = common.coverage_modes({"gil1": mode(1, known=False), "gil0": mode(0)})
    assert [r["mode"] for r in rows] == ["PYTHON_GIL=0", "PYTHON_GIL=1"]
    assert rows[1]["in_threads"] == "unknown" and rows[0]["in_threads"] == "5"


def test_coverage_reasons_are_listed():
    (row,) = common.coverage_modes(
        {"gil0": mode(0, reasons={"t::b": "uses monkeypatch", "t::a": "marked thread_unsafe"})}
    )
    assert row["reasons"] == [("t::a", "marked thread_unsafe"), ("t::b", "uses monkeypatch")]


def test_wheel_summary():
    assert common.wheel_summary(None) == "—"
    assert (
        common.wheel_summary(
            Wheel(
                installed="wheel (free-threaded)",
                available="free-threaded",
                installed_file="x-1-cp313-cp313t-manylinux_x86_64.whl",
            )
        )
        == "free-threaded wheel, installed wheel (free-threaded)"
    )
    assert (
        common.wheel_summary(Wheel(installed="built from sdist", available="sdist-only"))
        == "sdist only, built from sdist"
    )
    assert common.wheel_summary(Wheel(installed="local source", available="n/a")) == "local source"
    warned = common.wheel_summary(
        Wheel(
            installed="wheel (free-threaded)",
            available="free-threaded",
            warning="the free-threaded wheel re-enables the GIL: m._c",
        )
    )
    assert warned.endswith("⚠ the wheel re-enables the GIL")
    assert common.wheel_summary(Wheel()) == "installed: , installed_file: , available: "


def test_safe_url_and_project_urls():
    assert common.safe_url("https://example.org/x") == "https://example.org/x"
    for bad in (
        "javascript:alert(1)",
        "JAVASCRIPT:alert(1)",
        "data:text/html,x",
        "//evil.org",
        "https://",
        "http://a b",
        "https://x\n.org",
        42,
        None,
    ):
        assert common.safe_url(bad) == "", bad
    urls = common.project_urls(
        ProjectMeta(
            raw={
                "project_urls": {"Source": "https://github.com/a/b", "Bad": "javascript:alert(1)"},
                "home_page": "",
                "summary": "s",
            }
        )
    )
    assert urls == [("Source", "https://github.com/a/b")]
    listed = ProjectMeta(
        raw={"project_urls": ["Docs, https://d.example/", "no comma"], "homepage": "https://h.example/", "summary": 7}
    )
    assert common.project_urls(listed) == [("Docs", "https://d.example/"), ("Homepage", "https://h.example/")]
    assert listed.summary == ""  # not a string: shown as nothing


def test_setup_summary():
    assert common.setup_summary(None) == ""
    ts = TestSetup(
        tests="tests",
        tests_from="inferred",
        requires=("pytest", "hypothesis"),
        requires_from="inferred",
        sources=("test deps from [dependency-groups] tests",),
        pytest_args=("-p", "no:xdist"),
        pytest_args_from="matrix.yaml",
    )
    assert common.setup_summary(ts) == (
        "tests (inferred), 2 test dep(s) (inferred: test deps from [dependency-groups] tests), "
        "pytest args -p no:xdist (matrix.yaml)"
    )
    assert common.setup_summary(TestSetup()) == "source root (?), 0 test dep(s) (?)"


def test_durations():
    assert common.fmt_duration(0) == "—"
    assert common.fmt_duration(3.21) == "3.2 s"
    assert common.fmt_duration(600) == "10 min 00 s"
    assert common.fmt_duration(7322) == "2 h 02 min"
