"""The findings feed (harness.results.feed, issue #57) built from the captured runs of
tests/data/report: ids stable across a re-render, two runs and a merge of shards, different for
another test or version; first_seen and reported carried from the previous feed; findings.json
read back through Feed.from_dict."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from harness.render import feed_json
from harness.results import aggregate
from harness.results.feed import Feed, build, finding_id
from harness.results.load import load_results
from tests.data.report.shared import DATA, full_report, load, previous

URL = "https://github.com/example/fx-thread-unsafe/issues/7"


def by_key(feed: Feed) -> dict[tuple[str, str, str, str], str]:
    """(package, version, kind, test or module) -> id."""
    return {(e.package, e.version, e.kind, e.test or e.module): e.id for e in feed.findings}


def test_the_feed_lists_each_finding_to_file_once_under_its_interpreter_line() -> None:
    feed, _ = build(full_report())
    kinds = sorted(e.kind for e in feed.findings)
    # run1 + hostile: the info kinds (no-thread-coverage) and the harness's own infra-error are left out
    assert "no-thread-coverage" not in kinds and "infra-error" not in kinds
    assert len(feed.findings) == 9 and kinds.count("ft-race") == 2
    # msgpack re-enables the GIL on 3.13.5t and 3.13.15t: one finding of the 3.13t line, both jobs counted
    (msgpack,) = [e for e in feed.findings if e.package == "msgpack"]
    assert (msgpack.line, msgpack.minor, msgpack.module) == ("3.13t", "3.13", "msgpack._cmsgpack")
    assert [s.job_id for s in msgpack.counts] == ["cp313t--msgpack", "cp31315t--msgpack"]
    (race,) = [e for e in feed.findings if e.package == "fx-race"]
    assert race.counts[0].ratio == "2/3" and race.counts[0].by_mode == {"gil0": "2/3", "gil1": "0/3"}
    assert race.verdict == "ft-race" and race.first_seen == race.last_seen == "2026-12-03"


def test_ids_hold_across_a_rerender_and_two_runs_of_the_matrix() -> None:
    once, _ = build(full_report())
    again, _ = build(full_report(with_previous=False))
    assert [e.id for e in once.findings] == [e.id for e in again.findings]
    run0, _ = build(previous())  # the same matrix a day before
    old, new = by_key(run0), by_key(once)
    same = ("fx-thread-unsafe", "0.1", "thread-unsafe", "tests/test_state.py::test_global_counter")
    assert old[same] == new[same]
    both = set(old) & set(new)
    assert len(both) == 5 and all(old[k] == new[k] for k in both)
    # run0's fx-hang failed another test (an ft-race of test_flaky): another finding, another id
    assert ("fx-hang", "0.1", "ft-race", "tests/test_demo.py::test_flaky") in set(old) - set(new)


def test_a_report_merged_from_shards_has_the_unsplit_reports_feed(tmp_path: Path) -> None:
    files = sorted((DATA / "run1" / "results").glob("*.json"))
    for i, f in enumerate(files):  # two shards, every other job
        (tmp_path / f"shard{i % 2}" / "results").mkdir(parents=True, exist_ok=True)
        shutil.copy(f, tmp_path / f"shard{i % 2}" / "results" / f.name)
    results, problems = load_results([tmp_path / "shard0", tmp_path / "shard1"])
    assert problems == [] and len(results) == len(files)
    merged, _ = build(aggregate.build_report(results, meta={}))
    whole, _ = build(aggregate.build_report(load("run1"), meta={}))
    assert merged.to_dict() == whole.to_dict() and len(whole.findings) == 8


def test_the_id_differs_with_the_test_the_version_the_kind_or_the_line() -> None:
    base = ("fx-race", "0.1", "3.13t", "ft-race", "tests/test_buf.py::test_shared_buffer")
    ids = {finding_id(*base)}
    for i, other in enumerate(("fx-race2", "0.2", "3.14t", "thread-unsafe", "tests/test_buf.py::test_other")):
        ids.add(finding_id(*base[:i], other, *base[i + 1 :]))
    assert len(ids) == 6
    assert finding_id("Fx_Race", *base[1:]) == finding_id(*base)  # the PEP 503 name
    results = load("run1")
    bumped = [dataclasses.replace(r, version="0.2") if r.package == "fx-race" else r for r in results]
    a, _ = build(aggregate.build_report(results, meta={}))
    b, _ = build(aggregate.build_report(bumped, meta={}))
    assert {e.id for e in a.findings} ^ {e.id for e in b.findings} == {
        next(e.id for e in a.findings if e.package == "fx-race"),
        next(e.id for e in b.findings if e.package == "fx-race"),
    }


def test_first_seen_comes_from_the_previous_feed_and_a_gone_finding_is_dropped() -> None:
    old, _ = build(previous(), reported={})
    assert old.day == "2026-12-02"
    new, unplaced = build(full_report(), previous=old)
    assert unplaced == []
    seen = {e.package: e for e in new.findings}
    assert (seen["fx-thread-unsafe"].first_seen, seen["fx-thread-unsafe"].last_seen) == ("2026-12-02", "2026-12-03")
    assert seen["fx-race"].first_seen == "2026-12-03"  # new in run1
    assert "fx-hang" in {e.package for e in old.findings if e.kind == "ft-race"}
    assert not any(e.package == "fx-hang" and e.kind == "ft-race" for e in new.findings)


def test_reported_is_shown_kept_by_the_next_feed_and_carried_to_a_new_release() -> None:
    first, _ = build(previous())
    rid = next(e.id for e in first.findings if e.package == "fx-thread-unsafe")
    filed, unplaced = build(previous(), reported={rid: URL, "0123456789abcdef": "https://example.test/x"})
    assert unplaced == ["0123456789abcdef"]  # the caller's warning line
    assert {e.id: e.reported for e in filed.findings if e.reported} == {rid: URL}
    later, _ = build(full_report(), previous=filed)  # no reported.yaml this time: the feed keeps it
    assert {e.id: e.reported for e in later.findings if e.reported} == {rid: URL}
    assert later.links() == {
        ("cp313t--fx-thread-unsafe", "thread-unsafe", "tests/test_state.py::test_global_counter"): URL
    }
    # a release later the id is new, its lineage the same: the link stays, first_seen is its own
    results = [dataclasses.replace(r, version="0.2") if r.package == "fx-thread-unsafe" else r for r in load("run1")]
    bumped, _ = build(aggregate.build_report(results, meta={}), previous=later)
    (e,) = [e for e in bumped.findings if e.package == "fx-thread-unsafe"]
    assert e.id != rid and e.reported == URL and e.first_seen == "2026-12-03"
    # reported.yaml naming the old release's id still finds it, through the previous feed's lineage
    again, unplaced = build(aggregate.build_report(results, meta={}), previous=filed, reported={rid: URL + "0"})
    assert unplaced == [] and [x.reported for x in again.findings if x.package == "fx-thread-unsafe"] == [URL + "0"]


def test_findings_json_reads_back_through_from_dict() -> None:
    old, _ = build(previous())
    rid = old.findings[0].id
    feed, _ = build(full_report(), previous=old, reported={rid: URL})
    text = feed_json(feed)
    assert text.count("\n") == len(feed.findings) + 2  # a line to open, a finding a line, a line to close
    assert Feed.from_dict(json.loads(text)) == feed


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda d: d.update(schema=2), "schema 2, expected 1"),
        (lambda d: d.pop("findings"), "has no 'findings' list"),
        (lambda d: d["findings"][0].update(id="XYZ"), "findings[0]: 'id' and 'lineage' must be 16 lowercase hex"),
        (lambda d: d["findings"][1].update(reported="http://x.test/1"), "findings[1]: 'reported' must be an https URL"),
        (lambda d: d["findings"][0].update(first_seen="yesterday"), "'first_seen' and 'last_seen' must be dates"),
        (lambda d: d["findings"][0]["counts"][0].update(runs="3"), "findings[0].counts[0]: 'count' and 'runs'"),
        (lambda d: d["findings"][2].update(package=7), "findings[2]: 'package' must be a non-empty string"),
    ],
)
def test_a_findings_json_that_is_wrong_names_its_key(edit, why: str) -> None:
    doc = json.loads(feed_json(build(full_report())[0]))
    edit(doc)
    with pytest.raises(ValueError) as e:
        Feed.from_dict(doc)
    assert why in str(e.value)


def test_findings_json_follows_its_schema() -> None:
    import jsonschema

    spec = json.loads((Path(__file__).resolve().parents[3] / "harness" / "schema" / "findings.schema.json").read_text())
    old, _ = build(previous())
    feed, _ = build(full_report(), previous=old, reported={old.findings[0].id: URL})
    doc = json.loads(feed_json(feed))
    jsonschema.validate(doc, spec)
    doc["findings"][0]["reported"] = "http://x.test/1"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, spec)
