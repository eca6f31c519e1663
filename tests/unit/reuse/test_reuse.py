"""harness.reuse.reuse and ``run_plan(reuse_from=...)``: a job whose key and sdist equal an earlier
run's result is not run again; its result says where it came from and its verdict is decided
again from its stored phases.  The earlier results are the report test data (made by the code,
tests/data/report/make_results.py); the scheduler runs fake job steps (tests/unit/job/test_runner.py)."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from harness.config import matrix, plan
from harness.core.model import read_result
from harness.job import fetch
from harness.job.runner import result_path, run_plan
from harness.results import manifest
from harness.reuse import reuse
from harness.util.safefiles import write_json_atomic
from harness.verdict import decide
from tests.unit.job.test_runner import PREPARED, FakeBackend, FakeSteps
from tests.unit.verdict.test_verdict import load as load_phases

RUN0 = Path(__file__).parents[2] / "data" / "report" / "run0" / "results"
SHA = "a" * 64


def _jobs(*pkgs: str) -> list[plan.Job]:
    spec = matrix.loads(
        'interpreters: [{name: cpython3.13t, version: "3.13.5", source: "debian:trixie"}]\n'
        "packages: [" + ", ".join(pkgs) + "]\n"
    )
    return plan.make_plan(spec)


def _earlier(tmp_path: Path, job: plan.Job, *, case: str = "confirm-realloc", sha: str = SHA, **change) -> Path:
    """An earlier run's --out holding one result for ``job``, as that run wrote it: a captured
    job's phases (tests/data/parse/<case>, an ft-crash), decided, with the job's id and key."""
    phases = tuple(load_phases(case))
    d = decide(phases, settings=job.settings)
    res = replace(
        read_result(RUN0 / "cp313t--attrs.json"),
        job_id=job.job_id,
        key=job.key(PREPARED["cpython3.13t"].info.key),
        package=job.package.name,
        phases=phases,
        verdict=d.verdict,
        qualifier=d.qualifier,
        coverage=d.coverage,
        findings=tuple(replace(f, recipe=f"# the recipe of {f.kind}") for f in d.findings),
        sdist_sha256=sha,
    )
    out = tmp_path / "earlier"
    write_json_atomic(result_path(out, job.job_id), replace(res, **change).to_dict())
    _manifest(out)
    return out


def _manifest(out: Path) -> None:
    """out/manifest.json over out/results/, as `ft-harness run` writes it at its end."""
    manifest.write(out, {p.stem: hashlib.sha256(p.read_bytes()).hexdigest() for p in (out / "results").glob("*.json")})


def _index(sha: str = SHA):
    asked: list[tuple[str, str]] = []

    def lookup(name: str, spec: str) -> str:
        asked.append((name, spec))
        return sha

    return lookup, asked


def test_same_key_and_sdist_is_reused_and_says_from_where(tmp_path):
    job, other = _jobs('{name: six, version: "==1.17.0"}', '{name: idna, version: "==3.10"}')
    earlier = _earlier(tmp_path, job)
    lookup, asked = _index()
    steps = FakeSteps()
    out = tmp_path / "out"
    summary = run_plan(
        [job, other],
        out=out,
        backend=FakeBackend(),
        prepared=PREPARED,
        run_one=steps,
        reuse_from=[earlier],
        sdist_sha256=lookup,
    )
    assert [c["job"] for c in steps.calls] == [other.job_id]  # only the job with no earlier result ran
    assert summary.reused == [job.job_id] and summary.ran == [other.job_id]
    assert asked == [("six", "==1.17.0")]
    kept = read_result(result_path(out, job.job_id))
    assert kept.reused_from == str(earlier)
    assert kept.verdict == "ft-crash" and kept.phases  # the earlier run's phases, kept


@pytest.mark.parametrize(
    ("change", "sha_now", "why"),
    [
        ({"key": "another-key"}, SHA, "key differs"),
        ({"verdict": "infra-error"}, SHA, "infra-error"),
        ({}, "b" * 64, "another file now"),
        ({"sdist_sha256": ""}, SHA, "no sdist sha256"),
    ],
)
def test_what_makes_a_job_run_again(tmp_path, change, sha_now, why):
    (job,) = _jobs('{name: six, version: "==1.17.0"}')
    earlier = _earlier(tmp_path, job)
    prev = replace(read_result(result_path(earlier, job.job_id)), **change)
    key = job.key(PREPARED["cpython3.13t"].info.key)
    assert why in reuse.why_not(job, key, prev, _index(sha_now)[0])
    run, kept = reuse.pick([(job, key)], {job.job_id: (prev, str(earlier))}, _index(sha_now)[0])
    assert run == [(job, key)] and kept == []


def test_index_unreadable_or_local_package_runs_again(tmp_path):
    (job,) = _jobs('{name: six, version: "==1.17.0"}')
    key = job.key(PREPARED["cpython3.13t"].info.key)
    prev = read_result(result_path(_earlier(tmp_path, job), job.job_id))

    def down(name: str, spec: str) -> str:
        raise fetch.IndexUnavailable("the index's page for six: timed out")

    assert "could not be checked" in reuse.why_not(job, key, prev, down)

    def gone(name: str, spec: str) -> str:
        raise fetch.NoSdist("six ==1.17.0: no sdist with a sha256")

    assert "could not be checked (six ==1.17.0: no sdist" in reuse.why_not(job, key, prev, gone)
    local = replace(job, package=replace(job.package, path=str(tmp_path)))
    assert "local package" in reuse.why_not(local, key, prev, _index()[0])


def test_a_result_of_older_rules_is_decided_again_from_its_phases(tmp_path):
    """The earlier run's file says `compatible` with no findings (as older rules might have);
    its phases hold a GIL-off-only crash: reused, it is what the rules say now."""
    (job,) = _jobs('{name: six, version: "==1.17.0"}')
    earlier = _earlier(tmp_path, job, verdict="compatible", findings=(), qualifier="")
    run, kept = reuse.pick(
        [(job, job.key(PREPARED["cpython3.13t"].info.key))], reuse.earlier_results([earlier]), _index()[0]
    )
    assert run == []
    now = decide(kept[0].phases, settings=job.settings)
    assert kept[0].verdict == now.verdict == "ft-crash"
    assert [f.kind for f in kept[0].findings] == [f.kind for f in now.findings]


def test_findings_the_rules_still_make_keep_their_reproduce_lines(tmp_path):
    (job,) = _jobs('{name: six, version: "==1.17.0"}')
    earlier = _earlier(tmp_path, job)
    prev = read_result(result_path(earlier, job.job_id))
    assert any(f.reproduce for f in prev.findings)
    again = reuse.redecided(prev, job, str(earlier))
    assert [(f.kind, f.reproduce, f.recipe) for f in again.findings] == [
        (f.kind, f.reproduce, f.recipe) for f in prev.findings
    ]


def test_two_earlier_runs_with_different_results_reuse_neither_and_never_pick_by_finished(tmp_path, caplog):
    """The one that finished last used to win: a planted file with a late `finished` took over.
    Now a job with two different results is not reused at all; identical copies are."""
    (job,) = _jobs('{name: six, version: "==1.17.0"}')
    old = _earlier(tmp_path, job, finished="2026-11-01T00:00:00Z", case="mix")
    same = tmp_path / "same"
    shutil.copytree(old, same)
    assert reuse.earlier_results([old, same])[job.job_id][1] == str(old)
    new = tmp_path / "newer"
    shutil.copytree(old, new)
    res = read_result(result_path(new, job.job_id))
    write_json_atomic(result_path(new, job.job_id), replace(res, finished="2099-11-08T00:00:00Z").to_dict())
    _manifest(new)
    with caplog.at_level(logging.WARNING):
        found = reuse.earlier_results([old, new])
    assert job.job_id not in found
    assert "neither is reused" in caplog.text


def _planted(tmp_path: Path, job: plan.Job) -> tuple[Path, dict]:
    """An earlier --out with the job's genuine result, and a forged `compatible` one for it."""
    earlier = _earlier(tmp_path, job)
    forged = json.loads(result_path(earlier, job.job_id).read_text())
    forged.update(verdict="compatible", findings=[], phases=[], finished="2099-01-01T00:00:00Z")
    return earlier, forged


