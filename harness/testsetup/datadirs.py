"""Data the package's own code finds beside itself in the sdist (pure: a source tree in, links out).

Some packages ship test helpers that reach past their own directory for the sdist's data:
dulwich 1.2.21's ``dulwich/tests/utils.py`` opens ``os.path.join(os.path.dirname(__file__),
"..", "..", "testdata", ...)``. From a checkout that is ``<root>/testdata``; once installed,
``site-packages/dulwich/tests/../../testdata`` is ``site-packages/testdata``, which nothing
made, and 102 of its tests failed with ``FileNotFoundError`` when the suite tested the
installed build (a checkout's run passes them). Such a directory is linked where the installed
package looks for it, so the suite tests the build with the data it was written against.

A directory qualifies when it sits at the sdist root, is not an import package nor the tests'
directory, and a ``.py`` file of the package's own import directory (``<pkg>/`` or
``src/<pkg>/``) names it as a string literal and climbs out of its directory (``".."``,
``os.pardir`` or ``.parent``) from ``__file__``. Only names of the sdist root: the link never
replaces anything the install made (``harness.job.datalinks``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

SCAN_FILES = 400  # .py files read per package at most
SCAN_BYTES = 512 * 1024  # per file
_CLIMB = re.compile(r"""["']\.\.["']|os\.pardir|\.parent\b""")


@dataclass(frozen=True)
class DataDir:
    name: str  # the directory at the sdist root ("testdata")
    up: int  # how far above site-packages it goes: 0 for <pkg>/, 1 for src/<pkg>/
    where: str  # the file that names it, relative to the root ("dulwich/tests/utils.py")

    def note(self) -> str:
        at = "site-packages" if not self.up else "/".join(["site-packages", *[".."] * self.up])
        return (
            f"{self.name}/ linked at {at}/{self.name}: {self.where} reads it relative to the "
            "package, which the tests import from site-packages"
        )


def find(src: Path, dist_name: str, tests: str) -> tuple[DataDir, ...]:
    """The sdist-root directories the package's own code reads relative to itself."""
    name = canonicalize_name(dist_name).replace("-", "_")
    for prefix in ("", "src"):
        pkg = src / prefix / name if prefix else src / name
        if (pkg / "__init__.py").is_file():
            break
    else:
        return ()
    tests_top = Path(tests).parts[0] if tests else ""
    candidates = {
        d.name
        for d in _dirs(src)
        if d.name != tests_top
        and d.name != name
        and not (d / "__init__.py").is_file()
        and not d.name.startswith((".", "_"))
    }
    if not candidates:
        return ()
    found: dict[str, DataDir] = {}
    for path in _py_files(pkg):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")[:SCAN_BYTES]
        except OSError:
            continue
        if "__file__" not in text or not _CLIMB.search(text):
            continue
        for cand in sorted(candidates - set(found)):
            if re.search(rf"""["']{re.escape(cand)}["'/]""", text):
                found[cand] = DataDir(cand, 1 if prefix else 0, path.relative_to(src).as_posix())
    return tuple(found[k] for k in sorted(found))


def _dirs(src: Path) -> list[Path]:
    try:
        return sorted(p for p in src.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return []


def _py_files(pkg: Path) -> list[Path]:
    out: list[Path] = []
    for root, dirs, files in os.walk(pkg):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        out += [Path(root) / f for f in sorted(files) if f.endswith(".py")]
        if len(out) >= SCAN_FILES:
            return out[:SCAN_FILES]
    return out
