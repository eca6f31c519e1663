"""benchmarks/crosscheck.py: a run's event read from captured runs alone, and what reproduces what."""

from __future__ import annotations

import json

import pytest

from benchmarks.crosscheck import event, reproduced
from tests.unit.verdict.test_verdict import DATA


@pytest.mark.parametrize(
    ("case", "phase", "want"),
    [
        ("confirm-realloc", "confirm1-gil0-r1", "crashed"),  # SIGABRT, faulthandler's dump
        ("confirm-deadlock", "confirm1-gil0-r1", "hung"),  # pytest-timeout's thread method
        ("confirm-sharedbuf", "confirm1-gil0-r1", "failed"),  # the race, by assertion
        ("confirm-sharedbuf", "confirm1-gil1-r1", "passed"),
    ],
)
def test_the_event_of_a_captured_run_alone(case: str, phase: str, want: str) -> None:
    p = json.loads((DATA / case / "phases" / f"{phase}.json").read_text())
    text = (DATA / case / p["log"]).read_text()
    assert event(p["exit_code"], text) == want
    if want == "crashed":  # the same run as `sh -ec` reports it: 128 + the signal
        assert event(128 + p["signal"], text.replace("Fatal Python error", "")) == "crashed"
    assert event(None, "") == "hung"  # past the wall limit


def test_what_reproduces_each_kind() -> None:
    assert reproduced("ft-crash", (0,), {0: ["crashed", "failed"], 1: ["failed", "failed"]})
    assert not reproduced("ft-crash", (0,), {0: ["crashed"], 1: ["crashed"]})
    assert reproduced("crash", (0, 1), {0: ["crashed"], 1: ["passed", "crashed"]})
    assert reproduced("ft-race", (0,), {0: ["failed", "passed"], 1: ["passed", "passed"]})
    assert not reproduced("ft-race", (0,), {0: ["failed"], 1: ["failed"]})  # click's: thread-unsafe
    assert reproduced("thread-unsafe", (0, 1), {0: ["failed"], 1: ["failed"]})
    assert reproduced("thread-unsafe", (0, 1), {0: ["passed"], 1: ["passed", "failed"]})
    assert not reproduced("thread-unsafe", (0, 1), {0: ["failed"], 1: ["passed"]})
    assert reproduced("hang", (1,), {0: ["passed"], 1: ["hung"]})
    assert not reproduced("hang", (1,), {0: ["hung"], 1: ["passed"]})


def _planted(tmp_path, marker):
    """A result for six whose stored recipe writes a host file (#46): what a forged result file
    from an artifact, a cache or `run --reuse` could hold."""
    from dataclasses import replace

    from harness.core.model import read_result
    from harness.util.safefiles import write_json_atomic
    from harness.verdict import decide
    from tests.unit.reuse.test_reuse import RUN0
    from tests.unit.verdict.test_verdict import S
    from tests.unit.verdict.test_verdict import load as load_phases

    phases = tuple(load_phases("confirm-realloc"))
    d = decide(phases, settings=S)
    evil = f"# the recipe\npython3.13t -m venv ft\nid > {marker}\ntouch {marker}"
    from harness.core.suiterecord import TestSetup

    res = replace(
        read_result(RUN0 / "cp313t--attrs.json"),
        job_id="cp313t--six",
        package="six",
        test_setup=TestSetup(requires=("pytest-mock; python_version >= '3'",)),
        version="1.17.0",
        phases=phases,
        verdict=d.verdict,
        source="pypi",
        findings=tuple(replace(f, recipe=evil, test_id=f"{f.test_id}; touch {marker}") for f in d.findings),
    )
    write_json_atomic(tmp_path / "out" / "results" / "cp313t--six.json", res.to_dict())
    return res


def test_local_shows_every_rebuilt_recipe_and_runs_nothing_without_yes(tmp_path, capsys):
    from benchmarks.crosscheck import main

    marker = tmp_path / "planted-by-the-result"
    _planted(tmp_path, marker)
    assert main([str(tmp_path / "out"), "--backend", "local"]) == 2  # no --python
    assert main([str(tmp_path / "out"), "--backend", "local", "--python", "/usr/bin/python3"]) == 2
    out, err = capsys.readouterr()
    assert "# cp313t--six ft-crash:" in out
    assert "python -m pip install" in out and "pip download --no-deps --no-binary six" in out
    assert f"id > {marker}" not in out  # the stored text is not what would run
    assert f"'{marker}'" not in out and f"; touch {marker}'" in out  # a field, quoted as one word
    assert "not run:" in err and "--yes" in err
    assert not marker.exists()


def test_a_job_in_two_dirs_with_different_content_is_one_line_and_exit_2(tmp_path, capsys):
    import shutil

    from benchmarks.crosscheck import main

    _planted(tmp_path, tmp_path / "unused")
    other = tmp_path / "other"
    shutil.copytree(tmp_path / "out", other)
    f = other / "results" / "cp313t--six.json"
    data = json.loads(f.read_text())
    data["version"] = "0.0.0"
    f.write_text(json.dumps(data))
    assert main([str(tmp_path / "out"), str(other), "--backend", "local"]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("crosscheck: ") and "cp313t--six" in err and len(err.strip().splitlines()) == 1
    assert out == ""
