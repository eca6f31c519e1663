"""harness.core.artifactcopy and tools/artifact-copy (#56): what CI uploads is the host's copy of
a run's logs/ and junit/, regular files only, no link followed at any level, within its limits.

The upload itself is emulated by tools/run_workflow.py, which follows links as
actions/upload-artifact does: the last test uploads a hostile output dir both ways through the
emulation and finds the host's secret in the raw upload and not in the copy's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.core.artifactcopy import ARTIFACT_NOTE, copy_artifacts
from harness.core.errors import ConfigError
from harness.core.wsfs import remove_tree

from .test_fdwalk import DEPTH, NAME, deep_tree

ROOT = Path(__file__).resolve().parents[3]
SECRET = b"HOST-SECRET-6f1c9a\n"
sys.path.insert(0, str(ROOT / "tools"))
import run_workflow as rw  # noqa: E402


@pytest.fixture(autouse=True)
def _no_deep_tree_left(tmp_path: Path) -> Iterator[None]:
    """pytest removes old temp dirs with shutil.rmtree, which a deep tree breaks on 3.11."""
    yield
    for p in tmp_path.iterdir():
        remove_tree(p)


def hostile_out(tmp_path: Path) -> tuple[Path, Path]:
    """An output dir as a run leaves it (manifest.json, results/, work/<job>/logs and junit) whose
    job j1 planted every way out: links to host files and dirs (at the bottom of a 2,000-deep tree
    too), a hard link to a host file, a FIFO, a link where junit/ should be (job j2), a link where
    a whole workspace should be (j3)."""
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret.txt").write_bytes(SECRET)
    out = tmp_path / "out"
    logs = out / "work" / "j1" / "logs"
    (logs / "tsan").mkdir(parents=True)
    (out / "work" / "j1" / "junit").mkdir()
    (out / "results").mkdir()
    (out / "manifest.json").write_text('{"schema": 1}\n')
    (out / "results" / "j1.json").write_text('{"job_id": "j1"}\n')
    (out / "results" / "planted.json").symlink_to(host / "secret.txt")
    (logs / "install.log").write_text("install log\n")
    (logs / "tsan" / "report.txt").write_text("tsan\n")
    (out / "work" / "j1" / "junit" / "plain.xml").write_text("<testsuite/>\n")
    (logs / "passwd").symlink_to("/etc/passwd")
    (logs / "environ").symlink_to("/proc/self/environ")
    (logs / "hostdir").symlink_to(host)
    (logs / "tsan" / "secret").symlink_to(host / "secret.txt")
    os.link(host / "secret.txt", logs / "hard.txt")
    os.mkfifo(logs / "fifo")
    deep_tree(logs / "deep", host)
    (out / "work" / "j2" / "logs").mkdir(parents=True)
    (out / "work" / "j2" / "logs" / "ok.log").write_text("j2\n")
    (out / "work" / "j2" / "junit").symlink_to(host)
    (out / "work" / "j3").symlink_to(host)
    return out, host


def files_of(root: Path) -> dict[str, bytes]:
    """Every regular file below ``root`` with its bytes (find: any depth); no other kind allowed."""
    kinds = subprocess.run(
        ["find", ".", "-not", "-type", "f", "-not", "-type", "d"], cwd=root, capture_output=True, text=True, check=True
    )
    assert kinds.stdout == "", kinds.stdout
    names = subprocess.run(["find", ".", "-type", "f"], cwd=root, capture_output=True, text=True, check=True)
    return {n[2:]: (root / n).read_bytes() for n in names.stdout.split()}


def test_the_copy_holds_the_regular_files_and_no_byte_from_outside(tmp_path: Path) -> None:
    out, _ = hostile_out(tmp_path)
    dst = tmp_path / "upload"
    c = copy_artifacts(out, dst, extra=("manifest.json", "results"))
    got = files_of(dst)
    note = got.pop(f"work/j1/logs/{ARTIFACT_NOTE}").decode()
    assert got == {
        "manifest.json": b'{"schema": 1}\n',
        "results/j1.json": b'{"job_id": "j1"}\n',
        "work/j1/logs/install.log": b"install log\n",
        "work/j1/logs/tsan/report.txt": b"tsan\n",
        "work/j1/junit/plain.xml": b"<testsuite/>\n",
        "work/j2/logs/ok.log": b"j2\n",
        f"work/j2/logs/{ARTIFACT_NOTE}": got[f"work/j2/logs/{ARTIFACT_NOTE}"],
    }
    assert not any(SECRET in data for data in got.values())
    assert "5 not a regular file" in note and "1 a hard link" in note and "1 past artifact_depth" in note
    assert "logs/passwd: not a regular file" in note and "logs/hard.txt: a hard link" in note
    assert "junit: not a directory reached through no link" in got[f"work/j2/logs/{ARTIFACT_NOTE}"].decode()
    assert (c.jobs, c.noted) == (2, ("j1", "j2"))  # j3, a link, is no workspace
    # the bottom of the deep tree (2,000 levels) is never reached: the copy goes 32 levels down
    (deepest,) = (line for line in note.splitlines() if line.endswith(": past artifact_depth"))
    assert deepest.startswith(f"logs/deep/{NAME}/{NAME}/")
    assert not any(k.endswith("bottom.log") for k in got) and DEPTH > 32


def test_the_caps_per_file_per_job_and_in_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    for job in ("a", "b"):
        logs = out / "work" / job / "logs"
        (logs / "deeper").mkdir(parents=True)
        (logs / "big.log").write_bytes(b"b" * 2000)  # past the per-file cap
        (logs / "phase.log").write_bytes(b"p" * 400)  # the phase's own: shallow, copied first
        (logs / "deeper" / "x.log").write_bytes(b"x" * 250)
        (logs / "deeper" / "y.log").write_bytes(b"y" * 100)  # past what is left of a's 700
    monkeypatch.setenv("FT_HARNESS_LIMIT_ARTIFACT_FILE_BYTES", "1000")
    monkeypatch.setenv("FT_HARNESS_LIMIT_ARTIFACT_BYTES_PER_JOB", "700")
    monkeypatch.setenv("FT_HARNESS_LIMIT_ARTIFACT_BYTES", "700")  # a takes 650: 50 left for b
    c = copy_artifacts(out, tmp_path / "up")
    got = files_of(tmp_path / "up")
    note_a = got.pop(f"work/a/logs/{ARTIFACT_NOTE}").decode()
    note_b = got.pop(f"work/b/logs/{ARTIFACT_NOTE}").decode()
    assert got == {"work/a/logs/phase.log": b"p" * 400, "work/a/logs/deeper/x.log": b"x" * 250}
    assert "logs/big.log: past artifact_file_bytes (2000 bytes)" in note_a
    assert "logs/deeper/y.log: past artifact_bytes_per_job (100 bytes)" in note_a
    assert "1 past artifact_bytes_per_job, 1 past artifact_file_bytes" in note_a
    assert "3 past artifact_bytes, 1 past artifact_file_bytes" in note_b
    assert (c.files, c.bytes, c.left_out) == (2, 650, 6)


def test_the_caps_on_entries_and_depth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    logs = tmp_path / "out" / "work" / "j" / "logs"
    for i in range(50):
        (logs / f"d{i:02}").mkdir(parents=True)
        (logs / f"d{i:02}" / "f.log").write_text("x")
    monkeypatch.setenv("FT_HARNESS_LIMIT_ARTIFACT_FILES_PER_JOB", "60")  # logs/'s 50 dirs, 10 of their files
    copy_artifacts(tmp_path / "out", tmp_path / "up")
    got = files_of(tmp_path / "up")
    note = got.pop(f"work/j/logs/{ARTIFACT_NOTE}").decode()
    assert len(got) == 10 and "40 past artifact_files_per_job" in note
    (tmp_path / "out2" / "work" / "j" / "logs" / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "out2" / "work" / "j" / "logs" / "a" / "b" / "in.log").write_text("in\n")
    (tmp_path / "out2" / "work" / "j" / "logs" / "a" / "b" / "c" / "deep.log").write_text("deep\n")
    monkeypatch.setenv("FT_HARNESS_LIMIT_ARTIFACT_DEPTH", "2")
    copy_artifacts(tmp_path / "out2", tmp_path / "up2")
    got = files_of(tmp_path / "up2")
    assert got.pop("work/j/logs/a/b/in.log") == b"in\n"
    assert list(got) == [f"work/j/logs/{ARTIFACT_NOTE}"]
    assert "logs/a/b/c: past artifact_depth" in got[f"work/j/logs/{ARTIFACT_NOTE}"].decode()


def test_bad_input_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "up").mkdir()
    (tmp_path / "up" / "x").write_text("x")
    with pytest.raises(ConfigError, match="new or empty directory"):
        copy_artifacts(tmp_path, tmp_path / "up")
    with pytest.raises(ConfigError, match="not a directory to copy from"):
        copy_artifacts(tmp_path / "missing", tmp_path / "up2")
    with pytest.raises(ConfigError, match="not a path below"):
        copy_artifacts(tmp_path, tmp_path / "up3", extra=("../etc/passwd",))


UPLOAD_BOTH_WAYS = r"""
name: t
on: {workflow_dispatch: {}}
permissions: {}
jobs:
  run:
    runs-on: x
    steps:
      - run: cp -a "$SRC" out
        env: {SRC: "@OUT@"}
      - uses: actions/upload-artifact@v4
        with:
          name: raw
          path: |
            out/results/
            out/work/*/logs/
            out/work/*/junit/
      - run: python "@TOOL@" out shard-upload --extra manifest.json --extra results
      - uses: actions/upload-artifact@v4
        with: {name: copied, path: shard-upload/}
