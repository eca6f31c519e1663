"""harness.core.fdwalk and JobDir.seal/free (#56): a workspace's tree walked, cleaned and removed
by directory fd without recursion, whatever its depth and however long its paths.

The hostile tree is real: 2,000 levels below logs/ with names long enough that its deepest path is
~200,000 characters (PATH_MAX is 4,096), links to /etc/passwd, /proc/self/environ and a host dir
at the bottom, and more after it (in a sibling that sorts after the deep chain, and at the top).
On Python 3.11 the walks the host used before (os.fwalk, shutil.rmtree) raise RecursionError on it
(checked here too, so the fixture is known to be hostile enough).  What is left is checked with
GNU find (fts: any depth), not with the code under test.

The fail-closed path is forced at the OS boundary, not by patching the code under test: a child
process lowers its own RLIMIT_NOFILE so that the walk's next ``open`` fails with EMFILE.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.core import fdwalk
from harness.core.wsfs import NOTE, UNSEALED, JobDir, clear_workspace, free_workspace, remove_tree

ROOT = Path(__file__).resolve().parents[3]
DEPTH = 2_000
NAME = "d" * 100  # 2,000 of them: a path of ~202,000 characters
OUTSIDE = ("/etc/passwd", "/proc/self/environ")


def deep_tree(at: Path, host_dir: Path, depth: int = DEPTH) -> int:
    """``depth`` levels below ``at`` (made by fd: the path is far past PATH_MAX), a link to each of
    OUTSIDE and to ``host_dir`` at the bottom; the links planted."""
    at.mkdir(parents=True, exist_ok=True)
    cur = os.open(at, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(NAME, dir_fd=cur)
            nxt = os.open(NAME, os.O_RDONLY | os.O_DIRECTORY, dir_fd=cur)
            os.close(cur)
            cur = nxt
        for i, target in enumerate((*OUTSIDE, str(host_dir))):
            os.symlink(target, f"link{i}", dir_fd=cur)
        with open(os.open("bottom.log", os.O_WRONLY | os.O_CREAT, dir_fd=cur), "w") as f:
            f.write("kept\n")
    finally:
        os.close(cur)
    return 3


def find(root: Path, *args: str) -> list[str]:
    """GNU find's answer (fts walks any depth, by fd): the paths, relative to ``root``."""
    out = subprocess.run(["find", ".", *args], cwd=root, capture_output=True, text=True, check=True).stdout
    return sorted(line for line in out.splitlines() if line != ".")


