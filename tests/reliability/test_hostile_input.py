"""Hostile files through the real CLI (#17): result files package code or a shard could have
written, and the JSON files `diff`, `report --previous` and `report --history` are given.

Each case: the exit code, exactly one line on stderr, no traceback, nothing printed that a
terminal or the Actions runner would act on, and nothing lost (the good result is reported).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import HARNESS, SOURCE_PATH

pytestmark = pytest.mark.reliability
RUN1 = Path(__file__).parents[1] / "data" / "report" / "run1" / "results"
GOOD = RUN1 / "cp313t--fx-crash.json"  # a result with findings, excerpts, a reproduce line
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
COMMAND = re.compile(r"^\s*(::|##\[)", re.MULTILINE)


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*HARNESS, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        errors="replace",
        env={"PATH": "/usr/bin:/bin", **SOURCE_PATH},
    )


def inert(text: str) -> bool:
    return not RAW_CONTROL.search(text.replace("\n", "").replace("\t", "")) and not COMMAND.search(text)


def _variant(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        d = json.loads(GOOD.read_text())
        change(d)
        if isinstance(d.get("job_id"), str):
            d["job_id"] += "-bad"
        path.write_text(json.dumps(d))

    return write


def _link(target: str) -> Callable[[Path], None]:
    return lambda path: path.symlink_to(target)


# name -> how to write the bad file (its name is the case's); each is skipped with one line
RESULT_CASES: dict[str, Callable[[Path], None]] = {
    "duration-string": _variant(lambda d: d["phases"][0].update(duration="12s")),
    "duration-nan": _variant(lambda d: d["phases"][0].update(duration=math.nan)),
    "metadata-list": _variant(lambda d: d.update(metadata=["x"])),
    "job-id-int": _variant(lambda d: d.update(job_id=7)),
    "unknown-finding-kind": _variant(lambda d: d.update(findings=[{"kind": "pwned", "message": "x"}])),
    "unknown-verdict": _variant(lambda d: d.update(verdict="pwned")),
    "phases-not-a-list": _variant(lambda d: d.update(phases={"a": 1})),
    "deep-nesting": lambda p: p.write_text("[" * 200_000 + "]" * 200_000),
    "not-json": lambda p: p.write_text('{"job_id": '),
    "not-utf8": lambda p: p.write_bytes(b"\xff\xfe{}"),
    "empty": lambda p: p.write_bytes(b""),
    "fifo": lambda p: os.mkfifo(p),
    "link-to-dev-zero": _link("/dev/zero"),
    "link-out-of-the-dir": _link(str(GOOD)),
    "oversized": lambda p: os.truncate(p.open("wb").name, 65 << 20),  # sparse: no disk used
    "a-directory": lambda p: p.mkdir(),
    "name-with-escapes\x1b]0;pwn\x07\n::error::x": lambda p: p.write_text("[]"),
    "integer-5000-digits": lambda p: p.write_text(GOOD.read_text().replace("{", '{"n": ' + "9" * 5000 + ",", 1)),
}


@pytest.mark.parametrize("case", list(RESULT_CASES), ids=[re.sub(r"\W", "_", c) for c in RESULT_CASES])
def test_report_skips_a_hostile_result_file_with_one_line(case: str, tmp_path: Path) -> None:
    res = tmp_path / "run" / "results"
    res.mkdir(parents=True)
    shutil.copy(GOOD, res / GOOD.name)
    RESULT_CASES[case](res / f"{case}.json")
    r = run_cli("report", str(tmp_path / "run"), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ft-harness: skipped "), r.stderr
    assert "Traceback" not in r.stderr and inert(r.stderr) and inert(r.stdout), repr(r.stderr)
    report = json.loads((tmp_path / "out" / "report.json").read_text())  # nothing lost
    assert [p["job_id"] for p in report["packages"]] == [json.loads(GOOD.read_text())["job_id"]]
    for name in ("report.md", "junit.xml", "site/index.html"):
        assert (tmp_path / "out" / name).is_file()


def test_package_text_in_a_valid_result_reaches_no_terminal_log_or_markdown_raw(tmp_path: Path) -> None:
    """A version, notes, messages and excerpts with ESC/OSC/BEL/NUL and '::error' lines: the
    result is reported (it is valid), and stdout, report.md and diff's lines stay inert."""
    res = tmp_path / "run" / "results"
    res.mkdir(parents=True)
    payload = "\n::error file=x::pwned\x1b]0;title\x07\x1b[2J\x00\r::warning::y\u202e"
    d = json.loads(GOOD.read_text())
    shutil.copy(GOOD, res / GOOD.name)
    d.update(job_id=d["job_id"] + "-evil", version="1.0" + payload, notes="n" + payload)
    for f in d["findings"]:
        f.update(message="m" + payload, excerpt="e" + payload)
    assert d["findings"]
    (res / f"{d['job_id']}.json").write_text(json.dumps(d))  # named by its job, as the harness names it
    r = run_cli("report", str(tmp_path / "run"), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert inert(r.stdout)
    md = (tmp_path / "out" / "report.md").read_text()
    assert "::error file=x::pwned" in md  # the text is kept, visibly ...
    assert inert(md), [ln for ln in md.splitlines() if not inert(ln)][:3]  # ... and inert
    new = tmp_path / "out" / "report.json"
    old = json.loads(new.read_text())
    for p in old["packages"]:  # a verdict not resting on counts: the change is no flakiness (#47)
        p["verdict"] = "gil-reenabled"
    (tmp_path / "old.json").write_text(json.dumps(old))
    r = run_cli("diff", str(tmp_path / "old.json"), str(new), cwd=tmp_path)
    assert r.returncode == 1 and r.stderr == "", r.stderr  # a regression: exit 1, nothing else
    assert len(r.stdout.strip().splitlines()) == 3 and inert(r.stdout), repr(r.stdout)


# JSON files named on the command line: one line naming the file (or the report), exit 2
def _report(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        d = {
            "packages": [
                {
                    "job_id": "cp313t--x",
                    "verdict": "compatible",
                    "name": "x",
                    "version": "1",
                    "interpreter": {"name": "cp313t"},
                }
            ]
        }
        change(d)
        path.write_text(json.dumps(d))

    return write


JSON_CASES: dict[str, Callable[[Path], None]] = {
    "deep-nesting": lambda p: p.write_text("[" * 200_000 + "]" * 200_000),
    "fifo": lambda p: os.mkfifo(p),
    "dev-zero": _link("/dev/zero"),
    "a-directory": lambda p: p.mkdir(),
    "not-utf8": lambda p: p.write_bytes(b"\xff\xfe{}"),
    "not-json": lambda p: p.write_text("{"),
    "missing": lambda p: None,
    "no-packages": lambda p: p.write_text("{}"),
    "version-int": _report(lambda d: d["packages"][0].update(version=5)),
    "name-list": _report(lambda d: d["packages"][0].update(name=["x"])),
    "interpreter-string": _report(lambda d: d["packages"][0].update(interpreter="cp313t")),
    "job-id-int": _report(lambda d: d["packages"][0].update(job_id=7)),
    "unknown-verdict": _report(lambda d: d["packages"][0].update(verdict="\x1b[2Jpwned")),
    "integer-5000-digits": lambda p: p.write_text('{"packages": [], "n": ' + "9" * 5000 + "}"),
}
GOOD_REPORT = _report(lambda d: None)


@pytest.mark.parametrize("command", ["diff-old", "diff-new", "report-previous"])
@pytest.mark.parametrize("case", list(JSON_CASES))
def test_a_hostile_json_argument_is_one_line_exit_2(case: str, command: str, tmp_path: Path) -> None:
    bad, good = tmp_path / f"{case}.json", tmp_path / "good.json"
    JSON_CASES[case](bad)
    GOOD_REPORT(good)
    if command == "report-previous":
        res = tmp_path / "run" / "results"
        res.mkdir(parents=True)
        shutil.copy(GOOD, res / GOOD.name)
        args = ["report", str(tmp_path / "run"), "--out", str(tmp_path / "out"), "--previous", str(bad)]
    else:
        args = ["diff", *((bad, good) if command == "diff-old" else (good, bad))]
    r = run_cli(*map(str, args), cwd=tmp_path)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert len(lines) == 1 and "Traceback" not in r.stderr and inert(r.stderr), r.stderr
    assert str(bad) in lines[0] or re.match(r"(old|new) report", lines[0]), lines[0]


def test_a_hostile_history_file_is_one_line_exit_2(tmp_path: Path) -> None:
    res = tmp_path / "run" / "results"
    res.mkdir(parents=True)
    shutil.copy(GOOD, res / GOOD.name)
    for case in ("deep-nesting", "fifo", "not-utf8", "integer-5000-digits"):
        bad = tmp_path / f"{case}.json"
        JSON_CASES[case](bad)
        r = run_cli(
            "report", str(tmp_path / "run"), "--out", str(tmp_path / "out"), "--history", str(bad), cwd=tmp_path
        )
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "Traceback" not in r.stderr and str(bad) in r.stderr