def test_only_the_files_the_manifest_lists_at_a_fixed_depth_are_read(tmp_path, caplog):
    """A package's planted result in its workspace (logs/results/), in a shard's artifact laid out
    as upload-artifact does, or beside the real one: never read, or refused and named."""
    (job,) = _jobs('{name: six, version: "==1.17.0"}')
    earlier, forged = _planted(tmp_path, job)
    for where in (
        earlier / "work" / job.job_id / "logs" / "results",
        earlier / "shard-1" / "results",
        earlier / "logs",
    ):
        write_json_atomic(where / f"{job.job_id}.json", forged)
        write_json_atomic(where / "manifest.json", {"schema": manifest.SCHEMA, "results": {}})
    write_json_atomic(earlier / "results" / "cpython3.13t--idna.json", {**forged, "job_id": "cpython3.13t--idna"})
    with caplog.at_level(logging.WARNING):
        found = reuse.earlier_results([earlier])
    assert found[job.job_id][0].verdict == "ft-crash"  # the genuine one
    assert list(found) == [job.job_id]
    refused = [r.getMessage() for r in caplog.records]
    assert refused == [
        f"--reuse: {earlier / 'results' / 'cpython3.13t--idna.json'}: refused: "
        f"not listed in {earlier / 'manifest.json'}"
    ]


