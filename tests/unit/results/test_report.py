"""harness.results.report: the typed report, report.json (to_dict) and a report.json read back (from_dict)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from harness import render
from harness.core.evidence import Wheel
from harness.core.suiterecord import TestSetup
from harness.results import aggregate
from harness.results.load import read_report
from harness.results.report import REPORT_SCHEMA, Change, CompatReport, JobEntry, Meta, ProjectMeta
from tests.data.report.shared import full_report, load, previous

SCHEMA = json.loads((Path(__file__).resolve().parents[3] / "harness" / "schema" / "report.schema.json").read_text())


def _validate(doc: dict) -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)


@pytest.mark.parametrize("which", ["full", "previous", "plain", "docker"])
def test_report_json_round_trips_through_from_dict(which):
    rep = {
        "full": full_report,
        "previous": previous,
        "plain": lambda: full_report(with_previous=False, hostile=False),
        "docker": lambda: aggregate.build_report(load("docker"), meta={}),
    }[which]()
    doc = rep.to_dict()
    _validate(doc)
    back = CompatReport.from_dict(json.loads(json.dumps(doc)))
    assert back.to_dict() == doc
    assert back == rep  # the typed values too, not only their JSON
    _validate(back.to_dict())


def test_report_json_on_disk_is_to_dict_and_reads_back(tmp_path):
    rep = full_report()
    text = render.report_json(rep)
    assert json.loads(text) == rep.to_dict()
    assert list(json.loads(text)) == [
        "schema",
        "meta",
        "summary",
        "answers",
        "interpreters",
        "table",
        "missing",
        "causes",
        "changes",
        "packages",
    ]  # packages last, a line each
    assert CompatReport.from_dict(json.loads(text)) == rep


def test_typed_values_of_a_job():
    rep = full_report()
    attrs = next(p for p in rep.packages if p.job_id == "cp313t--attrs")
    assert isinstance(attrs.wheel, Wheel) and attrs.wheel.installed == "wheel (pure)"
    assert isinstance(attrs.test_setup, TestSetup) and attrs.test_setup.tests_from == "inferred"
    assert attrs.metadata.summary and ("Source", "https://github.com/python-attrs/attrs") in attrs.metadata.urls
    idna = next(p for p in rep.packages if p.job_id == "cp313t--idna")
    assert idna.wheel is None and idna.test_setup is None  # not looked at / not recorded
    assert idna.to_dict()["wheel"] == {} and idna.to_dict()["test_setup"] == {}
    race = next(p for p in rep.packages if p.job_id == "cp313t--fx-race")
    assert race.change == "flaky" and race.to_dict()["change"] == "flaky"
    assert "change" not in attrs.to_dict()  # no change, no key (as before the types)
    assert set(race.coverage) == {"gil0", "gil1"} and race.coverage["gil0"].mode == 0


def test_meta_keeps_what_the_command_added_in_its_order():
    meta = {
        "harness_version": "1",
        "started": "2026-12-04T01:00:00Z",
        "finished": "2026-12-05T01:00:00Z",
        "backend": "",
        "sources": ["a", "b"],
        "matrix": "m.yaml",
        "matrix_digest": "dd",
    }
    rep = aggregate.build_report(load("run1"), meta=meta)
    got = rep.to_dict()["meta"]
    assert list(got) == [
        "harness_version",
        "matrix_digest",
        "started",
        "finished",
        "backends",
        "interpreters",
        "jobs",
        "backend",
        "sources",
        "matrix",
        "generated",
    ]
    assert got["sources"] == ["a", "b"] and got["generated"] == "2026-12-05T01:00:00Z"
    assert rep.meta.extra == {"backend": "", "sources": ["a", "b"], "matrix": "m.yaml"}
    assert Meta.from_dict(got) == rep.meta


def test_an_older_report_reads_back_with_defaults():
    # schema 1: no columns, no table, no interpreter source/full_version, no meta.jobs
    old = {
        "schema": 1,
        "meta": {"harness_version": "0.1", "started": "s", "finished": "f"},
        "summary": {"compatible": 1},
        "packages": [
            {
                "job_id": "cp313t--six",
                "name": "six",
                "version": "1.17.0",
                "verdict": "compatible",
                "interpreter": {"name": "cp313t"},
                "findings": [{"kind": "no-thread-coverage", "modes": [0]}],
                "phases": [{"name": "install", "duration": 1.5, "log": "x.log"}],
                "future_key": {"ignored": True},
            }
        ],
    }
    rep = CompatReport.from_dict(old)
    assert rep.schema == REPORT_SCHEMA and rep.interpreters == () and rep.table == ()
    assert rep.changes is None and rep.missing == ()
    (job,) = rep.packages
    assert (job.name, job.verdict, job.interpreter.name, job.interpreter.full_version) == (
        "six",
        "compatible",
        "cp313t",
        "",
    )
    assert job.findings[0].modes == (0,) and job.findings[0].ratio == ""
    assert job.phases[0].duration == 1.5 and job.logs == ["x.log"]
    assert job.metadata == ProjectMeta() and job.wheel is None and job.test_setup is None
    assert rep.meta.jobs == 0 and rep.meta.extra == {}
    assert CompatReport.from_dict({}) == CompatReport()  # nothing at all: every default


def test_changes_read_back_with_regression_derived():
    c = Change(kind="newly-broken", job_id="j", package="p", old="compatible", new="crash")
    d = c.to_dict()
    assert d["regression"] is True
    assert Change.from_dict({**d, "regression": False}) == c  # derived, never read


def test_previous_from_a_file_marks_the_same_changes(tmp_path):
    prev_file = tmp_path / "report.json"
    prev_file.write_text(render.report_json(previous()))
    typed = aggregate.build_report(load("run1"), meta={}, previous=previous())
    read = aggregate.build_report(load("run1"), meta={}, previous=read_report(prev_file, "old"))
    assert read == typed and read.changes
    assert {p.job_id: p.change for p in read.packages if p.change} == {
        c.job_id: c.kind for c in read.changes if c.kind != "removed"
    }


def test_a_job_entry_built_by_hand_is_a_valid_report_entry():
    job = JobEntry.from_dict(
        {
            "job_id": "a--b",
            "name": "b",
            "verdict": "compatible",
            "source": "pypi",
            "interpreter": {"name": "a", "version": "3.14.0"},
        }
    )
    rep = CompatReport(
        packages=(job,), summary={v: 0 for v in SCHEMA["$defs"]["verdict"]["enum"]}, table=(), interpreters=()
    )
    doc = rep.to_dict()
    _validate(doc)
    assert doc["packages"][0]["verdict_label"] == "compatible" and doc["packages"][0]["logs"] == []
