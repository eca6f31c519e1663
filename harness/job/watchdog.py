"""The watchdog for waits in C (issue #20): what loads ``_inner/ft_harness_watchdog.py`` into a
job's plain and threaded test runs.

pytest-timeout's signal method cannot end a test whose main thread waits in C; the plugin has
faulthandler dump every thread and end the process at :func:`seconds`, past pytest-timeout's own
timeout, so such a test ends there and not at the job timeout (``harness.parse.hang`` reads the
dump). Not for the ThreadSanitizer runs, nor for the runs alone of confirmation, which use
pytest-timeout's thread method. Under ``runner: tox`` the tox env is told to pass them on
(``PASS_ENV``, in ``suite.tox_overrides``); the plugin prints a line in pytest's header.
"""

from __future__ import annotations

from pathlib import Path

from ..backends.base import Workspace
from ..core.wsfs import JobDir
from ..parse.hang import WATCHDOG_ENV

PLUGIN = "ft_harness_watchdog"
ONLY = "ft_harness_only"  # on the same path: harness/_inner/ft_harness_only.py (harness.verdict.gilon)
SOURCE = Path(__file__).parent.parent / "_inner" / f"{PLUGIN}.py"
ENV = WATCHDOG_ENV  # seconds; the plugin does nothing without it
# what a test run needs from its environment that tox does not pass on by default (it does pass
# PYTHON_GIL); PYTHONUNBUFFERED keeps pytest's lines coming, which the stall check reads
PASS_ENV = ("PYTHON_GIL", "PYTHONFAULTHANDLER", "PYTHONUNBUFFERED", "PYTHONPATH", "PYTEST_PLUGINS", ENV)


def seconds(test_timeout: int) -> int:
    """When the watchdog ends a test: well past pytest-timeout's ``test_timeout``, which ends
    every wait it can (and, under pytest-run-parallel, dumps the threads)."""
    return 2 * test_timeout + 10


def stall_seconds(test_timeout: int) -> int:
    """When a run whose log stays silent is ended by the backend (``backends.base.Quiet``): past
    the watchdog, which ends any test it can, by a third of its time up to a minute (310 s at the
    default test_timeout 120, 40 s at 10); past that, the process is frozen so that neither
    in-process watchdog acts (seen: six's threaded run, every thread in a futex wait). The backend
    then asks each process for its stacks and ends it: within 2 x the watchdog's time."""
    watchdog = seconds(test_timeout)
    return watchdog + min(60, watchdog // 3)


PLUGIN_DIR = "inner/watchdog"  # in the workspace: a directory of its own, so nothing else of ours
#                               can shadow one of the package's modules


def install(fs: JobDir) -> None:
    """Copy the plugin into the workspace: at job start, before any package code runs
    (``harness.core.wsfs``); the test runs find it there. With it, ``ONLY``: the plugin that
    keeps a GIL-on run to the tests listed (``settings.gil_on: targeted``), loaded by ``-p``."""
    fs.copy_in(SOURCE, f"{PLUGIN_DIR}/{PLUGIN}.py")
    fs.copy_in(SOURCE.with_name(f"{ONLY}.py"), f"{PLUGIN_DIR}/{ONLY}.py")


def watchdog_env(ws: Workspace, env: dict[str, str], test_timeout: int) -> dict[str, str]:
    """The variables that load the plugin (``install`` put it in the workspace), added to
    ``env``'s own PYTHONPATH and PYTEST_PLUGINS."""
    path = ":".join(x for x in (ws.path(*PLUGIN_DIR.split("/")), env.get("PYTHONPATH", "")) if x)
    plugins = ",".join(x for x in (PLUGIN, env.get("PYTEST_PLUGINS", "")) if x)
    return {"PYTHONPATH": path, "PYTEST_PLUGINS": plugins, ENV: str(seconds(test_timeout))}
