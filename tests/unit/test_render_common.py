"""harness.render.common: reading coverage/wheel dicts as harness.parse/wheels write them."""

from __future__ import annotations

from harness.render import common


def mode(m, *, known=True, in_threads=5, total=10, **kw):
    return {"mode": m, "known": known, "source": "junit", "in_threads": in_threads if known else None,
            "single": 1, "skipped_unsafe": 0, "skipped": 0, "total": total, "reasons": {}, **kw}


def test_coverage_summary_is_the_least_covered_mode():
    cov = {"gil0": mode(0, in_threads=3, total=120), "gil1": mode(1, in_threads=100, total=120)}
    assert common.coverage_counts(cov) == (3, 120)
    assert common.coverage_summary(cov) == "3/120 (2%)"


def test_coverage_unknown_and_empty():
    assert common.coverage_summary({}) == "—"
    assert common.coverage_summary({"gil0": mode(0, known=False)}) == "unknown"
    assert common.coverage_summary({"gil0": mode(0, in_threads=0, total=0)}) == "no tests"
    rows = common.coverage_modes({"gil1": mode(1, known=False), "gil0": mode(0)})
    assert [r["mode"] for r in rows] == ["PYTHON_GIL=0", "PYTHON_GIL=1"]
    assert rows[1]["in_threads"] == "unknown" and rows[0]["in_threads"] == "5"


def test_coverage_reasons_are_listed():
    (row,) = common.coverage_modes({"gil0": mode(0, reasons={"t::b": "uses monkeypatch",
                                                             "t::a": "marked thread_unsafe"})})
    assert row["reasons"] == [("t::a", "marked thread_unsafe"), ("t::b", "uses monkeypatch")]


def test_wheel_summary():
    assert common.wheel_summary({}) == "—"
    assert common.wheel_summary({"installed": "wheel (free-threaded)", "available": "free-threaded",
                                 "installed_file": "x-1-cp313-cp313t-manylinux_x86_64.whl"}) == \
        "free-threaded wheel, installed wheel (free-threaded)"
    assert common.wheel_summary({"installed": "built from sdist", "available": "sdist-only"}) == \
        "sdist only, built from sdist"
    assert common.wheel_summary({"installed": "local source", "available": "n/a"}) == "local source"
    warned = common.wheel_summary({"installed": "wheel (free-threaded)", "available": "free-threaded",
                                   "warning": "the free-threaded wheel re-enables the GIL: m._c"})
    assert warned.endswith("⚠ the wheel re-enables the GIL")


def test_safe_url_and_project_urls():
    assert common.safe_url("https://example.org/x") == "https://example.org/x"
    for bad in ("javascript:alert(1)", "JAVASCRIPT:alert(1)", "data:text/html,x", "//evil.org",
                "https://", "http://a b", "https://x\n.org", 42, None):
        assert common.safe_url(bad) == "", bad
    urls = common.project_urls({"project_urls": {"Source": "https://github.com/a/b",
                                                 "Bad": "javascript:alert(1)"},
                                "home_page": "", "summary": "s"})
    assert urls == [("Source", "https://github.com/a/b")]


def test_durations():
    assert common.fmt_duration(0) == "—"
    assert common.fmt_duration(3.21) == "3.2 s"
    assert common.fmt_duration(600) == "10 min 00 s"
    assert common.fmt_duration(7322) == "2 h 02 min"
