"""GIL warnings and pytest-run-parallel coverage in captured real output."""

import json
from pathlib import Path

from harness.core.model import Phase
from harness.parse import parse_phase
from harness.parse.gil import gil_modules, warning_lines
from harness.parse.pytestlog import clean_id, parse_log

DATA = Path(__file__).resolve().parents[2] / "data" / "parse"


def phase(case: str, name: str) -> Phase:
    d = DATA / case
    return parse_phase(Phase.from_dict(json.loads((d / "phases" / f"{name}.json").read_text())), d)


def test_gil_warning_from_the_import_probe():
    text = (DATA / "probe-gil/logs/probe.log").read_text()
    assert gil_modules(text) == ["legacyext"]
    assert warning_lines(text, "legacyext")[0].startswith("<frozen importlib._bootstrap>")
    assert phase("probe-gil", "probe").gil_modules == ("legacyext",)


def test_gil_warning_in_pytest_warnings_summary_default_mode():
    assert phase("gilext-default", "plain-default").gil_modules == ("legacyext",)


def test_no_warning_when_python_gil_is_set():
    for name in ("plain-gil0", "plain-gil1", "threads-gil0-r1"):
        assert phase("gilext", name).gil_modules == ()
    assert gil_modules("") == [] and gil_modules("\xff garbage") == []


def test_collect_only_gives_trusted_coverage_with_reasons():
    p = phase("mix", "collect-gil0")
    par = p.parallel
    assert par.trusted and par.source == "collect"
    assert par.collected_parallel == 10
    assert par.single == {
        "tests/test_mix.py::test_marked_unsafe": "touches global config",
        "tests/test_mix.py::test_uses_monkeypatch": "uses thread-unsafe fixture(s): {'monkeypatch'}",
    }


def test_xdist_threads_log_is_not_trusted_for_coverage():
    par = phase("mix", "threads-gil0-r1").parallel
    assert par.trusted is False and par.all_parallel_claimed is True  # a false claim


def test_per_test_markers_without_xdist():
    p = phase("mix-noxdist", "threads-gil0-r1")
    assert p.parallel.trusted and len(p.parallel.in_threads) == 8
    assert p.tests["tests/test_mix.py::test_race"].parallel is True
    assert p.tests["tests/test_mix.py::test_marked_unsafe"].parallel is False
    assert p.tests["tests/test_mix.py::test_skipped"].parallel is None


def test_all_unsafe_suite():
    p = phase("allunsafe-noxdist", "threads-gil0-r1")
    assert p.parallel.in_threads == () and len(p.parallel.single) == 3
    assert p.parallel.collected_parallel == 1  # run-parallel counts the skipped test too


def test_log_statuses_xdist_and_plain():
    x = parse_log((DATA / "mix/logs/threads-gil0-r1.log").read_text())
    assert x.xdist and x.finished and x.final["failed"] == 3
    assert x.tests["tests/test_mix.py::test_param[d e]"].outcome == "passed"
    n = parse_log((DATA / "crash-noxdist/logs/threads-gil0-r1.log").read_text())
    assert not n.xdist and not n.finished
    assert n.unfinished == ["tests/test_crash.py::test_segv"]
    assert clean_id("tests/t.py::t[a b] Fatal Python error: x") == "tests/t.py::t[a b]"
