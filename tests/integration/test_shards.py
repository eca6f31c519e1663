"""The workflow's path, locally: a matrix run as 3 shards into 3 dirs, merged, equals one unsharded run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import cli, fixture_matrix

pytestmark = [pytest.mark.integration, pytest.mark.slow]
PKGS = ["ft_baseline", "ft_clean", "ft_gilslot", "ft_nobuild", "ft_notests"]
SETTINGS = "settings: {repeat: 1, iterations: 2, gil_modes: [0, 1], test_timeout: 30}"


def normalised(report: dict) -> list[dict]:
    """A report without what legitimately differs between two runs: times and log text."""
    out = []
    for p in report["packages"]:
        out.append({
            "job_id": p["job_id"], "name": p["name"], "version": p["version"], "verdict": p["verdict"],
            "qualifier": p.get("qualifier", ""),
            "findings": sorted((f["kind"], f.get("test_id", ""), tuple(f.get("modes", ())), f.get("ratio", ""))
                               for f in p["findings"]),
            "phases": [(ph["name"], ph.get("exit_code")) for ph in p["phases"]],
        })
    return out


def test_three_shards_merge_to_the_unsharded_report(tmp_path: Path, ft_interpreter) -> None:
    m = fixture_matrix(tmp_path, PKGS, SETTINGS)
    r = cli("run", "--matrix", str(m), "--out", str(tmp_path / "whole"), "--backend", "local", "--jobs", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    plan = json.loads(cli("plan", "--matrix", str(m), "--shards", "3", "--format", "github").stdout)
    shards = [e["shard"] for e in plan["include"]]
    assert len(shards) == 3
    dirs = []
    for s in shards:
        d = tmp_path / f"shard-{s.split('/')[0]}"
        r = cli("run", "--matrix", str(m), "--out", str(d), "--backend", "local", "--shard", s, "--jobs", "2")
        assert r.returncode == 0, r.stdout + r.stderr
        dirs.append(d)
    ids = [sorted(p.stem for p in (d / "results").glob("*.json")) for d in dirs]
    assert sum(len(i) for i in ids) == len(PKGS) and len(set().union(*map(set, ids))) == len(PKGS)
    r = cli("report", *map(str, dirs), "--out", str(tmp_path / "merged"), "--matrix", str(m))
    assert r.returncode == 0, r.stdout + r.stderr
    merged = json.loads((tmp_path / "merged" / "report.json").read_text())
    whole = json.loads((tmp_path / "whole" / "report.json").read_text())
    assert merged["missing"] == []
    assert normalised(merged) == normalised(whole)
    # a shard missing from the merge is reported, not dropped
    r = cli("report", *map(str, dirs[:2]), "--out", str(tmp_path / "partial"), "--matrix", str(m))
    partial = json.loads((tmp_path / "partial" / "report.json").read_text())
    assert sorted(partial["missing"]) == ids[2]
    # the same job in two shards is an error naming both files
    dup = tmp_path / "dup"
    (dup / "results").mkdir(parents=True)
    src = next((dirs[0] / "results").glob("*.json"))
    doc = json.loads(src.read_text())
    doc["verdict"] = "crash"
    (dup / "results" / src.name).write_text(json.dumps(doc))
    r = cli("report", str(dirs[0]), str(dup), "--out", str(tmp_path / "bad"))
    assert r.returncode == 2 and src.name in r.stderr, r.stderr
