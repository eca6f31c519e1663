"""Small pure helpers of the job runner."""

from __future__ import annotations

import pytest

from harness.job import pinned_version


@pytest.mark.parametrize(("spec", "version"), [
    ("==2.1.1", "2.1.1"), ("===1.0", "1.0"), ("==3.*", ""), (">=1,<2", ""), ("", ""), ("~=1.4", ""),
    ("not a spec", ""),
])
def test_pinned_version(spec, version):
    assert pinned_version(spec) == version


# pytest's own configuration: files it takes, and files it does not (issue #20)
from pathlib import Path  # noqa: E402

from harness.job import has_pytest_config  # noqa: E402


@pytest.mark.parametrize("where, name, text, found", [
    ("", "pytest.ini", "", True),                      # pytest takes it even when empty
    ("", ".pytest.ini", "[pytest]\n", True),
    ("", "pyproject.toml", "[tool.pytest.ini_options]\naddopts = '-x'\n", True),
    ("", "pyproject.toml", "[tool.pytest]\nminversion = '9'\n", True),
    ("", "pyproject.toml", "[project]\nname = 'x'\n", False),  # ujson 6.1.0's case
    ("", "pyproject.toml", "not [ toml", False),
    ("", "tox.ini", "[tox]\nenvlist = py\n[pytest]\naddopts = -ra\n", True),
    ("", "tox.ini", "[tox]\nenvlist = py\n", False),
    ("", "setup.cfg", "[metadata]\nname = x\n[tool:pytest]\ntestpaths = tests\n", True),
    ("", "setup.cfg", "[metadata]\nname = x\n", False),
    ("tests", "pytest.ini", "[pytest]\n", True),      # found first, walking up from the tests
])
def test_has_pytest_config(tmp_path: Path, where: str, name: str, text: str, found: bool) -> None:
    src = tmp_path / "outer" / "src" / "pkg-1.0"
    (src / "tests").mkdir(parents=True)
    (src / where / name).write_text(text)
    # what lies above the package's source never counts: that is the point
    (tmp_path / "outer" / "pytest.ini").write_text("[pytest]\naddopts = --strict-markers\n")
    assert has_pytest_config(src, "tests") is found
    assert has_pytest_config(src, "tests/test_x.py") is found
    assert has_pytest_config(src, "") is (found and where == "")
