"""GIL re-enabled warnings -> the modules that re-enabled it.

CPython (free-threaded build, default GIL mode) warns once per module::

    <frozen importlib._bootstrap>:488: RuntimeWarning: The global interpreter lock (GIL)
    has been enabled to load module 'pkg._speedups', which has not declared that it can
    run safely ...

The message is the same in 3.13 and 3.14 (``_PyImport_CheckGILForModule``); the
``<frozen importlib._bootstrap>:NNN`` prefix is not (488 on 3.13, 491 on 3.14), so
only the message is matched (tests: tests/data/real/py314/gil-warning.log).

pytest-run-parallel (without --ignore-gil-enabled) turns the same event into
``GIL was dynamically re-enabled during <stage> to load module '<name>'``.
"""

from __future__ import annotations

import re

GIL_WARNING_RE = re.compile(
    r"The global interpreter lock \(GIL\) has been enabled to load\s+module\s+'(?P<module>[^'\s]+)'"
)
RUN_PARALLEL_RE = re.compile(r"GIL was dynamically re-enabled during .*? to load module '(?P<module>[^'\s]+)'")


def gil_modules(text: str) -> list[str]:
    """Module names from every GIL-re-enabled warning in ``text``, first seen first."""
    found: dict[str, None] = {}
    for rx in (GIL_WARNING_RE, RUN_PARALLEL_RE):
        for m in rx.finditer(text or ""):
            found.setdefault(m.group("module"), None)
    return list(found)


def warning_lines(text: str, module: str = "") -> list[str]:
    """The log lines that carry a GIL warning (for ``module`` only, if given)."""
    out = []
    for line in (text or "").splitlines():
        m = GIL_WARNING_RE.search(line) or RUN_PARALLEL_RE.search(line)
        if m and (not module or m.group("module") == module):
            out.append(line.strip())
    return out
