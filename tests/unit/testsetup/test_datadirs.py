"""harness.testsetup.datadirs: the sdist data a package's own code reads beside itself."""

from __future__ import annotations

from pathlib import Path

from harness.testsetup import datadirs
from harness.testsetup.datadirs import DataDir

# dulwich 1.2.21's dulwich/tests/utils.py, lines 86-92 (the helper its suite opens repos with)
DULWICH_UTILS = '''
def open_repo(name, temp_dir=None):
    """Open a copy of a repo in a temporary directory."""
    if temp_dir is None:
        temp_dir = tempfile.mkdtemp()
    repo_dir = os.path.join(
        os.path.dirname(__file__), "..", "..", "..", "testdata", "repos", name
    )
'''


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def test_dulwichs_testdata_is_found_from_its_package_helper(tmp_path: Path) -> None:
    src = _tree(
        tmp_path,
        {
            "dulwich/__init__.py": "",
            "dulwich/tests/__init__.py": "",
            "dulwich/tests/utils.py": DULWICH_UTILS,
            "testdata/repos/a.git/HEAD": "ref\n",
            "tests/__init__.py": "",
            "tests/test_repo.py": "",
            "docs/index.txt": "",
            "crates/x/Cargo.toml": "",
        },
    )
    assert datadirs.find(src, "dulwich", "tests") == (DataDir("testdata", 0, "dulwich/tests/utils.py"),)


def test_a_src_layout_links_one_level_above_site_packages(tmp_path: Path) -> None:
    src = _tree(
        tmp_path,
        {
            "src/pkg/__init__.py": 'import os\nD = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")\n',
            "fixtures/a.txt": "x",
        },
    )
    (found,) = datadirs.find(src, "pkg", "")
    assert found == DataDir("fixtures", 1, "src/pkg/__init__.py")
    assert found.note().startswith("fixtures/ linked at site-packages/../fixtures: src/pkg/__init__.py")


def test_nothing_without_a_climb_from_file_or_for_packages_and_the_tests_dir(tmp_path: Path) -> None:
    src = _tree(
        tmp_path,
        {
            "pkg/__init__.py": 'NAME = "docs"\n',  # names a root dir, never climbs out of itself
            "pkg/paths.py": 'import os\nHERE = os.path.dirname(__file__)\nX = os.path.join(HERE, "..", "tests")\n'
            'Y = os.path.join(HERE, "..", "helpers")\n',
            "docs/a.txt": "",
            "tests/test_a.py": "",
            "helpers/__init__.py": "",
        },
    )
    assert datadirs.find(src, "pkg", "tests") == ()


def test_no_package_directory_means_no_links(tmp_path: Path) -> None:
    src = _tree(
        tmp_path,
        {"other/__init__.py": 'import os\nos.path.join(os.path.dirname(__file__), "..", "data")', "data/a.txt": ""},
    )
    assert datadirs.find(src, "pkg", "") == ()
