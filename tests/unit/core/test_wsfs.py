"""harness.core.wsfs: the workspace reached through no link at any component (#30), and the guard
that keeps every host access to a workspace going through it."""

from __future__ import annotations

import ast
import os
import socket
from pathlib import Path

import pytest

from harness.core import wsfs
from harness.core.wsfs import JobDir, read_beneath

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(params=["openat2", "walk"])
def resolver(request, monkeypatch):
    """Each test twice: with openat2 (when the kernel has it) and with the O_NOFOLLOW walk."""
    if request.param == "walk":
        monkeypatch.setattr(wsfs, "_OPENAT2", False)
    else:
        root = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
        try:
            fd = wsfs._openat2(root, "proc", os.O_RDONLY | os.O_DIRECTORY, 0)
        finally:
            os.close(root)
        if fd is None:
            pytest.skip("this kernel has no openat2")
        os.close(fd)
    return request.param


def _ws(tmp_path: Path) -> tuple[Path, Path, JobDir]:
    """A workspace with logs/ and a host dir outside it holding a secret and a target file."""
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret.txt").write_text("SECRET\n")
    (host / "target.txt").write_text("ORIGINAL\n")
    ws = tmp_path / "ws"
    (ws / "logs").mkdir(parents=True)
    return ws, host, JobDir(ws)


def test_a_link_at_any_component_is_never_followed(tmp_path: Path, resolver: str) -> None:
    ws, host, fs = _ws(tmp_path)
    (ws / "logs" / "a.log").symlink_to(host / "secret.txt")  # the last component
    (ws / "junit").symlink_to(host)  # a directory on the way
    (ws / "inner").mkdir()
    (ws / "inner" / "watchdog").symlink_to(host)  # a directory deeper down
    with fs:
        assert fs.read("logs/a.log", 100) is None
        assert fs.read("junit/secret.txt", 100) is None
        assert fs.read("inner/watchdog/secret.txt", 100) is None
        assert read_beneath(tmp_path, "ws/junit/secret.txt", 100) is None
        assert read_beneath(tmp_path, "ws/logs/a.log", 100) is None
        assert not fs.is_file("junit/secret.txt") and not fs.is_dir("inner/watchdog")
        assert fs.listdir("junit") == []
        assert not fs.append("junit/target.txt", b"x") and not fs.append("logs/a.log", b"x")
        with pytest.raises(OSError):
            fs.open_append("inner/watchdog/target.txt")
        with pytest.raises(ValueError):
            fs.open_new("../host/target.txt")
    assert (host / "secret.txt").read_text() == "SECRET\n" and (host / "target.txt").read_text() == "ORIGINAL\n"


def test_the_hosts_own_files_and_dirs_replace_what_package_code_left(tmp_path: Path, resolver: str) -> None:
    ws, host, fs = _ws(tmp_path)
    (ws / "probe.py").symlink_to(host / "target.txt")
    (ws / "inner").symlink_to(host)
    (ws / "junit").symlink_to(host)
    with fs:
        fs.copy_in(Path(wsfs.__file__), "probe.py")  # a link at the file: removed, not followed
        fs.copy_in(Path(wsfs.__file__), "inner/watchdog/plugin.py")  # a link at a dir on the way
        fs.makedirs("junit")
        with fs.create_text("logs/x.log") as f:
            f.write("header\n")
        assert fs.append("logs/x.log", b"more\n")
        assert fs.read("logs/x.log", 100) == b"header\nmore\n"
    assert not (ws / "probe.py").is_symlink() and (ws / "probe.py").read_bytes() == Path(wsfs.__file__).read_bytes()
    assert not (ws / "inner").is_symlink() and (ws / "inner" / "watchdog" / "plugin.py").is_file()
    assert not (ws / "junit").is_symlink() and (ws / "junit").is_dir()
    assert sorted(p.name for p in host.iterdir()) == ["secret.txt", "target.txt"]  # nothing made there
    assert (host / "target.txt").read_text() == "ORIGINAL\n"


