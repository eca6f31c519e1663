"""Result files: round-trip through JSON, atomic writes, job keys."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from harness.config import matrix, plan
from harness.core.evidence import Crash, Hang, HungTest, ModeCoverage, ParallelInfo, Wheel
from harness.core.model import (
    RESULT_SCHEMA,
    VERDICTS,
    Finding,
    InterpreterInfo,
    JobResult,
    Phase,
    TestCase,
    read_result,
)
from harness.util.safefiles import write_json_atomic

MATRIX = """\
interpreters: [{name: ft, version: "3.13.5", source: "debian:trixie"}]
packages:
  - {name: six, version: "1.17.0"}
  - {name: idna}
"""


def sample() -> JobResult:
    phase = Phase(
        name="threads-gil0-r1",
        kind="threads",
        gil=0,
        rep=1,
        command=("pytest", "-x"),
        env={"PYTHON_GIL": "0"},
        exit_code=1,
        duration=1.5,
        log="work/x/logs/a.log",
        tests={"t.py::test_a": TestCase(outcome="failed", message="boom", parallel=True)},
        counts={"failed": 1},
        gil_modules=("pkg._speedups",),
        crashes=(
            Crash(
                test_id="t.py::test_b",
                signal=11,
                fatal="Segmentation fault",
                stack_top='File "x.py", line 3 in f',
                worker=True,
            ),
        ),
        hang=Hang(tests=(HungTest(test_id="t.py::test_c", stack_top="x.py:9"),)),
        parallel=ParallelInfo(
            trusted=True, source="log", single={"t.py::test_d": "capsys"}, in_threads=("t.py::test_a",)
        ),
    )
    finding = Finding(
        kind="ft-race",
        test_id="t.py::test_a",
        modes=(0,),
        count=3,
        runs=5,
        evidence="junit",
        excerpt="boom",
        reproduce="cd x && pytest t.py::test_a",
    )
    return JobResult(
        job_id="ft--six",
        key="k1",
        package="six",
        version="1.17.0",
        interpreter=InterpreterInfo(
            name="ft", version="3.13.5", key="cpython-3.13.5-ft-x", configure=("--disable-gil",)
        ),
        phases=(phase,),
        verdict="ft-race",
        findings=(finding,),
        links=("https://x",),
        coverage={"gil0": ModeCoverage(mode=0, known=True, in_threads=1, single=0, total=1)},
        wheel=Wheel(installed="built from sdist", available="sdist-only"),
    )


def test_round_trip(tmp_path: Path) -> None:
    res = sample()
    path = tmp_path / "results" / "ft--six.json"
    write_json_atomic(path, res.to_dict())
    back = read_result(path)
    assert back == res
    assert json.loads(path.read_text())["findings"][0]["ratio"] == "3/5"
    assert list(tmp_path.joinpath("results").iterdir()) == [path]  # no temp file left behind


def test_a_schema_2_result_reads_back_typed() -> None:
    # schema 2 kept a phase's crashes as {first crash..., "all": [...]} and dicts everywhere
    d = sample().to_dict()
    d["schema"] = 2
    ph = d["phases"][0]
    first = ph.pop("crashes")[0]
    ph["crash"] = dict(first, all=[first, dict(first, test_id="t.py::test_e")])
    ph["hang"] = {
        "tests": [{"test_id": "t.py::test_c", "stack_top": "x.py:9", "excerpt": ""}],
        "job_timeout": False,
        "test_id": "t.py::test_c",
        "excerpt": "",
    }
    back = JobResult.from_dict(d)
    p = back.phases[0]
    assert [c.test_id for c in p.crashes] == ["t.py::test_b", "t.py::test_e"] and p.crash.signal == 11
    assert p.hang.test_id == "t.py::test_c" and p.hang.stack_top == "x.py:9"
    assert p.parallel.single == {"t.py::test_d": "capsys"} and back.wheel.available == "sdist-only"
    assert back.coverage["gil0"].fraction == 1.0 and back.schema == RESULT_SCHEMA


def test_wrong_schema_is_refused(tmp_path: Path) -> None:
    d = sample().to_dict()
    d["schema"] = 99
    with pytest.raises(ValueError, match="schema 99"):
        JobResult.from_dict(d)
    with pytest.raises(ValueError, match="no 'key'"):
        JobResult.from_dict({k: v for k, v in sample().to_dict().items() if k != "key"})


def test_atomic_write_keeps_old_file_on_failure(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_json_atomic(path, {"a": 1})
    with pytest.raises(TypeError):
        write_json_atomic(path, {"a": object()})
    assert json.loads(path.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_verdict_order_is_the_contract() -> None:
    assert VERDICTS[0] == "build-failure" and VERDICTS[-3:] == ("compatible", "no-tests", "skipped")


def test_job_keys() -> None:
    spec = matrix.loads(MATRIX)
    jobs = plan.make_plan(spec)
    assert [j.job_id for j in jobs] == ["ft--six", "ft--idna"]
    a, b = jobs
    assert a.key("interp1") == plan.make_plan(matrix.loads(MATRIX))[0].key("interp1")  # stable
    assert a.key("interp1") != a.key("interp2")  # interpreter digest counts
    assert a.key("interp1") != b.key("interp1")
    changed = replace(a, settings=replace(a.settings, repeat=9))
    assert changed.key("interp1") != a.key("interp1")  # settings count


def test_a_phase_keeps_its_test_command_parts_across_the_disk() -> None:
    from harness.core.model import Phase, TestCommand

    tc = TestCommand(
        head=("py", "-P", "-m", "pytest"),
        options=("-v",),
        threads=("--iterations=2",),
        this_run=("-n", "auto"),
        paths=("tests",),
    )
    p = Phase(name="threads-gil0-r1", kind="threads", gil=0, command=tc.argv(), test_command=tc)
    back = Phase.from_dict(json.loads(json.dumps(p.to_dict())))
    assert back == p and back.test_command == tc
    assert back.command == ("py", "-P", "-m", "pytest", "-v", "--iterations=2", "-n", "auto", "tests")
    assert Phase.from_dict({"name": "install", "kind": "install", "test_command": None}).test_command is None


def test_planted_links_are_never_followed(tmp_path: Path) -> None:
    # issue #17: package code can replace a log or probe.json in its workspace with a link to a
    # host file; the host must neither read that file into a report nor write through the link
    import os

    from harness.parse import read_text
    from harness.util.safefiles import open_fresh, read_regular

    secret = tmp_path / "host-secret.txt"
    secret.write_text("the host's own file\n")
    ws = tmp_path / "work" / "logs"
    ws.mkdir(parents=True)
    (ws / "plain-gil0.log").symlink_to(secret)
    assert read_regular(ws / "plain-gil0.log", 1 << 20) is None
    assert read_text(ws / "plain-gil0.log") == ""
    os.mkfifo(ws / "fifo.log")
    assert read_regular(ws / "fifo.log", 1 << 20) is None  # and it does not block
    assert read_regular(ws, 1 << 20) is None  # a directory (`-r` with no file name in a requirements file)
    with open_fresh(ws / "plain-gil0.log") as f:  # the host's next write replaces the link
        f.write("the phase's own log\n")
    assert secret.read_text() == "the host's own file\n"
    assert not (ws / "plain-gil0.log").is_symlink()
    assert read_text(ws / "plain-gil0.log") == "the phase's own log\n"
    big = ws / "big.log"
    big.write_bytes(b"a" * 100 + b"b" * 100)
    assert read_regular(big, 50) == b"a" * 25 + b"\n[... cut ...]\n" + b"b" * 25
    (tmp_path / "work" / "linked").symlink_to(tmp_path)  # a parent that is a link: refused
    with pytest.raises(OSError):
        open_fresh(tmp_path / "work" / "linked" / "x.log")