"""


def test_through_the_emulated_upload_the_raw_dirs_leak_and_the_copy_does_not(tmp_path: Path) -> None:
    """The emulation follows links as upload-artifact does: the workspace dirs as the workflow
    uploaded them before #56 carry the host's secret; the copy, uploaded the same way, carries
    nothing from outside and keeps the layout the report reads (results/, work/<job>/logs/)."""
    out, _ = hostile_out(tmp_path)
    remove_tree(out / "work" / "j1" / "logs" / "deep")  # cp -a and the emulation walk by path
    (out / "work" / "j1" / "logs" / "hard.txt").unlink()  # cp -a makes it a file of the workspace's own
    wf = tmp_path / "wf.yml"
    wf.write_text(UPLOAD_BOTH_WAYS.replace("@OUT@", str(out)).replace("@TOOL@", str(ROOT / "tools" / "artifact-copy")))
    state = tmp_path / "state"
    assert rw.main(["--workflow", str(wf), "--state", str(state), "--run-id", "1"]) == 0, json.dumps(
        json.loads((state / "runs" / "1" / "summary.json").read_text())["steps"], indent=1
    )
    raw = files_of(state / "artifacts" / "1" / "raw")
    assert any(SECRET in data for data in raw.values())  # the leak the copy closes
    assert "work/j1/logs/passwd" in raw and "work/j1/logs/hostdir/secret.txt" in raw
    copied = files_of(state / "artifacts" / "1" / "copied")
    assert not any(SECRET in data for data in copied.values())
    assert not any(data == Path("/etc/passwd").read_bytes() for data in copied.values())
    assert {"manifest.json", "results/j1.json", "work/j1/logs/install.log", "work/j1/junit/plain.xml"} <= set(copied)