@pytest.mark.parametrize(
    ("tamper", "why"),
    [
        ("replace", "its sha256 is not the one its manifest lists"),
        ("rename", "not the job its name says"),
        ("nomanifest", "no manifest"),
        ("badmanifest", "not an ft-harness manifest"),
    ],
)
def test_a_file_the_manifest_does_not_vouch_for_is_refused(tmp_path, caplog, tamper, why):
    (job,) = _jobs('{name: six, version: "==1.17.0"}')
    earlier, forged = _planted(tmp_path, job)
    path = result_path(earlier, job.job_id)
    if tamper == "replace":  # the file swapped after the run wrote its manifest
        write_json_atomic(path, forged)
    elif tamper == "rename":  # another job's file, listed under this name (or a manifest forged)
        other = {**forged, "job_id": "cpython3.13t--idna"}
        write_json_atomic(path, other)
        _manifest(earlier)
    elif tamper == "nomanifest":
        (earlier / manifest.NAME).unlink()
    else:
        (earlier / manifest.NAME).write_text('{"results": {"x": 1}}')
    with caplog.at_level(logging.WARNING):
        assert reuse.earlier_results([earlier]) == {}
    assert len(caplog.records) == 1 and why in caplog.text


def test_a_malformed_earlier_result_is_one_log_line_and_the_job_runs(tmp_path, caplog):
    """#46: a phase whose excerpt is a number (read back fine, raised in verdict.decide) stopped
    the whole run with 0 jobs.  Now it is refused as it is read, one line, and the job runs; the
    other job's good result is still reused."""
    job, other = _jobs('{name: six, version: "==1.17.0"}', '{name: idna, version: "==3.10"}')
    earlier = _earlier(tmp_path, job)
    good = json.loads(result_path(earlier, job.job_id).read_text())
    write_json_atomic(
        result_path(earlier, other.job_id),
        {**good, "job_id": other.job_id, "package": "idna", "key": other.key(PREPARED["cpython3.13t"].info.key)},
    )
    bad = json.loads(result_path(earlier, job.job_id).read_text())
    bad["phases"][1]["excerpt"] = 12345
    write_json_atomic(result_path(earlier, job.job_id), bad)
    _manifest(earlier)
    steps = FakeSteps()
    with caplog.at_level(logging.WARNING):
        summary = run_plan(
            [job, other],
            out=tmp_path / "out",
            backend=FakeBackend(),
            prepared=PREPARED,
            run_one=steps,
            reuse_from=[earlier],
            sdist_sha256=_index()[0],
        )
    assert [c["job"] for c in steps.calls] == [job.job_id] and summary.reused == [other.job_id]
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1 and "phases[1].excerpt: int where str is expected" in lines[0]


def test_a_result_that_breaks_the_redecision_makes_only_its_job_run(tmp_path, caplog):
    """Whatever an earlier result makes the check or verdict.decide raise stays in that job."""
    job, other = _jobs('{name: six, version: "==1.17.0"}', '{name: idna, version: "==3.10"}')
    key = job.key(PREPARED["cpython3.13t"].info.key)
    prev = read_result(result_path(_earlier(tmp_path, job), job.job_id))

    def boom(name: str, spec: str) -> str:
        raise RecursionError("maximum recursion depth exceeded")

    with caplog.at_level(logging.WARNING):
        run, kept = reuse.pick([(job, key)], {job.job_id: (prev, "earlier")}, boom)
    assert run == [(job, key)] and kept == []
    assert len(caplog.records) == 1 and "RecursionError" in caplog.text
