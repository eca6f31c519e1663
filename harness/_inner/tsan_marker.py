"""pytest plugin (runs inside the job's venv, not in the harness): mark test
boundaries in this process's ThreadSanitizer log so reports can be attributed.

Loaded with ``-p tsan_marker`` and this directory on PYTHONPATH.  It opens
``<log_path>.<pid>`` (log_path from TSAN_OPTIONS) with O_APPEND, hands that fd to
the sanitizer runtime (``__sanitizer_set_report_fd``) and writes its own lines
to the same fd, so markers and reports are ordered in one file::

    ft-harness: test start tests/test_x.py::test_y
    ... any TSan report detected while that test ran ...
    ft-harness: test end tests/test_x.py::test_y

Does nothing on an interpreter without TSan or when log_path is not a file.
Uses only the standard library (it must import on any Python the job uses).
"""

import contextlib
import ctypes
import os
import shlex

MARKER = "ft-harness: test "
_fd = None


def _log_path():
    opts = os.environ.get("TSAN_OPTIONS", "")
    try:
        words = shlex.split(opts.replace(":", " "))
    except ValueError:
        return ""
    path = ""
    for w in words:
        if w.startswith("log_path="):
            path = w[len("log_path=") :]
    return "" if path in ("", "stderr", "stdout") else path


def _open():
    path = _log_path()
    if not path:
        return None
    try:
        set_fd = ctypes.CDLL(None).__sanitizer_set_report_fd
    except (OSError, AttributeError):
        return None
    set_fd.argtypes = [ctypes.c_void_p]
    set_fd.restype = None
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(f"{path}.{os.getpid()}", flags, 0o644)
    except OSError:
        return None
    set_fd(fd)
    return fd


def _write(verb, nodeid):
    if _fd is not None:
        with contextlib.suppress(OSError):
            os.write(_fd, f"{MARKER}{verb} {nodeid}\n".encode("utf-8", "replace"))


def pytest_configure(config):
    global _fd
    # Under pytest-xdist the controller runs no test: only workers (and plain runs) mark.
    if getattr(config, "workerinput", None) is None and getattr(config.option, "numprocesses", None):
        return
    if _fd is None:
        _fd = _open()


def pytest_runtest_logstart(nodeid, location):
    _write("start", nodeid)


def pytest_runtest_logfinish(nodeid, location):
    _write("end", nodeid)
