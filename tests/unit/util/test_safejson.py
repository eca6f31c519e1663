"""harness.util.safejson (#56): an integer of thousands of digits in a result file, a report.json
or a manifest is one line naming the file -- a skipped result, or exit 2 -- never a traceback
(CPython's 4,300-digit limit on int-string conversion raises a ValueError that is not a
JSONDecodeError; fewer digits raised later, as an OverflowError in the type check)."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.config import estimate
from harness.core.errors import ConfigError
from harness.parse.probe import parse_probe
from harness.results import manifest
from harness.results.load import load_json, load_results, read_one
from harness.reuse import reuse
from harness.util import safejson
from tests.conftest import HARNESS, SOURCE_PATH

DATA = Path(__file__).resolve().parents[2] / "data" / "report"
RESULT = DATA / "run1" / "results" / "cp313t--attrs.json"
LONG = "9" * 5000  # past CPython's int_max_str_digits (4300)
SHORT = "9" * 4000  # under it: parsed by json.loads, then an OverflowError where it meets a float


def test_loads_refuses_a_long_integer_with_its_line():
    doc = '{\n "a": "123456789012345678901234567890",\n "b": [1,\n  -' + LONG + "]\n}"
    with pytest.raises(safejson.NumberTooLong) as e:
        safejson.loads(doc)
    assert isinstance(e.value, json.JSONDecodeError) and isinstance(e.value, ValueError)
    assert (e.value.lineno, e.value.msg) == (4, "an integer of 5000 digits (at most 20)")


def test_loads_takes_what_json_takes():
    doc = {"n": 2**63 - 1, "m": -(10**19), "f": 1.5e300, "s": "9" * 5000, "x": [None, True]}
    assert safejson.loads(json.dumps(doc).encode()) == doc
    assert safejson.loads(json.dumps(10**19)) == 10**19
    with pytest.raises(safejson.NumberTooLong):
        safejson.loads(json.dumps(10**20 + 1))


def _bad_result(d: Path, digits: str) -> Path:
    path = d / "results" / RESULT.name
    path.parent.mkdir(parents=True)
    text = RESULT.read_text().replace('"exit_code": 0', f'"exit_code": {digits}', 1)
    assert digits in text
    path.write_text(text)
    return path


@pytest.mark.parametrize("digits", [LONG, SHORT], ids=["5000-digits", "4000-digits"])
def test_a_result_with_a_long_integer_is_skipped_and_named(tmp_path, digits):
    path = _bad_result(tmp_path, digits)
    results, problems = load_results([tmp_path])
    assert results == []
    assert len(problems) == 1
    assert re.fullmatch(
        rf"{re.escape(str(path))}: not a valid result \(line \d+: an integer of {len(digits)} digits \(at most 20\)\)",
        problems[0],
    )
    res, why = read_one(path)
    assert res is None and why == problems[0]


def test_a_probe_with_a_long_integer_is_an_empty_probe():
    assert parse_probe(('{"gil_enabled": ' + LONG + "}").encode()) == parse_probe(None)


def test_durations_from_result_files_name_the_file(tmp_path):
    path = _bad_result(tmp_path, LONG)
    with pytest.raises(ConfigError) as e:
        estimate._from_results([path])
    assert "an integer of 5000 digits" in str(e.value) and e.value.file == str(path)


def test_load_json_is_one_line_with_the_line(tmp_path):
    f = tmp_path / "report.json"
    f.write_text('{"packages": [],\n "n": ' + LONG + "}")
    with pytest.raises(ConfigError) as e:
        load_json(f)
    assert (e.value.file, e.value.line) == (str(f), 2)
    assert "an integer of 5000 digits (at most 20)" in str(e.value)


def _earlier(tmp_path: Path, results: dict[str, str], manifest_text: str | None = None) -> Path:
    d = tmp_path / "earlier"
    (d / "results").mkdir(parents=True)
    for name, text in results.items():
        (d / "results" / name).write_text(text)
    if manifest_text is None:
        manifest.write(d, {Path(n).stem: hashlib.sha256(t.encode()).hexdigest() for n, t in results.items()})
    else:
        (d / manifest.NAME).write_text(manifest_text)
    return d


def test_reuse_refuses_a_listed_result_with_a_long_integer(tmp_path, caplog):
    good = RESULT.read_text()
    bad = good.replace('"exit_code": 0', f'"exit_code": {LONG}', 1)
    d = _earlier(tmp_path, {RESULT.name: bad})
    with caplog.at_level(logging.WARNING):
        assert reuse.earlier_results([d]) == {}
    assert len(caplog.records) == 1
    assert "an integer of 5000 digits (at most 20)" in caplog.text and RESULT.name in caplog.text


def test_reuse_refuses_a_manifest_with_a_long_integer(tmp_path, caplog):
    text = json.dumps({"schema": manifest.SCHEMA, "results": {}, "n": 0}).replace("0}", LONG + "}")
    d = _earlier(tmp_path, {RESULT.name: RESULT.read_text()}, text)
    with caplog.at_level(logging.WARNING):
        assert reuse.earlier_results([d]) == {}
    assert len(caplog.records) == 1
    assert f"{d / manifest.NAME}: cannot be read (an integer of 5000 digits" in caplog.text


# ---------------------------------------------------------------- through the CLI


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*HARNESS, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", **SOURCE_PATH},
    )


def test_report_skips_the_result_and_diff_and_previous_exit_2(tmp_path):
    shutil.copytree(DATA / "run1", tmp_path / "good")
    bad_dir = tmp_path / "bad"
    _bad_result(bad_dir, LONG)
    line = RESULT.read_text().split('"exit_code": 0')[0].count("\n") + 1
    r = _cli("report", "bad", "good", "--out", "rep-bad", cwd=tmp_path)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert (
        f"ft-harness: skipped bad/results/{RESULT.name}: not a valid result "
        f"(line {line}: an integer of 5000 digits (at most 20))"
    ) in r.stderr.splitlines()

    r = _cli("report", "good", "--out", "rep", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    report = (tmp_path / "rep" / "report.json").read_text()
    (tmp_path / "long.json").write_text(report.replace('"packages"', f'"n": {LONG}, "packages"', 1))
    line = report[: report.index('"packages"')].count("\n") + 1
    want = f"long.json:{line}: not valid JSON: an integer of 5000 digits (at most 20)"
    for args in (("diff", "rep/report.json", "long.json"), ("report", "good", "--previous", "long.json")):
        r = _cli(*args, "--out", "rep2", cwd=tmp_path) if args[0] == "report" else _cli(*args, cwd=tmp_path)
        assert (r.returncode, r.stderr.strip()) == (2, want), (args, r.stderr)
