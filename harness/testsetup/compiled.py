"""Whether the sdist builds compiled code, read from its tree before any package code ran
(harness.verdict.artifact says why it matters: a compiled project's pure fallback wheel).

``compiled_evidence``: a ``.pyx``/``.c``/``.cpp``/``.rs`` source outside its tests and docs, a
``Cargo.toml``, a setup.py with ``ext_modules``/``Extension(``, a ``[tool.setuptools]
ext-modules`` table; ``with_cpython_wheel``: that evidence only when the index lists a compiled
CPython wheel of the release.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from .sdistfiles import SdistFiles

COMPILED_SUFFIXES = (".pyx", ".c", ".cc", ".cpp", ".cxx", ".rs")
NOT_SOURCES = {
    "tests",
    "test",
    "testing",
    "docs",
    "doc",
    "examples",
    "example",
    "benchmarks",
    "bench",
    "vendor",
    "third_party",
    "__pycache__",
    "build",
    "dist",
}
WALK_DIRS = 2000  # directories looked at, at most


def compiled_evidence(src: Path, files: SdistFiles | None = None) -> str:
    """A file of the sdist that says it builds compiled code (relative to ``src``), or "".
    ``files``: its config files as read once (None: read them now)."""
    files = files if files is not None else SdistFiles(src)
    for name in ("Cargo.toml",):
        if (src / name).is_file():
            return name
    for name in ("setup.py", "pyproject.toml"):
        text = (files.text(name) or "")[:200_000]
        if any(s in text for s in ("ext_modules", "Extension(", "ext-modules", "cythonize(")):
            return f"{name} (declares extension modules)"
    for n, (root, dirs, names) in enumerate(os.walk(src)):  # links are not followed
        dirs[:] = sorted(d for d in dirs if d not in NOT_SOURCES and not d.startswith("."))
        hit = next((f for f in sorted(names) if f.endswith(COMPILED_SUFFIXES)), "")
        if hit:
            return str(Path(root, hit).relative_to(src))
        if n >= WALK_DIRS:
            break
    return ""


def with_cpython_wheel(evidence: str, files: Sequence[str]) -> str:
    """``evidence`` with a compiled CPython wheel of the release the index lists, or "" when it
    lists none: then its pure wheels are what the project ships for CPython, not a fallback
    (multiprocess 0.70.19: one ``py3X-none-any`` wheel per version, compiled ones for PyPy
    only; its setup.py declares an extension it never builds on Python 3)."""
    for f in files:
        try:
            tags = parse_wheel_filename(f)[3] if f.endswith(".whl") else frozenset()
        except InvalidWheelFilename:
            continue
        if any(t.interpreter.startswith("cp") and t.abi != "none" for t in tags):
            return f"{evidence}; the index has {f}"
    return ""
