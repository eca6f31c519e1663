"""harness.backends.diskuse on a real disk and real subprocesses (#56): the workspace walked by
directory fd counts what lies under a path longer than PATH_MAX, counts every entry against
``workspace_files`` and stops a command that writes empty files past it within the watch's
interval plus two walks, and the watch's interval comes back after one slow walk."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from harness.backends.diskuse import DiskWatch, measure
from harness.backends.local import LocalBackend
from harness.core import limits
from tests.unit.backends.test_backend_local import run

MIB = 1 << 20
DIR = os.O_RDONLY | os.O_DIRECTORY

# Empty files made as fast as Python can ask the kernel (~14 µs a file on the 2-core test
# machine's ext4, ~70,000 a second); "N T" every 5,000 (files made, time.monotonic()).
MAKE = """
import os, sys, time
d = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
o, c, fl = os.open, os.close, os.O_CREAT | os.O_WRONLY | os.O_EXCL
for i in range(int(sys.argv[2])):
    c(o(str(i), fl, 0o644, dir_fd=d))
    if i % 5000 == 0:
        os.write(1, f"{i} {time.monotonic()}\\n".encode())
"""


def _entries(root: Path) -> int:
    return sum(len(dirs) + len(files) for _, dirs, files in os.walk(root))


def _deep(root: Path, levels: int, name: str) -> int:
    """An fd on the last of ``levels`` nested directories called ``name``, made relative to
    their parents' fds (their path is never spelled)."""
    fd = os.open(root, DIR)
    for _ in range(levels):
        os.mkdir(name, dir_fd=fd)
        child = os.open(name, DIR, dir_fd=fd)
        os.close(fd)
        fd = child
    return fd


