"""``report --reported reported.yaml`` and the feed's memory through the real command line
(issue #57 acceptance 3): the link in findings.json, report.md and the package page, kept by the
next run; a wrong reported.yaml is one line and exit 2; an id of no finding a warning."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from markupsafe import escape

from harness.core.errors import ConfigError
from harness.results import reported
from tests.conftest import ROOT, cli

RUN1 = ROOT / "tests" / "data" / "report" / "run1"
RUN0 = ROOT / "tests" / "data" / "report" / "run0"
URL = "https://github.com/example/fx-race/issues/12"
EVIL = 'https://example.test/a"><script>alert(1)</script>'


def _ids(out: Path) -> dict[str, dict]:
    return {e["package"] + " " + e["kind"]: e for e in json.loads((out / "findings.json").read_text())["findings"]}


def test_a_reported_link_is_shown_everywhere_and_kept_by_the_next_run(tmp_path: Path) -> None:
    shutil.copytree(RUN0, tmp_path / "run0")
    shutil.copytree(RUN1, tmp_path / "run1", ignore=shutil.ignore_patterns("work"))
    first = cli("report", str(tmp_path / "run0"), "--out", str(tmp_path / "week1"))
    assert first.returncode == 0, first.stderr
    week1 = _ids(tmp_path / "week1")
    race, unsafe = week1["fx-hang ft-race"], week1["fx-thread-unsafe thread-unsafe"]
    (tmp_path / "reported.yaml").write_text(
        f"# filed upstream\n{unsafe['id']}: {EVIL}\nfedcba9876543210: {URL}\n", encoding="utf-8"
    )
    out = tmp_path / "week2"
    r = cli(
        "report", str(tmp_path / "run1"), "--out", str(out),
        "--previous", str(tmp_path / "week1"), "--reported", str(tmp_path / "reported.yaml"),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("warning") == 1 and "reported.yaml:3: warning: fedcba9876543210 names no finding" in r.stderr
    assert f"wrote {out / 'findings.json'}" in r.stdout
    week2 = _ids(out)
    assert week2["fx-thread-unsafe thread-unsafe"]["id"] == unsafe["id"]  # the same finding, a day later
    assert week2["fx-thread-unsafe thread-unsafe"]["reported"] == EVIL
    assert week2["fx-thread-unsafe thread-unsafe"]["first_seen"] == unsafe["first_seen"]
    assert "fx-hang ft-race" not in week2 and race["id"] not in {e["id"] for e in week2.values()}  # gone: dropped
    md = (out / "report.md").read_text()
    assert "reported: <https://example.test/a%22%3E%3Cscript%3Ealert(1)%3C/script%3E>" in md and "<script>" not in md
    for page in (out / "site" / "pkg" / "cp313t--fx-thread-unsafe.html", out / "site" / "bugs" / "index.html"):
        text = page.read_text()
        assert f'reported: <a href="{escape(EVIL)}"' in text and "<script>alert" not in text, page
    # the next run, without --reported: the feed it finds in --out keeps the link
    again = cli("report", str(tmp_path / "run1"), "--out", str(out))
    assert again.returncode == 0 and "warning" not in again.stderr, again.stderr
    assert _ids(out)["fx-thread-unsafe thread-unsafe"]["reported"] == EVIL
    assert "reported: <https://example.test/a%22%3E" in (out / "report.md").read_text()


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("- https://x.test/1\n", "reported.yaml:1: the top level must be a mapping of finding id to issue URL"),
        ("0123456789abcdef: http://github.com/a/b/issues/1\n", "reported.yaml:1: 0123456789abcdef: the upstream issue must be an https:// URL, got 'http://github.com/a/b/issues/1'"),
        ("# ours\n0123456789abcdef:\n", "reported.yaml:2: 0123456789abcdef: the upstream issue must be an https:// URL, got no URL"),
        ("0123456789abcdef: [https://x.test/1]\n", "reported.yaml:1: 0123456789abcdef: the upstream issue must be an https:// URL, got not a URL"),
        ("0123456789ABCDEF: https://x.test/1\n", "reported.yaml:1: '0123456789ABCDEF' is not a finding id: copy the 16 hex digits"),
        ("0123456789abcdef: https://x.test/1\n0123456789abcdef: https://x.test/2\n", "reported.yaml:2: 0123456789abcdef: listed twice (first on line 1)"),
        ("0123456789abcdef: javascript:alert(1)\n", "reported.yaml:1: 0123456789abcdef: the upstream issue must be an https:// URL"),
        ("0123456789abcdef: https://x.test/1\n\tx: 1\n", "reported.yaml:2: a tab character"),
        ("a: [\n", "reported.yaml:2: YAML syntax error"),
    ],
)  # fmt: skip
def test_a_wrong_reported_yaml_is_one_line(tmp_path: Path, text: str, line: str) -> None:
    path = tmp_path / "reported.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        reported.load(path)
    got = str(e.value).replace(str(tmp_path) + "/", "")
    assert got.startswith(line) and "\n" not in got, got


def test_the_cli_refuses_a_wrong_reported_yaml_before_any_work(tmp_path: Path) -> None:
    (tmp_path / "reported.yaml").write_text("0123456789abcdef: http://x.test/1\n")
    shutil.copytree(RUN1 / "results", tmp_path / "run1" / "results")
    r = cli("report", str(tmp_path / "run1"), "--reported", str(tmp_path / "reported.yaml"))
    assert r.returncode == 2 and r.stdout == ""
    (msg,) = r.stderr.strip().splitlines()
    assert msg.startswith(f"{tmp_path / 'reported.yaml'}:1: 0123456789abcdef: the upstream issue must be")
    assert not (tmp_path / "run1" / "report.json").exists()
    missing = cli("report", str(tmp_path / "run1"), "--reported", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "nope.yaml: no such file" in missing.stderr
    (tmp_path / "prev").mkdir()
    (tmp_path / "prev" / "findings.json").write_text('{"schema": 1, "findings": [{"id": 1}]}')
    bad = cli("report", str(tmp_path / "run1"), "--previous", str(tmp_path / "prev"))
    assert bad.returncode == 2 and "findings.json: not a findings.json the harness can read: findings[0]" in bad.stderr