def test_reads_are_capped_head_and_tail(tmp_path: Path, resolver: str) -> None:
    ws, _, fs = _ws(tmp_path)
    (ws / "logs" / "big.log").write_bytes(b"a" * 1000 + b"b" * 1000)
    with fs:
        got = fs.read("logs/big.log", 100)
    assert got is not None and got.startswith(b"a" * 50) and got.endswith(b"b" * 50) and b"cut" in got


def test_non_regular_files_are_removed_from_logs_and_junit(tmp_path: Path, resolver: str) -> None:
    ws, host, fs = _ws(tmp_path)
    (ws / "junit").mkdir()
    (ws / "logs" / "tsan").mkdir()
    os.mkfifo(ws / "logs" / "fifo.log")
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(ws / "junit" / "sock.xml"))
    (ws / "logs" / "tsan" / "link").symlink_to(host / "secret.txt")
    (ws / "logs" / "ok.log").write_text("kept\n")
    with fs:
        removed = fs.drop_non_regular(("logs", "junit"))
    s.close()
    assert sorted(removed) == ["junit/sock.xml", "logs/fifo.log", "logs/tsan/link"]
    left = sorted(str(p.relative_to(ws)) for p in ws.rglob("*"))
    assert left == ["junit", "logs", "logs/ok.log", "logs/tsan"]
    (ws / "logs2").symlink_to(host)
    with JobDir(ws) as fs2:
        assert fs2.drop_non_regular(("logs2",)) == ["logs2"]  # the dir itself a link: removed
    assert (host / "secret.txt").exists()


def test_chown_all_changes_links_themselves(tmp_path: Path, resolver: str) -> None:
    ws, host, fs = _ws(tmp_path)
    (ws / "logs" / "l").symlink_to(host / "target.txt")
    before = os.stat(host / "target.txt")
    with fs:
        fs.chown_all(os.getuid(), os.getgid())  # as root in CI: lchown; anywhere: never the target
    after = os.stat(host / "target.txt")
    assert (before.st_uid, before.st_gid, before.st_ctime_ns) == (after.st_uid, after.st_gid, after.st_ctime_ns)


# ---- the guard: no other module touches a workspace path by name --------------------------

WS_NAMES = {"host_root", "src_host", "venv_host", "log_host", "junit_host", "sp_host"}
THROUGH_WSFS = {"fs", "ctx.fs", "ws.fs", "self.fs"}  # a JobDir: its methods are the safe way in
# calls that only name a path (or hand a name to a callee that goes through harness.core.wsfs)
NAMING = {
    "relative_to",
    "joinpath",
    "rel",
    "path",
    "host",
    "str",
    "Path",
    "JobDir",
    "replace",
    "Workspace",
    "split",
    "as_posix",
    "resolve",
    "_in_container",
    "len",
    "is_relative_to",
    "get",
    "join",
    "warning",
    "info",
    "debug",
    "_job_id",
    "InfraError",
    "isinstance",
    "startswith",
    "any",
    "Phase",
    "parse_phase",
    "tsan_reports",
    "makedirs",
    "run",
    "run_isolated",
    "rstrip",
}
# every other call that reaches a workspace path by name, and why it may: each is made before
# the first step that runs package code (or reads the source tree the host has just made)
ALLOWED = {
    (
        "harness/job/job.py",
        "clear_workspace(host_root",
    ): "job start: a previous run's workspace (removed by fd without recursion, never follows links)",
    ("harness/job/job.py", "host_root.mkdir("): "job start",
    ("harness/job/job.py", "(host_root / d).mkdir("): "job start",
    ("harness/job/job.py", "backend.open(job.job_id, host_root"): "job start: the backend's mounts",
    ("harness/job/source.py", "fetch.sdist("): "before any package code: the host's own download",
    ("harness/job/source.py", "fetch.clear("): "before any package code",
    ("harness/backends/docker.py", "host_root.mkdir("): "Backend.open: job start",
}


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _names_workspace(node: ast.AST) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in WS_NAMES:
            return True
        if isinstance(n, ast.Attribute) and n.attr == "src_host":  # a stage's value: source.Source.src_host
            return True
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "host":
            return True
    return False