def test_a_file_under_a_path_longer_than_path_max_is_counted(tmp_path: Path, monkeypatch) -> None:
    name = "d" * 200
    fd = _deep(tmp_path, 40, name)  # 40 * 201 = 8,040 bytes of path below tmp_path
    try:
        f = os.open("big", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(f, os.urandom(20 * MIB))
        os.fsync(f)  # its blocks allocated now, not when the page cache is flushed
        os.close(f)
    finally:
        os.close(fd)
    deep = tmp_path.joinpath(*[name] * 40, "big")
    assert len(str(deep)) > os.pathconf("/", "PC_PATH_MAX")
    with pytest.raises(OSError) as e:  # what the walk by path ran into: it counted this file 0
        os.stat(deep)
    assert e.value.errno == errno.ENAMETOOLONG
    got = measure(tmp_path)
    assert got.complete and got.entries == 41  # 40 directories and the file
    assert 20 * MIB <= got.bytes < 21 * MIB
    monkeypatch.setenv("FT_HARNESS_LIMIT_WORKSPACE_BYTES", str(16 * MIB))
    w = DiskWatch(tmp_path)
    assert w.over() and w.note().startswith("workspace_bytes: the workspace held over ")


def test_hard_links_once_symlinks_never_followed(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(os.urandom(2 * MIB))
    for i in range(5):
        os.link(tmp_path / "a", tmp_path / f"a{i}")  # five more names, no more blocks
    (tmp_path / "up").symlink_to("/usr")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "loop").symlink_to("..")
    got = measure(tmp_path)
    assert got.complete and got.entries == 9
    assert 2 * MIB <= got.bytes < 2 * MIB + 64 * 1024


def _as_nobody(root: Path) -> str:
    """In a child process of uid 65534 (a fork: the interpreter is root's): a directory of its
    own with 4 MiB in it made unreadable, then walked; "bytes entries complete"."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            os.makedirs(root / "a" / "hidden")
            (root / "a" / "hidden" / "big").write_bytes(os.urandom(4 * MIB))
            os.chmod(root / "a" / "hidden", 0)  # nothing
            os.chmod(root / "a", 0o100)  # search only: not listed
            u = measure(root)
            os.write(w, f"{u.bytes} {u.entries} {u.complete}".encode())
        except BaseException as e:
            os.write(w, repr(e).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        out = f.read()
    os.waitpid(pid, 0)
    return out


@pytest.mark.skipif(os.geteuid() != 0, reason="makes the files as another user (needs root)")
def test_a_directory_made_unreadable_hides_nothing() -> None:
    """Its owner can ``chmod 000`` a directory; a host that is not root could not list it. The
    walk, run as that same owner (uid 65534 here), gives it back u+rwx and counts what it holds."""
    shared = Path(tempfile.mkdtemp(prefix="ft-diskuse-"))  # /tmp: pytest's tmp_path is root's alone
    try:
        os.chmod(shared, 0o755)
        os.chown(shared, 65534, 65534)
        out = _as_nobody(shared)
        size, entries, complete = out.split()
        assert int(size) >= 4 * MIB and int(entries) == 3 and complete == "True", out
    finally:
        shutil.rmtree(shared)


def test_a_command_writing_a_million_empty_files_is_stopped_past_workspace_files(tmp_path: Path, monkeypatch) -> None:
    """The command would make a million empty files (bytes: none to speak of) and is killed once
    the workspace holds more than ``workspace_files`` entries: 100,000 here, the default's
    (250,000) scaled by 0.4 so that the test takes ~5 s on an idle 2-core machine (making the
    files is the cost: ~14 µs each on ext4, and a loaded machine took 67 s at the default).

    Stopped within the watch's interval (0.25 s) plus two walks of the limit's worth of entries
    plus 1 s for the machine's noise, from the moment the writer's own clock says it made the
    limit's worth. Measured (2-core machine, ext4, loaded): at the default, 252,864 files made,
    stopped 0.78 s after the 250,000th (bound 2.35 s: a walk of them took 0.55 s); the same walk
    counts a million entries in 2.4-3.3 s (~2.5 µs each). The entries left are counted one by one."""
    monkeypatch.setenv("FT_HARNESS_LIMIT_WORKSPACE_FILES", "100000")
    limit = limits.value("workspace_files")
    assert limits.LIMITS["workspace_files"].default == 250_000
    (tmp_path / "many").mkdir()
    t0 = time.monotonic()
    ex, text = run(LocalBackend(), tmp_path, [sys.executable, "-c", MAKE, "many", "1000000"], timeout=120)
    stopped = t0 + ex.duration
    try:
        assert ex.limit.startswith("workspace_files: the workspace held over ")
        assert not ex.timed_out and ex.exit_code is not None
        progress = [tuple(map(float, line.split())) for line in text.splitlines() if line[:1].isdigit()]
        made = _entries(tmp_path)
        assert limit < made < 1_000_000
        crossed = next(t for n, t in progress if n >= limit)  # at that time it had made >= limit
        walk = time.monotonic()
        got = measure(tmp_path)
        took = time.monotonic() - walk
        assert got.complete and got.entries == made  # every one counted, the log and its dir too
        bound = 0.25 + 2 * took + 1.0
        print(f"made {made} files; stopped {stopped - crossed:.2f} s after the limit (bound {bound:.2f} s)")
        assert stopped - crossed < bound
    finally:
        subprocess.run(["rm", "-rf", str(tmp_path / "many")], check=False)  # faster than shutil's


def test_the_interval_recovers_after_one_slow_walk(tmp_path: Path, monkeypatch) -> None:
    """A watch of every 50 ms (the harness's: 250 ms) and a tree of 50,000 empty files that makes
    one walk slow (~0.15 s, three intervals); once the tree is gone the walks are back to every
    50 ms. The watch this replaced walked every 50 times its slowest walk for the rest of the
    command (here once in 7 s; with the harness's interval and 250,000 files once in 30 s)."""
    monkeypatch.setenv("FT_HARNESS_LIMIT_WORKSPACE_FILES", str(10_000_000))
    root, big = tmp_path / "ws", tmp_path / "ws" / "big"
    big.mkdir(parents=True)
    subprocess.run([sys.executable, "-c", MAKE, str(big), "50000"], check=True, stdout=subprocess.DEVNULL)
    try:
        w = DiskWatch(root, every=0.05)
        assert not w.over() and w.walks == 1 and w.held.entries > 50_000
        assert w.took > w.every  # the slow walk
        assert w.due() <= w.every  # the next one no later than an interval after it ended
        os.rename(big, tmp_path / "gone")  # what the slow walk saw leaves the workspace
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            time.sleep(w.due())
            w.over()
        assert w.held.entries == 0  # nothing left in it
        assert w.walks >= 1 + 12  # 20 in 1 s at 50 ms each; 12 leaves room for a busy machine
    finally:
        subprocess.run(["rm", "-rf", str(tmp_path / "gone"), str(big)], check=False)
