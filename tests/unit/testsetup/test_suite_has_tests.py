"""harness.testsetup.where.has_tests: whether the source has tests the harness should run."""

from __future__ import annotations

from pathlib import Path

from harness.testsetup.where import has_tests


def _touch(root: Path, *paths: str) -> None:
    for rel in paths:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")


def test_a_vendored_projects_tests_are_not_the_packages_debugpy(tmp_path):
    # debugpy 1.8.22's sdist: no tests of its own, pydevd's (and pydevd's vendored bytecode's)
    # under src/debugpy/_vendored/; run from the root they failed to import (an infra-error)
    _touch(
        tmp_path,
        "src/debugpy/__init__.py",
        "src/debugpy/_vendored/pydevd/_pydevd_frame_eval/vendored/bytecode/tests/test_bytecode.py",
        "src/debugpy/_vendored/pydevd/tests_python/test_debugger.py",
    )
    assert not has_tests(tmp_path, "")


def test_own_tests_beside_vendored_ones_count(tmp_path):
    _touch(tmp_path, "pkg/_vendor/x/test_x.py", "tests/test_pkg.py")
    assert has_tests(tmp_path, "")


def test_a_tests_path_given_is_taken_as_it_is(tmp_path):
    _touch(tmp_path, "third_party/lib/test_lib.py")
    assert has_tests(tmp_path, "third_party")
    assert not has_tests(tmp_path, "missing")
