"""A pytest plugin ft-harness loads into every main test run (``PYTEST_PLUGINS``; issue #20).

pytest-timeout's signal method ends a test that waits in Python, but not one whose main thread
waits in C (a ``pthread_cond_wait`` or a lock the GIL holder needs): the signal is only handled
when the C call returns, so such a test used to run until the job timeout. This plugin arms
faulthandler's watchdog for every test, at ``FT_HARNESS_WATCHDOG`` seconds (the harness sets
2 x test_timeout + 10, past pytest-timeout's own): from a C thread that needs neither the GIL
nor the main thread, it dumps every thread's stack to the process's stderr as it was before pytest's
capture (the phase's log, from an xdist worker too) and ends the process. ``harness.parse.hang`` reads the dump ("Timeout
(0:00:30)!") as a hang of the test whose function is on a stack, with where each thread waits.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import threading
import time

import pytest

SECONDS = float(os.environ.get("FT_HARNESS_WATCHDOG", "0") or 0)
# the process's own stderr, taken at import (PYTEST_PLUGINS loads us before pytest's capture
# starts): during a test fd 2 is pytest's capture file, which nobody reads after the process ends
LOG_FD = os.dup(2) if SECONDS > 0 else -1
# Collection prints nothing until it is done, and an xdist worker's not even then: pycryptodome
# 3.23's 106,028 items took its GIL-off workers past the harness's silence limit (190 s) with no
# test started. While collecting, a line every HEARTBEAT seconds says so (from a Python thread:
# a process frozen with the GIL held stays silent and is still ended for it), and faulthandler
# ends a collection still going at COLLECT_SECONDS, with every thread's stack.
HEARTBEAT = float(os.environ.get("FT_HARNESS_HEARTBEAT", "30") or 30)  # seconds; tests set it lower
COLLECT_SECONDS = max(600.0, 3 * SECONDS)
_items = [0]
# The backends' silence watch (harness.backends.base.Quiet), for a process frozen so that neither
# pytest-timeout nor the dump above can act (a test that blocked SIGALRM and cancelled the dump, a
# deadlock that also holds faulthandler's watchdog thread): before it ends the process it sends
# STACKS_SIGNAL, and faulthandler's C handler writes every thread's stack to the log. No Python
# code runs for it, so a process whose every thread waits still answers.
STACKS_SIGNAL = signal.SIGUSR1
if SECONDS > 0:
    faulthandler.register(STACKS_SIGNAL, file=LOG_FD, all_threads=True, chain=False)


def pytest_configure(config) -> None:
    """pytest-cov's ``no_cover`` marker, when pytest-cov is not there: the harness does not
    install coverage tools (harness.testsetup.reqlines), and a suite that marks a test with it under
    ``--strict-markers`` or ``filterwarnings = error`` (python-dateutil) would stop at
    collection with "Unknown pytest.mark.no_cover"."""
    if not config.pluginmanager.hasplugin("pytest_cov"):
        config.addinivalue_line("markers", "no_cover: pytest-cov's marker (ft-harness does not measure coverage)")


def pytest_report_header() -> str | None:
    """A line in pytest's header, so a log shows the watchdog was armed (under tox too)."""
    return f"ft-harness watchdog: {SECONDS:g} s per test (faulthandler)" if SECONDS > 0 else None


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):  # noqa: ARG001 (pytest's hook signature)
    if SECONDS <= 0:
        yield
        return
    faulthandler.dump_traceback_later(SECONDS, exit=True, file=LOG_FD)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def _beat(done: threading.Event, started: float) -> None:
    who = os.environ.get("PYTEST_XDIST_WORKER", "pytest")
    while not done.wait(HEARTBEAT):
        line = f"[ft-harness] {who}: collecting, {_items[0]} items so far ({time.monotonic() - started:.0f} s)\n"
        try:
            os.write(LOG_FD, line.encode())
        except OSError:
            return


def pytest_itemcollected(item) -> None:  # noqa: ARG001 (pytest's hook signature)
    _items[0] += 1


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_collection(session):  # noqa: ARG001 (pytest's hook signature)
    if SECONDS <= 0:
        yield
        return
    done = threading.Event()
    beat = threading.Thread(target=_beat, args=(done, time.monotonic()), name="ft-harness-heartbeat", daemon=True)
    beat.start()
    faulthandler.dump_traceback_later(COLLECT_SECONDS, exit=True, file=LOG_FD)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        done.set()
