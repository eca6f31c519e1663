"""`ft-harness report --matrix`: only results of planned jobs are published (issue #32).

Shards' artifacts are merged by the report job; a result file nobody planned (written by hand,
by package code, by another matrix) is listed on stderr and kept out of report.json.  The
results here are written by a real `ft-harness run` with a scripted backend."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from harness import __main__ as cli_main
from harness import backends
from harness.backends import Opened, Prepared
from harness.config import matrix, plan
from harness.core.model import JobResult
from harness.job import runner
from tests.unit.job.test_runner import INFO, FakeBackend, FakeSteps

INTERP = 'interpreters: [{name: cpython3.13t, version: "3.13.5", source: "debian:trixie"}]\n'
SOURCED = replace(INFO, source="debian:trixie")


def _matrix(tmp: Path, names: list[str], settings: str = "") -> Path:
    path = tmp / "matrix.yaml"
    path.write_text(INTERP + settings + "packages:\n" + "".join(f"  - {{name: {n}}}\n" for n in names))
    return path


@pytest.fixture
def fake_run(monkeypatch: pytest.MonkeyPatch):
    def open_fake(jobs, *, cache, run_id, workers, say, heartbeat) -> Opened:
        return Opened(
            backend=FakeBackend(),
            prepared={j.interpreter.name: Prepared(info=SOURCED, python="/fake/python", cache_hit=True) for j in jobs},
        )

    monkeypatch.setitem(backends.BACKENDS, "fake", open_fake)
    monkeypatch.setattr(runner, "run_job", FakeSteps({}))
    monkeypatch.setenv("CI", "true")

    def run(m: Path, out: Path) -> None:
        assert (
            cli_main.main(
                [
                    "run",
                    "--matrix",
                    str(m),
                    "--out",
                    str(out),
                    "--backend",
                    "fake",
                    "--cache",
                    str(out.parent / "cache"),
                ]
            )
            == 0
        )

    return run


def test_a_forged_or_unplanned_result_is_listed_and_not_published(tmp_path, fake_run, capsys):
    m = _matrix(tmp_path, ["alpha", "beta"])
    fake_run(m, tmp_path / "shard-1")
    other = tmp_path / "other"  # the same jobs under other settings: other keys
    other.mkdir()
    fake_run(_matrix(other, ["alpha", "beta"], "settings: {threads: 3}\n"), other / "out")
    capsys.readouterr()

    forged = tmp_path / "shard-2" / "results"  # one more shard's artifact
    forged.mkdir(parents=True)
    alpha = json.loads((tmp_path / "shard-1" / "results" / "cpython3.13t--alpha.json").read_text())
    (forged / "cpython3.13t--evil.json").write_text(
        json.dumps({**alpha, "job_id": "cpython3.13t--evil", "package": "evil", "verdict": "compatible"})
    )
    (forged / "cpython3.13t--gamma.json").write_text(
        json.dumps(  # planned later, not now
            {**alpha, "job_id": "cpython3.13t--gamma", "package": "gamma"}
        )
    )
    (tmp_path / "shard-1" / "results" / "cpython3.13t--beta.json").unlink()  # the shard lost it
    shutil.copy(other / "out" / "results" / "cpython3.13t--beta.json", forged)  # another matrix's
    built = {
        **alpha,
        "job_id": "cpython3.13t--alpha2",
        "package": "alpha2",
        "interpreter": {**alpha["interpreter"], "source": "python:/usr/bin/python3.13t"},
    }
    (forged / "cpython3.13t--alpha2.json").write_text(json.dumps(built))

    m3 = _matrix(tmp_path, ["alpha", "beta", "alpha2"])
    merged = tmp_path / "merged"
    code = cli_main.main(
        ["report", str(tmp_path / "shard-1"), str(tmp_path / "shard-2"), "--matrix", str(m3), "--out", str(merged)]
    )
    assert code == 0
    err = capsys.readouterr().err.splitlines()
    assert sorted(err) == [
        "ft-harness: cpython3.13t--alpha2: not published: its interpreter came from "
        "'python:/usr/bin/python3.13t', the plan's from 'debian:trixie'",
        "ft-harness: cpython3.13t--beta: not published: its key is not the planned job's "
        "(another package entry, version or settings)",
        "ft-harness: cpython3.13t--evil: not published: its job is not in the plan",
        "ft-harness: cpython3.13t--gamma: not published: its job is not in the plan",
        "missing results: cpython3.13t--alpha2, cpython3.13t--beta",
    ]
    report = json.loads((merged / "report.json").read_text())
    assert [p["job_id"] for p in report["packages"]] == ["cpython3.13t--alpha"]
    assert report["missing"] == ["cpython3.13t--alpha2", "cpython3.13t--beta"]
    text = (merged / "report.json").read_text() + (merged / "report.md").read_text()
    assert "evil" not in text and "gamma" not in text

    # without --matrix there is no plan to hold them to: a local merge keeps every valid file
    code = cli_main.main(
        ["report", str(tmp_path / "shard-1"), str(tmp_path / "shard-2"), "--out", str(tmp_path / "all")]
    )
    assert code == 0
    assert len(json.loads((tmp_path / "all" / "report.json").read_text())["packages"]) == 5


def test_a_planned_result_of_another_version_is_not_the_plans():
    spec = matrix.loads(INTERP.replace("3.13.5", "3.13.6") + "packages: [{name: alpha}]\n")
    (job,) = plan.make_plan(spec)
    result = JobResult(
        job_id=job.job_id, key=job.key(SOURCED.key), package="alpha", interpreter=SOURCED, verdict="compatible"
    )
    kept, refused = plan.in_plan([result], [job])
    assert kept == []
    assert refused == ["cpython3.13t--alpha: not published: its interpreter is 3.13.5, the plan's 3.13.6"]
    kept, refused = plan.in_plan([result], plan.make_plan(matrix.loads(INTERP + "packages: [{name: alpha}]\n")))
    assert (len(kept), refused) == (1, [])
