"""harness.render.history: per package, the verdict over the last N runs."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from harness import render
from harness.core.errors import ConfigError
from harness.render import history
from harness.results.report import CompatReport
from tests.data.report.shared import full_report, out_dir, previous


def with_run(report: CompatReport, finished: str, verdict: str | None = None) -> CompatReport:
    jobs = tuple(replace(p, verdict=verdict) if verdict and p.name == "attrs" else p for p in report.packages)
    return replace(report, meta=replace(report.meta, finished=finished), packages=jobs)


def test_update_adds_this_run_per_package():
    h = history.update(history.update(None, previous()), full_report())
    assert [r["id"] for r in h["runs"]] == ["2026-12-02T08:00:00Z", "2026-12-03T08:22:30Z"]
    assert [e["verdict"] for e in h["packages"]["cp313t--fx-race"]] == ["compatible", "ft-race"]
    assert [e["verdict"] for e in h["packages"]["cp313t--fx-notests"]] == ["no-tests"]
    assert h["packages"]["cp313t--simplejson"][0]["verdict"] == "compatible"


def test_keeps_only_the_last_ten_runs():
    base = full_report(with_previous=False, hostile=False)
    h = None
    for i in range(12):
        h = history.update(h, with_run(base, f"2026-12-{i + 1:02d}T00:00:00Z", "ft-race" if i % 2 else "compatible"))
    assert len(h["runs"]) == 10 and h["runs"][0]["id"] == "2026-12-03T00:00:00Z"
    attrs = h["packages"]["cp313t--attrs"]
    assert len(attrs) == 10
    assert [e["verdict"] for e in attrs][-2:] == ["compatible", "ft-race"]


def test_a_package_not_seen_for_ten_runs_drops_out():
    old = history.update(None, previous())
    base = full_report(with_previous=False, hostile=False)
    h = old
    for i in range(10):
        h = history.update(h, with_run(base, f"2027-01-{i + 1:02d}T00:00:00Z"))
    assert "cp313t--simplejson" not in h["packages"]


def test_rendering_the_same_report_twice_does_not_count_twice():
    rep = full_report()
    h = history.update(history.update(None, rep), rep)
    assert len(h["runs"]) == 1 and len(h["packages"]["cp313t--attrs"]) == 1


@pytest.mark.parametrize(
    "bad",
    [
        [],
        {"schema": 2, "runs": [], "packages": {}},
        {"schema": 1, "runs": {}, "packages": {}},
        {"schema": 1, "runs": [], "packages": {"x": [{"verdict": "ok"}]}},
    ],
)
def test_a_bad_history_file_is_a_config_error(bad):
    with pytest.raises(ConfigError, match="history file"):
        history.update(bad, full_report())


def test_site_draws_history_and_writes_the_new_file(tmp_path):
    out = out_dir(tmp_path)
    old = history.update(None, previous())
    render.write_all(full_report(), out, history=old)
    h = json.loads((out / "site/history.json").read_text())
    assert h == history.update(old, full_report())
    index = (out / "site/index.html").read_text()
    assert index.count('class="spark"') == len(full_report().packages)
    page = (out / "site/pkg/cp313t--fx-race.html").read_text()
    assert 'title="2 Dec 2026: compatible 0.1"' in page  # a human date on hover
    assert 'title="3 Dec 2026: ft-race 0.1"' in page
    # each tick a mark (a shape, not colour alone), and the same in words for a screen reader
    assert '<span class="tick k-ft-race" title="3 Dec 2026: ft-race 0.1" aria-hidden="true">⇄</span>' in page
    assert "oldest first: 2 Dec 2026 compatible; 3 Dec 2026 ft-race</span>" in page
