"""Reproduce commands: what a finding's reader pastes to see it again, on its own."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from ..core.model import Phase

MODULE_RE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", re.ASCII)


def reproduce(phase: Phase, test_id: str | None) -> str:
    """A shell command that reproduces what ``phase`` found, on its own.

    A test phase is rebuilt from its parts (``Phase.test_command``): without what only that run
    needed (``-n auto``, so a crash ends pytest itself; ``--junitxml``; ``--collect-only``), with
    its thread options when it had them, on ``test_id`` or, without one, the whole suite.  Other
    phases (fetch, install, probe) are their command as it ran.
    """
    tc = phase.test_command
    cmd = list(tc.alone(test_id)) if tc is not None else list(phase.command)
    env = " ".join(_assign(k, v) for k, v in sorted(phase.env.items()))
    line = " ".join(shlex.quote(c) for c in cmd)
    if phase.gil is None and phase.kind in ("probe", "install") and "PYTHON_GIL" not in phase.env:
        line = f"env -u PYTHON_GIL {line}" if phase.kind == "probe" else line
    prefix = f"cd {shlex.quote(phase.cwd)} && " if phase.cwd else ""
    return f"{prefix}{env + ' ' if env else ''}{line}"


def _assign(key: str, value: str) -> str:
    """``K=V`` for a shell line; the PATH a test phase ran with (the venv's bin first, then
    where the harness ran) as ``PATH=<venv>/bin:"$PATH"``, the part that is the job's."""
    if key == "PATH" and value.split(":", 1)[0].endswith("/venv/bin"):
        return f'PATH={shlex.quote(value.split(":", 1)[0])}:"$PATH"'
    return f"{key}={shlex.quote(value)}"


def probe_command(probe_phase: Phase | None, phases: Sequence[Phase], module: str) -> str:
    """The import that shows a GIL warning: ``python -W default -c "import mod; ..."``."""
    python = ""
    for p in [probe_phase, *phases]:
        if p is not None and p.command and p.kind in ("probe", "plain", "threads"):
            python = p.command[0]
            break
    if not module or not MODULE_RE.fullmatch(module):  # the name comes from the package's output
        return reproduce(probe_phase, None) if probe_phase else ""
    code = f"import sys, {module}; print(sys._is_gil_enabled())"
    py = shlex.quote(python or "python")
    return f"env -u PYTHON_GIL {py} -P -W default -c {shlex.quote(code)}"
