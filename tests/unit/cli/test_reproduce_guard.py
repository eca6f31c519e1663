"""``ft-harness reproduce`` runs text a report file holds (#30): it shows it and asks first
(``--yes`` skips the question); the recipe's interpreter name stays a plain name."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import HARNESS, ROOT, SOURCE_PATH, cli

DATA = Path(__file__).resolve().parents[2] / "data" / "report" / "run0" / "results"


@pytest.fixture
def forged(tmp_path: Path) -> tuple[Path, Path]:
    """A report whose fx-crash finding's command and recipe were rewritten by someone else."""
    marker = tmp_path / "PWNED"
    res = tmp_path / "in" / "results"
    res.mkdir(parents=True)
    d = json.loads((DATA / "cp313t--fx-crash.json").read_text())
    d["findings"][0]["reproduce"] = f"touch {marker}; false"
    d["findings"][0]["recipe"] = f"# a recipe\n../../../{tmp_path.name}/evil -m venv ft\ntouch {marker}\n"
    (res / "cp313t--fx-crash.json").write_text(json.dumps(d))
    r = cli("report", str(tmp_path / "in"), "--out", str(tmp_path / "out"), timeout=120)
    assert r.returncode == 0, r.stderr
    return tmp_path / "out", marker


def test_without_a_terminal_and_without_yes_nothing_runs(forged) -> None:
    out, marker = forged
    r = cli("reproduce", str(out), "fx-crash", timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"touch {marker}; false" in r.stdout  # shown
    assert (
        r.stderr.strip().splitlines()[-1].startswith("ft-harness reproduce: not run: the command comes from the report")
    )
    assert not marker.exists()
    r = cli("reproduce", str(out), "fx-crash", "--yes", timeout=60)
    assert marker.exists() and r.returncode == 0  # it failed (false) again: "came back"
    assert r.stdout.rstrip().endswith("the failure came back")


@pytest.mark.parametrize(("answer", "runs"), [("n", False), ("", False), ("y", True)])
def test_at_a_terminal_it_asks(forged, answer: str, runs: bool) -> None:
    out, marker = forged
    master, slave = pty.openpty()
    env = {**os.environ, **SOURCE_PATH}
    p = subprocess.Popen(
        [*HARNESS, "reproduce", str(out), "fx-crash"],
        cwd=ROOT,
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    os.close(slave)
    os.write(master, f"{answer}\n".encode())
    stdout, stderr = p.communicate(timeout=60)
    os.close(master)
    assert marker.exists() is runs, stdout.decode() + stderr.decode()
    assert p.returncode == (0 if runs else 2)


def test_the_recipe_interpreter_must_be_a_plain_name(forged, tmp_path: Path) -> None:
    out, marker = forged
    r = cli("reproduce", str(out), "fx-crash", "--recipe", "--python", sys.executable, "--yes", timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "is not a plain python name (python3.13t): not run" in r.stderr
    assert not (tmp_path / "evil").exists() and not marker.exists()
