"""harness.render.junitreport: one test case per package x finding, read back with junitparser."""

from __future__ import annotations

from dataclasses import replace

from junitparser import Error, Failure, JUnitXml, Skipped

from harness.core.model import INFO_KINDS, Finding
from harness.render import junitreport as junit
from tests.data.report.shared import XSS, XSS2, full_report


def parse(tmp_path, report) -> JUnitXml:
    f = tmp_path / "junit.xml"
    f.write_text(junit.render(report), encoding="utf-8")
    return JUnitXml.fromfile(str(f))


def cases(xml: JUnitXml) -> dict[tuple[str, str], object]:
    return {(c.classname, c.name): c for suite in xml for c in suite}


def test_one_case_per_package_and_finding(tmp_path):
    rep = full_report()
    xml = parse(tmp_path, rep)
    got = cases(xml)
    # a case per finding, plus a verdict case for packages without a blocking finding
    expected = sum(len(p.findings) + (not any(f.kind not in INFO_KINDS for f in p.findings)) for p in rep.packages)
    assert expected == 18  # 15 on cp313t, 3 on cp31315t (attrs, fx-race pass; msgpack fails)
    assert len(got) == expected
    suites = list(xml)
    assert [s.name for s in suites] == ["free-threaded cp313t", "free-threaded cp31315t"]
    assert (suites[0].tests, suites[1].tests) == (15, 3)
    assert (suites[1].failures, suites[1].errors, suites[1].skipped) == (1, 0, 0)
    assert got[("cp31315t.fx-race", "verdict: compatible")].is_passed


def test_verdicts_map_to_pass_failure_error_skip(tmp_path):
    got = cases(parse(tmp_path, full_report()))
    attrs = got[("cp313t.attrs", "verdict: compatible")]
    assert attrs.is_passed
    race = got[("cp313t.fx-race", "ft-race: tests/test_buf.py::test_shared_buffer")]
    (res,) = race.result
    assert isinstance(res, Failure) and res.type == "ft-race"
    assert "seen in 2/3 runs" in res.text and "reproduce: cd src && PYTHONFAULTHANDLER=1 PYTHON_GIL=0" in res.text
    assert "PARALLEL FAILED" in res.text
    (infra,) = got[("cp313t.idna", "infra-error")].result
    assert isinstance(infra, Error)
    (skip,) = got[("cp313t.fx-all-unsafe", "no-thread-coverage")].result
    assert isinstance(skip, Skipped)
    unsafe = got[("cp313t.fx-all-unsafe", "verdict: compatible (low thread coverage: 0/8 tests in threads)")]
    assert unsafe.is_passed
    (nt,) = got[("cp313t.fx-notests", "verdict: no-tests")].result
    assert isinstance(nt, Skipped)
    (crash,) = got[("cp313t.fx-ft-crash", "ft-crash: tests/test_grow.py::test_concurrent_append")].result
    assert isinstance(crash, Failure) and "Fatal Python error: Segmentation fault" in crash.text


def test_a_budget_spent_job_is_an_error_and_its_finding_skipped(tmp_path):
    rep = full_report()
    attrs = next(p for p in rep.packages if p.job_id == "cp313t--attrs")
    spent = Finding(
        kind="budget-spent",
        evidence="timeout",
        phase="plain-gil0",
        message="the job's budget (job_timeout 120 s) ran out during plain-gil0",
    )
    cut = replace(attrs, verdict="infra-error", findings=(spent,))
    got = cases(parse(tmp_path, replace(rep, packages=tuple(cut if p is attrs else p for p in rep.packages))))
    (err,) = got[("cp313t.attrs", "verdict: infra-error")].result
    assert isinstance(err, Error) and err.type == "infra-error"
    (skip,) = got[("cp313t.attrs", "budget-spent")].result
    assert isinstance(skip, Skipped) and "ran out during plain-gil0" in skip.message


def test_totals_on_the_root(tmp_path):
    xml = parse(tmp_path, full_report())
    suite = next(iter(xml))
    fails = sum(1 for c in suite for r in c.result if isinstance(r, Failure))
    errors = sum(1 for c in suite for r in c.result if isinstance(r, Error))
    skips = sum(1 for c in suite for r in c.result if isinstance(r, Skipped))
    assert (suite.failures, suite.errors, suite.skipped) == (fails, errors, skips)
    # one failure per blocking finding: 8 fixtures/real packages + evil-pkg; idna's is an error
    assert (fails, errors, skips) == (9, 1, 3)  # skipped: 2 no-thread-coverage + no-tests


def test_hostile_and_control_characters_round_trip(tmp_path):
    rep = full_report()
    evil = next(p for p in rep.packages if p.name == "evil-pkg")
    first = replace(evil.findings[0], excerpt=evil.findings[0].excerpt + "\x1b[31mred\x1b[0m \x00 end")
    evil = replace(evil, findings=(first, *evil.findings[1:]))
    rep = replace(rep, packages=tuple(evil if p.name == "evil-pkg" else p for p in rep.packages))
    got = cases(parse(tmp_path, rep))
    (res,) = got[("cp313t.evil-pkg", f"ft-race: tests/test_x.py::test_{XSS}")].result
    assert XSS2 in res.text and "[31mred" in res.text and "\x1b" not in res.text
