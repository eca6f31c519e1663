"""The disk a job's command may fill (#46): any one file, its log included, refused at write time
past ``file_bytes`` (RLIMIT_FSIZE, the kernel's), the workspace measured every quarter second and the
command killed past ``workspace_bytes``; the Exec names the limit; run_phase turns it into a
LimitExceeded, and the runner into the job's result naming it, its workspace freed but its logs.
Real subprocesses on the local backend (the docker side: tests/integration/test_disk_limits.py)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from harness.backends.base import DiskWatch, disk_use
from harness.backends.local import LocalBackend
from harness.job.runner import free_workspace
from tests.unit.backends.test_backend_local import run

MIB = 1 << 20
FLOOD = "import os\nwhile True: os.write(1, b'x' * 65536)\n"
FILL = "import os, itertools\nb = os.urandom(1 << 20)\nfor i in itertools.count():\n    open(f'f{i}', 'wb').write(b)\n"


def test_a_log_flood_is_cut_at_write_time_and_named(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("FT_HARNESS_LIMIT_FILE_BYTES", str(4 * MIB))
    t0 = time.monotonic()
    ex, _ = run(LocalBackend(), tmp_path, [sys.executable, "-c", FLOOD], timeout=120)
    assert time.monotonic() - t0 < 30
    assert ex.exit_code != 0 and ex.limit.startswith("file_bytes: its log reached ")
    assert (tmp_path / "logs" / "step.log").stat().st_size <= 4 * MIB


def test_a_workspace_past_its_limit_is_killed_within_a_second_and_named(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("FT_HARNESS_LIMIT_WORKSPACE_BYTES", str(64 * MIB))
    ex, _ = run(LocalBackend(), tmp_path, [sys.executable, "-c", FILL], timeout=120)
    assert ex.limit.startswith("workspace_bytes: the workspace held over ")
    assert not ex.timed_out and ex.exit_code is not None
    held = disk_use(tmp_path)
    assert 64 * MIB < held < 64 * MIB + 2048 * MIB  # the limit, plus at most ~1 s of writing
    (tmp_path / "junit").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "link").symlink_to("/etc")
    free_workspace(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junit", "logs"]
    assert Path("/etc/passwd").exists()


def test_a_command_within_the_limits_names_none(tmp_path: Path) -> None:
    ex, text = run(LocalBackend(), tmp_path, [sys.executable, "-c", "print('ok')"])
    assert (ex.exit_code, ex.limit, text) == (0, "", "ok\n")


def test_the_watch_counts_blocks_and_stops_past_the_limit(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "a").write_bytes(b"x" * (3 * MIB))
    (tmp_path / "sparse").open("wb").truncate(1 << 40)  # a terabyte of nothing: no blocks
    (tmp_path / "up").symlink_to("/")  # never followed
    assert 3 * MIB <= disk_use(tmp_path) < 4 * MIB
    monkeypatch.setenv("FT_HARNESS_LIMIT_WORKSPACE_BYTES", str(2 * MIB))
    w = DiskWatch(tmp_path)
    assert w.over() and "workspace_bytes" in w.note()
    assert not DiskWatch(None).over()


@pytest.mark.parametrize("name", ["workspace_bytes", "file_bytes"])
def test_the_limits_are_named_and_settable(name: str, monkeypatch) -> None:
    from harness.core import limits

    assert name in limits.LIMITS
    monkeypatch.setenv(f"FT_HARNESS_LIMIT_{name.upper()}", "12345")
    assert limits.value(name) == 12345