def workspace_accesses(source: str) -> list[tuple[int, str]]:
    """(line, call) for each call that reaches a workspace path by name."""
    found = []
    for call in ast.walk(ast.parse(source)):
        if isinstance(call, ast.Call) and _callee(call) not in NAMING:
            if isinstance(call.func, ast.Attribute) and ast.unparse(call.func.value) in THROUGH_WSFS:
                continue
            parts = [*call.args, *(k.value for k in call.keywords)]
            if isinstance(call.func, ast.Attribute):
                parts.append(call.func.value)
            if any(_names_workspace(a) for a in parts):
                found.append((call.lineno, ast.unparse(call)))
    return sorted(found)


def test_the_guard_sees_a_new_access() -> None:
    planted = (
        "def f(ws, INNER):\n    shutil.copy2(INNER / 'probe.py', ws.host('probe.py'))\n"
        "    ws.host('inner', 'watchdog').mkdir(parents=True)\n    open(log_host, 'w')\n"
    )
    assert [line for line, _ in workspace_accesses(planted)] == [2, 3, 4]


# The job's stages that run before any package code: they make the source tree and read it
# (harness.testsetup.suitesetup, which stages.suite_setup calls, reads it then); the stages from the install on reach the workspace
# through ctx.fs only.
BEFORE_THE_INSTALL = {
    "harness/job/source.py": {"source", "_from_sdist"},
    "harness/job/stages.py": {"suite_setup", "_own_requirements"},
}
FROM_THE_INSTALL_ON = ("harness/job/stages.py", "harness/job/testruns.py", "harness/job/job.py")


def _functions(rel: str) -> list[ast.FunctionDef]:
    tree = ast.parse((ROOT / rel).read_text())
    return [n for n in tree.body if isinstance(n, ast.FunctionDef)]


def _before_the_install(rel: str) -> set[int]:
    """The lines of ``rel``'s stages that run before any package code."""
    names = BEFORE_THE_INSTALL.get(rel, set())
    return {
        line
        for fn in _functions(rel)
        if fn.name in names
        for line in range(fn.lineno, (fn.end_lineno or fn.lineno) + 1)
    }


def test_the_stages_before_the_install_are_there() -> None:
    for rel, names in BEFORE_THE_INSTALL.items():
        assert names <= {fn.name for fn in _functions(rel)}, rel


def test_every_host_access_to_a_workspace_goes_through_wsfs() -> None:
    bad, used = [], set()
    for p in sorted((ROOT / "harness").rglob("*.py")):
        rel = str(p.relative_to(ROOT))
        if p.name in ("wsfs.py", "fdwalk.py") or "_inner" in p.parts:  # the safe access itself
            continue
        for line, call in workspace_accesses(p.read_text()):
            if line in _before_the_install(rel):
                continue
            key = next((k for k in ALLOWED if k[0] == rel and call.startswith(k[1])), None)
            if key is None:
                bad.append(f"{rel}:{line}: {call[:120]}")
            used.add(key)
    assert bad == [], "reach the workspace through harness.core.wsfs.JobDir (ws.fs), not by name:\n" + "\n".join(bad)
    assert set(ALLOWED) - used == set(), "an allowed access is gone: drop it from ALLOWED"


def test_after_the_install_the_job_reads_nothing_of_the_workspace_by_name() -> None:
    """From the install stage on (stages.py past suite_setup, testruns.py, and the chain and
    result in job.py past the workspace's making), every access is through ctx.fs: none even allowed."""
    late = []
    for rel in FROM_THE_INSTALL_ON:
        src = (ROOT / rel).read_text()
        for fn in _functions(rel):
            if fn.name in BEFORE_THE_INSTALL.get(rel, set()) or fn.name == "open_job":  # job.open_job: job start
                continue
            body = "\n".join(src.splitlines()[fn.lineno - 1 : fn.end_lineno])
            late += [f"{rel}:{fn.name}: {call}" for _, call in workspace_accesses(body)]
    assert late == []


def test_a_handle_is_closed_with_its_last_reference(tmp_path: Path) -> None:
    """A job that raised never reaches run_job's close(): its handle must not leak (a run of
    thousands of jobs would run out of descriptors)."""
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(50):
        JobDir(tmp_path)
    assert len(os.listdir("/proc/self/fd")) == before
