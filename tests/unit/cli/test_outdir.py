"""The output directory (#30): one run at a time on it (a lock), and a full disk while the report
is written is one line and exit 4, not a traceback."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest

from harness.cli import outlock
from tests.conftest import FIXTURES, INTERP_YAML, cli

DATA = Path(__file__).resolve().parents[2] / "data" / "report" / "run0"


def test_a_second_run_on_the_same_out_refuses_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(INTERP_YAML + f"packages:\n  - {{name: ft_clean, path: {FIXTURES / 'ft_clean'}}}\n")
    with outlock.hold(out):  # a first run holds it
        r = cli("run", "--matrix", str(matrix), "--out", str(out), "--backend", "local", timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    (line,) = r.stderr.strip().splitlines()[-1:]
    assert line == (
        f"{out}: another ft-harness run is using this output directory (pid {os.getpid()}); "
        "wait for it to finish or give another --out"
    ), r.stderr
    assert "Traceback" not in r.stderr
    assert not (out / "work").exists()  # nothing of the first run's touched


def test_the_lock_is_released_when_the_run_ends(tmp_path: Path) -> None:
    with outlock.hold(tmp_path):
        pass
    with outlock.hold(tmp_path):  # not stale
        pass
    os.unlink(tmp_path / outlock.LOCK_NAME)
    (tmp_path / outlock.LOCK_NAME).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(Exception, match="cannot lock"), outlock.hold(tmp_path):
        pass  # a link at the lock is not followed
    assert not (tmp_path / "elsewhere").exists()


@contextlib.contextmanager
def _small_disk(where: Path, size: str):
    where.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, text=True
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {r.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def test_disk_full_while_writing_the_report_is_exit_4_in_one_line(tmp_path: Path) -> None:
    with _small_disk(tmp_path / "disk", "24k") as disk:
        r = cli("report", str(DATA), "--out", str(disk), timeout=120)  # report.json alone is larger
    assert r.returncode == 4, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()[-1:]
    assert line.startswith(f"ft-harness: no space left to write the report in {disk} (No space left on device)")
