"""Reproduce commands: what a finding's reader pastes to see it again, on its own."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from ..model import Phase

_DROP_FLAG = ("--junitxml", "--junit-xml", "--numprocesses", "--collect-only", "--co", "--dist")
_DROP_THREADS = ("--parallel-threads", "--iterations")
_VALUE_OPTS = ("-p", "-k", "-m", "-c", "-o", "-W", "--rootdir", "--confcutdir", "--basetemp",
               "--deselect", "--ignore", "--ignore-glob", "-r", "--tb", "--durations", "--maxfail")


def _pytest_args(cmd: Sequence[str]) -> tuple[list[str], list[str]]:
    """(head up to ``-m pytest``, or a tox command up to its ``--``; the pytest arguments)."""
    for i in range(len(cmd) - 1):
        if cmd[i] == "-m" and cmd[i + 1] == "pytest":
            return list(cmd[: i + 2]), list(cmd[i + 2 :])
        if cmd[i] == "-m" and cmd[i + 1] == "tox" and "--" in cmd[i:]:
            j = list(cmd).index("--", i)
            return list(cmd[: j + 1]), list(cmd[j + 1 :])
    return list(cmd), []


def reproduce(phase: Phase, test_id: str | None) -> str:
    """A shell command that reproduces what ``phase`` found, on its own.

    pytest runs lose ``--junitxml`` and ``-n auto`` (a crash then ends pytest
    itself, which is what one wants to see) and, when ``test_id`` is given,
    their test paths, replaced by that id; plain runs keep no thread options,
    threaded runs keep ``--parallel-threads``/``--iterations``.
    """
    head, args = _pytest_args(phase.command)
    if not args:
        cmd = list(phase.command)
    else:
        kept: list[str] = []
        paths: list[str] = []
        i = 0
        while i < len(args):
            a = args[i]
            name = a.split("=", 1)[0]
            if a in ("-n", "--dist") or (a.startswith("-n") and len(a) > 2 and a[2:3] != "-"):
                i += 2 if a in ("-n", "--dist") else 1
                continue
            if name in _DROP_FLAG or (phase.kind != "threads" and name in _DROP_THREADS):
                i += 1 if "=" in a or name in ("--collect-only", "--co") else 2
                continue
            if a in _VALUE_OPTS and i + 1 < len(args):
                kept += [a, args[i + 1]]
                i += 2
                continue
            (paths if not a.startswith("-") else kept).append(a)
            i += 1
        cmd = head + kept + ([test_id] if test_id else paths)
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(phase.env.items()))
    line = " ".join(shlex.quote(c) for c in cmd)
    if phase.gil is None and phase.kind in ("probe", "install") and "PYTHON_GIL" not in phase.env:
        line = f"env -u PYTHON_GIL {line}" if phase.kind == "probe" else line
    prefix = f"cd {shlex.quote(phase.cwd)} && " if phase.cwd else ""
    return f"{prefix}{env + ' ' if env else ''}{line}"


def probe_command(probe_phase: Phase | None, phases: Sequence[Phase], module: str) -> str:
    """The import that shows a GIL warning: ``python -W default -c "import mod; ..."``."""
    python = ""
    for p in [probe_phase, *phases]:
        if p is not None and p.command and p.kind in ("probe", "plain", "threads"):
            python = p.command[0]
            break
    if not module:
        return reproduce(probe_phase, None) if probe_phase else ""
    code = f"import sys, {module}; print(sys._is_gil_enabled())"
    py = shlex.quote(python or "python")
    return f"env -u PYTHON_GIL {py} -P -W default -c {shlex.quote(code)}"


