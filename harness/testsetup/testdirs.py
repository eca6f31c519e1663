"""Where a package's tests are in its sdist (step 1 of ``harness.testsetup.infer``; pure: files in, a path out).

In order, the first that holds:

1. a known place: ``tests/``, ``test/``, ``testing/``, ``src/<pkg>/tests``, ``<pkg>/tests``
   (``<pkg>`` = the import name, ``-`` -> ``_``);
2. a **per-version tree**: an sdist that ships one source tree per Python version
   (multiprocess 0.70.19: ``py3.9/`` ... ``py3.15/``, each with ``multiprocess/tests/``) is
   tested in the tree for the interpreter's ``major.minor`` -- or, as such a setup.py picks it,
   the newest tree below it -- and never in the others (pytest from the root collected every
   version's tree: 1,191 errors). Inside it, (1) and then (3) are looked for; none: the tree;
3. **tests inside the package**: a ``tests``/``test``/``testing`` directory holding test files,
   whose parent is an import package (``__init__.py``), at most ``IN_PACKAGE_DEPTH`` below the
   root (``lib/yaml/tests``, an import name that is not the distribution's): the install ships
   it, and ``harness.testsetup.where.tests_in_package`` runs it from site-packages;
4. none: ``""`` (pytest searches the source root).

The decision is one line of ``Inferred.sources``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from packaging.utils import canonicalize_name

TEST_DIR_NAMES = ("tests", "test", "testing")
IN_PACKAGE_DEPTH = 3  # lib/pkg/tests: the tests dir at most 3 levels below the root
VERSION_TREE_RE = re.compile(r"^py(?P<major>\d)\.(?P<minor>\d{1,2})$")  # py3.13; not pypy3.10
SKIP_DIRS = {
    "build",
    "dist",
    "docs",
    "doc",
    "examples",
    "example",
    "benchmarks",
    "node_modules",
    "site-packages",
    "venv",
    "__pycache__",
}
WALK_DIRS = 2000  # directories looked at in (3), at most: an sdist is not a file system to crawl


def find(src: Path, dist_name: str, python_version: str) -> tuple[str, str]:
    """(the tests path relative to ``src`` or "", the note that says why)."""
    pkg = canonicalize_name(dist_name).replace("-", "_")
    known = _known(src, pkg)
    if known:
        return known, f"tests dir: {known}/"
    trees = version_trees(src)
    if trees:
        tree = pick_tree(trees, python_version)
        listed = ", ".join(f"{t}/" for t in sorted(trees, key=lambda t: trees[t]))
        if tree:
            inner = _known(src / tree, pkg) or in_package(src / tree)
            found = f"{tree}/{inner}" if inner else tree
            which = (
                f"{tree}/ is Python {python_version}'s"
                if _version(python_version) == trees[tree]
                else f"none is Python {python_version}'s; {tree}/, the newest older one, as a setup.py of this "
                "layout picks it"
            )
            return found, (
                f"tests dir: {found}/ (one source tree per Python version, {listed}: {which}; "
                "the others are not collected)"
            )
        return "", (
            f"tests dir: none found (per-version source trees {listed}, none for Python "
            f"{python_version} or older; pytest searches the root)"
        )
    inside = in_package(src)
    if inside:
        return inside, (
            f"tests dir: {inside}/ (inside the import package {Path(inside).parent}/, "
            "none of tests/, test/, testing/ at the root: the install ships it)"
        )
    return "", "tests dir: none found (pytest searches the root)"


def _known(src: Path, pkg: str) -> str:
    for cand in (*TEST_DIR_NAMES, f"src/{pkg}/tests", f"{pkg}/tests"):
        if (src / cand).is_dir() and not (src / cand).is_symlink():
            return cand
    return ""


def _version(text: str) -> tuple[int, int] | None:
    parts = text.split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


def version_trees(src: Path) -> dict[str, tuple[int, int]]:
    """The per-version source trees at the root: ``py3.13`` -> (3, 13); {} when there are
    fewer than two (one ``py3.8/`` is a name, not a scheme)."""
    out: dict[str, tuple[int, int]] = {}
    try:
        entries = list(os.scandir(src))
    except OSError:
        return {}
    for e in entries:
        m = VERSION_TREE_RE.match(e.name)
        if m and e.is_dir(follow_symlinks=False):
            out[e.name] = (int(m.group("major")), int(m.group("minor")))
    return out if len(out) >= 2 else {}


def pick_tree(trees: dict[str, tuple[int, int]], python_version: str) -> str:
    """The tree for ``python_version`` (``3.13``), else the newest older one; "" if none."""
    want = _version(python_version)
    if want is None:
        return ""
    fits = [(v, name) for name, v in trees.items() if v[0] == want[0] and v <= want]
    return max(fits)[1] if fits else ""


def _has_test_files(d: Path) -> bool:
    for n, (_root, _dirs, files) in enumerate(os.walk(d)):
        if any(f.endswith(".py") and (f.startswith("test_") or f.endswith("_test.py")) for f in files):
            return True
        if n >= WALK_DIRS:
            return False
    return False


def in_package(src: Path) -> str:
    """The shallowest tests dir inside an import package below ``src`` (see the module
    docstring, 3); ties: the first by name. "" if none. Links are not followed."""
    seen = 0
    level = [Path()]
    for _depth in range(IN_PACKAGE_DEPTH):
        found: list[str] = []
        nxt: list[Path] = []
        for rel in level:
            try:
                entries = sorted(os.scandir(src / rel), key=lambda e: e.name)
            except OSError:
                continue
            is_pkg = rel != Path() and (src / rel / "__init__.py").is_file()
            for e in entries:
                if not e.is_dir(follow_symlinks=False) or e.name.startswith(".") or e.name in SKIP_DIRS:
                    continue
                seen += 1
                if seen > WALK_DIRS:
                    return found[0] if found else ""
                if is_pkg and e.name in TEST_DIR_NAMES and _has_test_files(src / rel / e.name):
                    found.append(str(rel / e.name))
                else:
                    nxt.append(rel / e.name)
        if found:
            return found[0]
        level = nxt
    return ""