@pytest.fixture(autouse=True)
def _no_deep_tree_left(tmp_path: Path) -> Iterator[None]:
    """pytest removes old temp dirs with shutil.rmtree, which a deep tree breaks on 3.11."""
    yield
    for p in tmp_path.iterdir():
        remove_tree(p)


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace whose logs/ holds the deep tree, then links after it; a host dir outside."""
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret.txt").write_text("SECRET\n")
    ws = tmp_path / "ws"
    deep_tree(ws / "logs" / "a-deep", host)
    (ws / "logs" / "zz-after").mkdir()
    (ws / "logs" / "zz-after" / "env").symlink_to("/proc/self/environ")
    (ws / "logs" / "zz-after" / "dir").symlink_to(host)
    (ws / "logs" / "zzz.log").symlink_to("/etc/passwd")
    (ws / "logs" / "install.log").write_text("the phase's own log\n")
    os.mkfifo(ws / "logs" / "fifo")
    (ws / "junit").mkdir()
    (ws / "junit" / "plain.xml").write_text("<testsuite/>\n")
    (ws / "junit" / "x.xml").symlink_to(host / "secret.txt")
    return ws, host


def test_the_fixture_is_deep_enough_to_break_the_recursive_walks(hostile: tuple[Path, Path]) -> None:
    ws, _ = hostile
    if sys.version_info >= (3, 12):
        pytest.skip("os.fwalk / shutil.rmtree recursion: checked on Python 3.11")
    with pytest.raises(RecursionError):
        for _ in os.fwalk(str(ws / "logs"), follow_symlinks=False):
            pass


def test_seal_removes_every_link_at_any_depth_and_keeps_the_files(hostile: tuple[Path, Path]) -> None:
    ws, host = hostile
    with JobDir(ws) as fs:
        sealed = fs.seal(("logs", "junit"))
    assert sealed.why == "" and sealed.replaced == ()
    assert sealed.removed_count == 3 + 2 + 1 + 1 + 1  # the bottom's, zz-after's, zzz.log, fifo, junit/x.xml
    assert "logs/zzz.log" in sealed.removed and "junit/x.xml" in sealed.removed
    assert find(ws, "-not", "-type", "f", "-not", "-type", "d") == []  # no link, FIFO, socket left
    files = find(ws, "-type", "f")
    assert len(files) == 3 and "./logs/install.log" in files and "./junit/plain.xml" in files
    (bottom,) = (f for f in files if f.endswith("/bottom.log"))
    assert bottom.count(NAME) == DEPTH  # kept, at the bottom
    assert (host / "secret.txt").read_text() == "SECRET\n"  # never followed


def test_drop_walk_and_chown_all_reach_the_bottom_without_recursion(hostile: tuple[Path, Path]) -> None:
    ws, _ = hostile
    with JobDir(ws) as fs:
        dirs = sum(1 for _ in fs.walk("logs"))
        fs.chown_all(os.getuid(), os.getgid())
        removed = fs.drop_non_regular(("logs",))
    assert dirs == 1 + 1 + DEPTH + 1  # logs, a-deep, the chain, zz-after
    assert len(removed) == 7 and {"logs/zzz.log", "logs/fifo", "logs/zz-after/env"} <= set(removed)


def test_a_walk_holds_a_few_fds_at_any_depth(hostile: tuple[Path, Path]) -> None:
    """2,000 levels need no more of RLIMIT_NOFILE than one: the walk goes up by '..' (checked)."""
    ws, _ = hostile
    most = 0

    def visit(fd: int, names: list[str]) -> list[str]:
        nonlocal most
        most = max(most, len(os.listdir("/proc/self/fd")))
        return [e.name for e in os.scandir(fd) if e.is_dir(follow_symlinks=False)]

    before = len(os.listdir("/proc/self/fd"))
    top = os.open(ws / "logs", fdwalk.DIR_FLAGS)
    try:
        fdwalk.walk(top, visit)
    finally:
        os.close(top)
    assert most - before <= 4
    assert len(os.listdir("/proc/self/fd")) == before


def test_a_level_moved_during_the_walk_stops_it(tmp_path: Path) -> None:
    """The way up is checked: a directory renamed away while it is walked is ESTALE, never a
    walk of wherever its '..' now is."""
    (tmp_path / "t" / "a" / "b").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()

    def visit(fd: int, names: list[str]) -> list[str]:
        if names == ["a", "b"]:
            os.rename(tmp_path / "t" / "a", tmp_path / "elsewhere" / "a")
        return [e.name for e in os.scandir(fd) if e.is_dir(follow_symlinks=False)]

    top = os.open(tmp_path / "t", fdwalk.DIR_FLAGS)
    try:
        with pytest.raises(OSError, match="moved"):
            fdwalk.walk(top, visit)
    finally:
        os.close(top)


SEAL_UNDER_EMFILE = textwrap.dedent(
    """
    import json, os, resource, sys
    from pathlib import Path
    from harness.core.wsfs import JobDir
    ws = Path(sys.argv[1])
    fs = JobDir(ws)
    fds = sorted(int(n) for n in os.listdir("/proc/self/fd"))
    assert fds == list(range(len(fds)))  # no holes: the limit counts the fds open
    open_now = len(fds) - 1  # less the listing's own
    # the OS boundary: two more fds, so the walk (which holds logs/, the level it is in and
    # scandir's duplicate of it) fails with EMFILE; the replacement needs two
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (open_now + 2, hard))
    sealed = fs.seal(("logs", "junit"))
    print(json.dumps({"why": sealed.why, "replaced": list(sealed.replaced), "left": list(sealed.not_replaced)}))
    """
)


def test_seal_fails_closed_a_dir_it_could_not_clean_holds_only_a_note(hostile: tuple[Path, Path]) -> None:
    ws, _ = hostile
    r = subprocess.run(
        [sys.executable, "-c", SEAL_UNDER_EMFILE, str(ws)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert "Too many open files" in got["why"], got
    assert got["replaced"] == ["logs", "junit"] and got["left"] == []
    for top in ("logs", "junit"):
        assert sorted(os.listdir(ws / top)) == [NOTE]
        note = (ws / top / NOTE).read_text()
        assert note.startswith("the harness could not clean this directory: OSError: Too many open files")
        assert note.rstrip().endswith("its files were removed")
    assert find(ws / "logs", "-not", "-type", "f", "-not", "-type", "d") == []
    assert find(ws / "junit", "-not", "-type", "f", "-not", "-type", "d") == []
    # the old trees wait outside logs/ and junit/ (removing them ran out of fds too), for the free
    assert (ws / UNSEALED).is_dir() and len(os.listdir(ws / UNSEALED)) >= 1
    with JobDir(ws) as fs:
        assert fs.free((UNSEALED,)) == []
    assert not (ws / UNSEALED).exists()


def test_seal_of_a_dir_that_is_a_link_or_missing(tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "keep.txt").write_text("x")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "logs").symlink_to(host)
    with JobDir(ws) as fs:
        sealed = fs.seal(("logs", "junit"))
    assert sealed.removed == ("logs",) and sealed.why == ""
    assert not (ws / "logs").exists() and (host / "keep.txt").exists()


def test_remove_tree_frees_a_deep_tree_and_never_follows(hostile: tuple[Path, Path]) -> None:
    ws, host = hostile
    assert remove_tree(ws / "logs") == ""
    assert not (ws / "logs").exists()
    assert (host / "secret.txt").read_text() == "SECRET\n" and os.path.exists("/etc/passwd")
    assert remove_tree(ws / "nothing-here") == ""  # missing: fine
    (ws / "link").symlink_to(host)
    assert remove_tree(ws / "link") == "" and host.is_dir()  # the link itself, not its target


def test_free_workspace_keeps_logs_and_junit_and_frees_the_rest(hostile: tuple[Path, Path]) -> None:
    ws, host = hostile
    deep_tree(ws / "venv", host, depth=1_500)
    (ws / "src").symlink_to(host)  # a link where a tree was: removed as a link
    os.mkfifo(ws / "pipe")
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(ws / "sock"))
    s.close()
    (ws / "tsan.supp").write_text("race:x\n")
    assert free_workspace(ws) == []
    assert sorted(os.listdir(ws)) == ["junit", "logs"]
    assert (ws / "logs" / "install.log").is_file()
    assert sorted(os.listdir(host)) == ["secret.txt"]
    # the job's own free: the names it is given, the rest stays
    deep_tree(ws / "sdist", host, depth=1_500)
    (ws / ".tmp").mkdir()
    with JobDir(ws) as fs:
        assert fs.free(("venv", "src", "sdist", ".tmp")) == []  # missing ones are fine
    assert sorted(os.listdir(ws)) == ["junit", "logs"]


def test_freeing_never_raises(tmp_path: Path) -> None:
    assert free_workspace(tmp_path / "missing") == []
    f = tmp_path / "file"
    f.write_text("x")
    assert free_workspace(f)  # not a directory: said, not raised
    assert remove_tree(tmp_path / "missing" / "deeper") == ""


def test_clear_workspace_removes_the_last_runs_deep_workspace(hostile: tuple[Path, Path]) -> None:
    ws, host = hostile
    clear_workspace(ws)
    assert not ws.exists() and not any(p.name.startswith(".stale-") for p in ws.parent.iterdir())
    assert (host / "secret.txt").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root removes what it cannot read anyway")
def test_a_tree_made_unreadable_is_removed_by_its_owner(tmp_path: Path) -> None:
    (tmp_path / "t" / "a" / "b").mkdir(parents=True)
    (tmp_path / "t" / "a" / "b" / "f").write_text("x")
    (tmp_path / "t" / "a" / "b").chmod(0o000)
    (tmp_path / "t" / "a").chmod(0o500)
    assert remove_tree(tmp_path / "t") == ""
    assert not (tmp_path / "t").exists()
