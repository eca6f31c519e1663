"""The manifest of kept results (#46): `run` writes OUT/manifest.json, `report --keep-results DIR`
copies exactly the results it merged into DIR/results/ with DIR/manifest.json, and `run --reuse`
reads nothing else.  A package's planted result in a shard's logs is listed as refused and never
reaches the kept results.  Real `ft-harness run`s with a scripted backend (test_planned_only)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from harness import __main__ as cli_main
from harness.results import manifest
from harness.reuse import reuse
from tests.unit.results.test_planned_only import _matrix, fake_run  # noqa: F401 - a fixture


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_run_writes_a_manifest_of_its_results(tmp_path, fake_run):  # noqa: F811
    fake_run(_matrix(tmp_path, ["alpha", "beta"]), tmp_path / "out")
    listed = manifest.read(tmp_path / "out")
    files = sorted((tmp_path / "out" / "results").glob("*.json"))
    assert listed == {p.stem: _sha(p) for p in files}
    assert sorted(listed) == ["cpython3.13t--alpha", "cpython3.13t--beta"]


def test_report_keeps_only_what_it_merged_and_lists_planted_files(tmp_path, fake_run, capsys):  # noqa: F811
    m = _matrix(tmp_path, ["alpha", "beta"])
    shard = tmp_path / "shards" / "shard-1"
    fake_run(m, shard)
    genuine = json.loads((shard / "results" / "cpython3.13t--alpha.json").read_text())
    forged = {**genuine, "verdict": "ft-crash", "finished": "2099-01-01T00:00:00Z"}
    planted = [
        shard / "work" / "cpython3.13t--beta" / "logs" / "results" / "cpython3.13t--alpha.json",
        shard / "work" / "cpython3.13t--beta" / "logs" / "manifest.json",
        shard / "work" / "results" / "cpython3.13t--alpha.json",
    ]
    for p in planted:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(forged))
    capsys.readouterr()
    keep = tmp_path / "next-results"
    assert (
        cli_main.main(
            ["report", str(shard), "--matrix", str(m), "--out", str(tmp_path / "merged"), "--keep-results", str(keep)]
        )
        == 0
    )
    err = capsys.readouterr().err
    for p in planted:
        assert f"ft-harness: {p}: refused: not at DIR/results/*.json" in err
    kept = sorted((keep / "results").glob("*.json"))
    assert [p.name for p in kept] == ["cpython3.13t--alpha.json", "cpython3.13t--beta.json"]
    assert manifest.read(keep) == {p.stem: _sha(p) for p in kept}
    assert all(_sha(p) == _sha(shard / "results" / p.name) for p in kept)  # byte for byte
    found = reuse.earlier_results([keep])
    assert {j: r.verdict for j, (r, _) in found.items()} == {
        "cpython3.13t--alpha": "compatible",
        "cpython3.13t--beta": "compatible",
    }


def test_report_without_a_plan_keeps_every_valid_result_and_refuses_misnamed_ones(tmp_path, fake_run, capsys):  # noqa: F811
    m = _matrix(tmp_path, ["alpha"])
    fake_run(m, tmp_path / "a")
    alpha = tmp_path / "a" / "results" / "cpython3.13t--alpha.json"
    (tmp_path / "a" / "results" / "cpython3.13t--zeta.json").write_bytes(alpha.read_bytes())
    capsys.readouterr()
    assert (
        cli_main.main(
            ["report", str(tmp_path / "a"), "--out", str(tmp_path / "m"), "--keep-results", str(tmp_path / "k")]
        )
        == 0
    )
    assert "cpython3.13t--zeta.json: refused: it holds job 'cpython3.13t--alpha'" in capsys.readouterr().err
    assert list(manifest.read(tmp_path / "k")) == ["cpython3.13t--alpha"]
