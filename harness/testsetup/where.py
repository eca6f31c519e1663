"""Where a suite's tests are in the sdist tree, and where they run from: whether the tree has
tests at all, whether the source tree would shadow the installed build, and whether the tests
sit inside the package's own import directory (then they run from the installed copy).
Read from the source before the install runs package code (harness.testsetup.suitesetup).
"""

from __future__ import annotations

from pathlib import Path

VENDORED = frozenset({"_vendored", "vendored", "_vendor", "vendor", "third_party", "_third_party"})


def has_tests(src: Path, tests: str) -> bool:
    """Whether ``tests`` (a file, or a dir with test_*.py / *_test.py files) is in the source.
    With no tests path (pytest searches the root), test files inside a vendored copy of another
    project (``_vendored/``, ``vendor/``, ``third_party/`` ...) are not the package's: debugpy
    1.8.22's sdist ships only pydevd's, under ``src/debugpy/_vendored/``."""
    root = src / tests if tests else src
    if root.is_file():
        return True
    if not root.is_dir():
        return False
    found = (f for pattern in ("test_*.py", "*_test.py") for f in root.rglob(pattern))
    return any(tests or not VENDORED & set(f.relative_to(root).parts[:-1]) for f in found)


def shadowing(src: Path, tests: str, name: str) -> str:
    """Why pytest's default import mode would import the source tree instead of the installed
    package (a tests dir that is a package, next to the package's own directory), or ""."""
    top = src / name.replace("-", "_").lower()
    if tests and (src / tests / "__init__.py").is_file() and (top / "__init__.py").is_file():
        return (
            f"--import-mode=append: {tests}/ is a package and {top.name}/ sits beside it, so the "
            "default mode would import the source tree, not the installed build"
        )
    return ""


def tests_in_package(src: Path, tests: str) -> str | None:
    """The tests' path below the import root when they sit inside the package's own import
    directory (``numpy/tests``, ``src/pkg/tests``) with no ``conftest.py`` of the source outside
    it, else None. Run from the source tree, pytest would import the source's package for its
    conftest.py while the tests import the installed one (``ImportPathMismatchError``, numpy) or
    test the unbuilt source; run from site-packages (harness.job.jobfiles.site_packages finds
    them there), the suite tests the build."""
    parts = Path(tests).parts if tests else ()
    for i in range(len(parts)):  # the import root: the first dir whose child is a package
        if (src.joinpath(*parts[: i + 1]) / "__init__.py").is_file():
            root, rel = src.joinpath(*parts[:i]), Path(*parts[i:])
            break
    else:
        return None
    if len(rel.parts) < 2:  # a top-level tests package is not inside the package (and may clash)
        return None
    if any((d / "conftest.py").is_file() for d in [root, *root.parents] if d == src or src in d.parents):
        return None
    return str(rel)
