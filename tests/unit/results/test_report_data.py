"""The report tests' result files (tests/data/report) are what the code makes, not hand-written.

They are written by tests/data/report/make_results.py through harness's own model, reproduce
lines and recipes: when any of those changes, these tests say which files are stale and how to
write them again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.results.load import load_results
from harness.verdict.reprocommands import probe_command, reproduce
from tests.data.report import make_results

DATA = make_results.HERE
AGAIN = "stale: run `python tests/data/report/make_results.py` and commit what it writes"


def files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for sub in make_results.SETS
        for p in sorted((root / sub).rglob("*"))
        if p.is_file()
    }


def test_the_stored_result_files_are_what_the_generator_writes_now(tmp_path: Path) -> None:
    make_results.main(tmp_path)
    made, stored = files(tmp_path), files(DATA)
    assert sorted(stored) == sorted(made), AGAIN
    assert [name for name in made if made[name] != stored[name]] == [], AGAIN


@pytest.mark.parametrize("sub", ["run1", "run0", "hostile"])
def test_every_reproduce_line_is_the_one_its_phase_gives(sub: str) -> None:
    results, problems = load_results([DATA / sub])
    assert problems == [] and results
    seen = 0
    for r in results:
        by = {p.name: p for p in r.phases}
        for f in r.findings:
            if f.kind == "gil-reenabled":
                want = probe_command(by.get("probe"), r.phases, f.module or "")
            else:
                want = reproduce(by[f.phase], f.test_id or None) if f.phase in by else ""
            assert f.reproduce == want, (r.job_id, f.kind)
            seen += bool(want)
    assert seen
