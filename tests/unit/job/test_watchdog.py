"""harness.job.watchdog and the plugin it loads (_inner/ft_harness_watchdog.py), issue #20."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness.backends.base import Workspace
from harness.core.wsfs import JobDir
from harness.job.watchdog import PLUGIN, SOURCE, install, seconds, watchdog_env
from harness.parse.hang import find_hang, watchdog_dumps


def _ws(tmp_path: Path) -> Workspace:
    (tmp_path / "host").mkdir(exist_ok=True)
    with JobDir(tmp_path / "host") as fs:
        install(fs)
    return Workspace(host_root=tmp_path / "host", root="/ws", python="/py")


def test_env_loads_the_plugin_from_a_directory_of_its_own(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    env = watchdog_env(ws, {"PYTHON_GIL": "0"}, test_timeout=120)
    assert env == {"PYTHONPATH": "/ws/inner/watchdog", "PYTEST_PLUGINS": PLUGIN, "FT_HARNESS_WATCHDOG": "250"}
    assert (ws.host("inner", "watchdog", f"{PLUGIN}.py")).read_text() == SOURCE.read_text()
    # ours only: the watchdog, and the plugin that keeps a GIL-on run to its tests (gil_on: targeted)
    assert sorted(p.name for p in ws.host("inner", "watchdog").iterdir()) == ["ft_harness_only.py", f"{PLUGIN}.py"]
    assert seconds(5) == 20  # past pytest-timeout's own timeout, which ends what it can


def test_env_keeps_the_packages_own_path_and_plugins(tmp_path: Path) -> None:
    env = watchdog_env(_ws(tmp_path), {"PYTHONPATH": "/pkg/lib", "PYTEST_PLUGINS": "theirs"}, 5)
    assert env["PYTHONPATH"] == "/ws/inner/watchdog:/pkg/lib"
    assert env["PYTEST_PLUGINS"] == f"{PLUGIN},theirs"


def test_the_plugin_dumps_every_thread_to_the_real_stderr_and_ends_the_test(tmp_path: Path) -> None:
    # a real pytest (this venv's), the plugin loaded as the harness loads it; a test that sleeps
    # past the watchdog (1 s): pytest captures fd 2 during the test, the dump must not go there
    (tmp_path / "test_sleep.py").write_text(
        "import time\n\ndef test_quick():\n    pass\n\ndef test_sleeps():\n    time.sleep(60)\n"
    )
    env = {**os.environ, **watchdog_env(_ws(tmp_path), {}, 5), "FT_HARNESS_WATCHDOG": "1"}
    env["PYTHONPATH"] = str(tmp_path / "host" / "inner" / "watchdog")
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "test_sleep.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "ft-harness watchdog: 1 s per test (faulthandler)" in r.stdout  # in pytest's header
    assert "test_sleep.py::test_quick PASSED" in out  # armed per test, cancelled after each
    (d,) = watchdog_dumps(out)
    assert d.after == "0:00:01"
    hang = find_hang(out, timed_out_tests=[], timed_out=False, unfinished=[], finished=False)
    assert hang is not None and hang.test_id == "test_sleep.py::test_sleeps"
    assert "test_sleep.py:7 in test_sleeps" in hang.tests[0].excerpt


def test_without_the_variable_the_plugin_does_nothing(tmp_path: Path) -> None:
    (tmp_path / "test_quick.py").write_text("def test_quick():\n    pass\n")
    env = {**os.environ, "PYTEST_PLUGINS": PLUGIN, "PYTHONPATH": str(SOURCE.parent)}
    env.pop("FT_HARNESS_WATCHDOG", None)
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_quick.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout + r.stderr
    assert "ft-harness watchdog" not in r.stdout


def test_the_plugin_registers_pytest_covs_marker_when_pytest_cov_is_not_there(tmp_path: Path) -> None:
    # python-dateutil 4.0.0: `filterwarnings = error` and tests marked `no_cover`; the harness
    # drops pytest-cov, so without the marker the suite stops at collection
    (tmp_path / "test_marked.py").write_text("import pytest\n\n@pytest.mark.no_cover\ndef test_marked():\n    pass\n")
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:pytest_cov",
        "--strict-markers",
        "-W",
        "error::pytest.PytestUnknownMarkWarning",
        "-q",
        "test_marked.py",
    ]
    bare = {k: v for k, v in os.environ.items() if k not in ("PYTEST_PLUGINS", "FT_HARNESS_WATCHDOG")}
    r = subprocess.run(cmd, cwd=tmp_path, env=bare, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "no_cover" in r.stdout + r.stderr  # what the suite did before
    env = {**bare, "PYTEST_PLUGINS": PLUGIN, "PYTHONPATH": str(SOURCE.parent)}
    r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_long_collection_says_so_from_every_xdist_worker(tmp_path: Path) -> None:
    # pycryptodome 3.23: 106,028 items kept its GIL-off xdist workers silent past the harness's
    # silence limit (190 s) before any test started; a heartbeat line keeps a long collection
    # apart from a frozen process. Here a test module that takes 3 s to import, heartbeat 1 s.
    (tmp_path / "test_slow_import.py").write_text(
        "import time\ntime.sleep(3)\n\ndef test_a():\n    pass\n\ndef test_b():\n    pass\n"
    )
    env = {**os.environ, **watchdog_env(_ws(tmp_path), {}, 5), "FT_HARNESS_HEARTBEAT": "1"}
    env["PYTHONPATH"] = str(tmp_path / "host" / "inner" / "watchdog")
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "-n", "2", "test_slow_import.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    for worker in ("gw0", "gw1"):
        assert f"[ft-harness] {worker}: collecting, 0 items so far (1 s)" in out, out
    assert "2 passed" in r.stdout
