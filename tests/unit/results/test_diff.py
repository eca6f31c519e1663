"""harness.results.diff: what changed between two reports, and which changes are regressions."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.results import aggregate, diff
from harness.results.load import check_report as read_report
from harness.results.load import load_results
from harness.results.report import CompatReport

DATA = Path(__file__).resolve().parents[2] / "data" / "report"


def report(name: str) -> CompatReport:
    results, problems = load_results([DATA / name])
    assert problems == []
    return aggregate.build_report(results, meta={})


def changed(rep: CompatReport, package: str, **kw) -> CompatReport:
    """``rep`` with the first job of ``package`` changed (``verdict=...``, ...)."""
    jobs = list(rep.packages)
    i = next(i for i, p in enumerate(jobs) if p.name == package)
    jobs[i] = dataclasses.replace(jobs[i], **kw)
    return dataclasses.replace(rep, packages=tuple(jobs))


@pytest.fixture(scope="module")
def run0() -> CompatReport:
    return report("run0")


@pytest.fixture(scope="module")
def run1() -> CompatReport:
    return report("run1")


def test_identical_reports_have_no_changes(run1):
    changes = diff.diff_reports(run1, CompatReport.from_dict(run1.to_dict()))
    assert changes == []
    assert not diff.has_regression(changes)
    assert diff.format_changes(changes) == "no changes"


def test_one_verdict_changed_is_exactly_one_change(run1):
    new = changed(run1, "attrs", verdict="ft-race")
    changes = diff.diff_reports(run1, new)
    assert [(c.kind, c.package, c.old, c.new) for c in changes] == [("newly-broken", "attrs", "compatible", "ft-race")]
    assert diff.has_regression(changes)
    text = diff.format_changes(changes)
    assert text.splitlines() == [
        "! newly-broken: attrs 25.3.0 [cp313t]: compatible -> ft-race",
        "1 change(s), 1 regression(s), 0 infra-error(s) (never a regression), 0 removed",
    ]


def test_run0_to_run1(run0, run1):
    got = {c.job_id: (c.kind, c.old, c.new, c.regression) for c in diff.diff_reports(run0, run1)}
    assert got == {
        "cp313t--fx-all-unsafe": ("new-package", None, "compatible", False),
        "cp313t--fx-notests": ("new-package", None, "no-tests", False),
        # ft-race on 2/3 threaded suite runs (14/16 alone) against 0/3 suite runs never run
        # alone: one kind of run on both sides, 2/3 vs 0/3, does not hold (results.flaky)
        "cp313t--fx-race": ("flaky", "compatible", "ft-race", False),
        # infra-error is never the package's fault: listed apart, never a regression (#16)
        "cp313t--idna": ("infra-error", "compatible", "infra-error", False),
        "cp313t--fx-hang": ("verdict-changed", "ft-race", "hang", True),  # hang is more severe
        "cp313t--fx-ft-crash": ("verdict-changed", "crash", "ft-crash", True),
        "cp313t--simplejson": ("removed", "compatible", None, False),
        # run1 adds a second interpreter: its jobs are new, matched by job id like every other
        "cp31315t--attrs": ("new-package", None, "compatible", False),
        "cp31315t--fx-race": ("new-package", None, "compatible", False),
        "cp31315t--msgpack": ("new-package", None, "gil-reenabled", False),
    }
    idna = next(c for c in diff.diff_reports(run0, run1) if c.package == "idna")
    assert (idna.old_version, idna.new_version) == ("3.9", "3.10")
    assert "idna (3.9 -> 3.10)" in idna.describe()


def test_the_reverse_direction_fixes_and_improves(run0, run1):
    changes = {c.job_id: c for c in diff.diff_reports(run1, run0)}
    assert changes["cp313t--fx-race"].kind == "flaky"  # 2/3 vs 0/3 either way
    assert not changes["cp313t--fx-race"].regression
    assert changes["cp313t--fx-hang"].kind == "verdict-changed"
    assert not changes["cp313t--fx-hang"].regression  # hang -> ft-race is less severe
    assert changes["cp313t--simplejson"].kind == "new-package"
    assert changes["cp313t--fx-notests"].kind == "removed"
    assert changes["cp313t--fx-ft-crash"].kind == "verdict-changed"  # ft-crash -> crash
    assert not diff.has_regression(list(changes.values()))  # ft-crash is the more severe one


def test_not_a_report_is_a_config_error(run1):
    # what `diff` and `report --previous` are given is checked as it is read
    good = run1.to_dict()
    assert read_report(good, "old") == CompatReport.from_dict(good)
    with pytest.raises(ConfigError, match="old report has no 'packages'"):
        read_report({"schema": 1}, "old")
    with pytest.raises(ConfigError, match="new report has a package without job_id"):
        read_report({"packages": [{"name": "x"}]}, "new")
    bad = json.loads(json.dumps(good))
    bad["packages"][0]["verdict"] = "totally-fine"
    with pytest.raises(ConfigError, match="'totally-fine', not one of the harness's verdicts"):
        read_report(bad, "new")
    bad = json.loads(json.dumps(good))
    bad["packages"][0]["interpreter"] = ["cp313t"]
    with pytest.raises(ConfigError, match="has a interpreter of the wrong type"):
        read_report(bad, "old")


def test_build_report_marks_changes_on_packages(run0):
    results, _ = load_results([DATA / "run1"])
    rep = aggregate.build_report(results, meta={}, previous=run0)
    marks = {p.job_id: p.change for p in rep.packages}
    assert marks["cp313t--fx-race"] == "flaky"
    assert marks["cp313t--attrs"] == ""
    assert marks["cp31315t--fx-race"] == "new-package"
    assert rep.changes is not None
    assert {c.kind for c in rep.changes} == {"new-package", "flaky", "verdict-changed", "removed", "infra-error"}
    assert all("regression" in c for c in rep.to_dict()["changes"])


def test_infra_error_is_listed_apart_and_never_a_regression(run1):
    new = changed(run1, "attrs", verdict="infra-error")
    changes = diff.diff_reports(run1, new)
    assert [(c.kind, c.regression) for c in changes] == [("infra-error", False)]
    assert not diff.has_regression(changes)
    # and from an infra-error there is no verdict to regress from
    back = diff.diff_reports(new, run1)
    assert [(c.kind, c.regression) for c in back] == [("fixed", False)]
    worse = changed(run1, "attrs", verdict="ft-crash")
    assert not diff.has_regression(diff.diff_reports(new, worse))


def test_unknown_verdict_is_bad_input_and_removed_is_listed(run1):
    new = run1.to_dict()
    new["packages"][0]["verdict"] = "totally-fine"
    with pytest.raises(ConfigError, match="'totally-fine', not one of the harness's verdicts"):
        diff.diff_reports(run1, read_report(new, "new"))
    removed, *rest = run1.packages
    gone = dataclasses.replace(run1, packages=tuple(rest))
    text = diff.format_changes(diff.diff_reports(run1, gone))
    assert f"removed: {removed.name}" in text and text.endswith("1 removed")


def test_package_text_in_the_diff_cannot_run_a_workflow_command(run1):
    """diff.txt is echoed into the CI log: a version or name a package set cannot start a line
    with '::' (a workflow command), nor carry ESC/OSC/BEL/NUL to the terminal."""
    p = run1.packages[0]
    new = changed(
        run1,
        p.name,
        version="9.9\n::error file=x::pwned\x1b]0;title\x07\x00",
        name="\r::add-mask::x",
        verdict="crash" if p.verdict != "crash" else "hang",
    )
    text = diff.format_changes(diff.diff_reports(run1, new))
    assert len(text.splitlines()) == 2  # the change and the count, nothing smuggled in between
    for line in text.splitlines():
        assert not line.lstrip().startswith("::"), line
        assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F for c in line), repr(line)
    assert "9.9\\x0a\\:\\:error" not in text and "9.9\\x0a::error file=x::pwned\\x1b]0;title\\x07\\x00" in text
