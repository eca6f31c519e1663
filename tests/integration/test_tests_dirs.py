"""Where the tests are when the sdist has no tests dir at its root (issue #35).

ft_pertree ships one source tree per Python version, as multiprocess 0.70.19 does (its run
from the sdist root collected every version's tree: 39 passed, 1,191 errors); ft_inpkg keeps
its tests only inside its import package, whose name is not the distribution's. Each tree that
is not the suite holds a test that fails wherever it is collected: a verdict of `compatible`
with exactly the suite's 2 tests in every run is one that came from the right tests.
"""

from __future__ import annotations

import pytest

from tests.conftest import run_fixture

pytestmark = [pytest.mark.integration]
SETTINGS = "settings: {repeat: 1, iterations: 2, confirm: 0}"


def _runs_from_site_packages(d: dict, rel: str, ids: set[str]) -> None:
    assert d["verdict"] == "compatible", d["findings"]
    runs = [p for p in d["phases"] if p["kind"] in ("plain", "threads")]
    assert {p["name"] for p in runs} >= {"plain-gil0", "threads-gil0-r1"}
    # gil_on: targeted (the default): all passed with the GIL off, so no GIL-on run is made
    assert d["gil_on"]["ran"] == "none" and not [p for p in runs if p["gil"] == 1], d["gil_on"]
    for p in runs:
        assert p["cwd"].endswith("/venv/lib/python3.13t/site-packages"), p["cwd"]
        assert p["command"][-1] == rel, p["command"]
        assert p["counts"] == {"passed": 2}, (p["name"], p["counts"])
        assert set(p["tests"]) == ids, (p["name"], sorted(p["tests"]))


def test_per_version_trees_run_the_interpreters_tree(tmp_path, ft_interpreter) -> None:
    d = run_fixture(tmp_path, "ft_pertree", SETTINGS)
    ts = d["test_setup"]
    assert ts["tests"] == "ft_pertree/tests", ts
    assert ts["sources"][0].startswith("tests dir: py3.13/ft_pertree/tests/ (one source tree per Python version")
    assert ts["sources"][-1].startswith("tests run from the installed copy: site-packages/ft_pertree/tests")
    _runs_from_site_packages(
        d,
        "ft_pertree/tests",
        {
            "ft_pertree/tests/test_tree.py::test_the_installed_tree_is_py313",
            "ft_pertree/tests/test_tree.py::test_scale",
        },
    )


def test_tests_only_inside_the_package(tmp_path, ft_interpreter) -> None:
    d = run_fixture(tmp_path, "ft_inpkg", SETTINGS)
    ts = d["test_setup"]
    assert ts["tests"] == "inpkg/tests", ts
    assert ts["sources"][0].startswith("tests dir: lib/inpkg/tests/ (inside the import package lib/inpkg/")
    _runs_from_site_packages(
        d,
        "inpkg/tests",
        {"inpkg/tests/test_counter.py::test_bump_counts_up", "inpkg/tests/test_counter.py::test_installed_copy"},
    )


def test_sdist_data_the_package_reads_beside_itself_is_linked(tmp_path, ft_interpreter) -> None:
    """ft_datadir's own helper opens dirname(__file__)/../testdata, as dulwich 1.2.21's does
    (102 of its tests failed with FileNotFoundError on site-packages/testdata before the link)."""
    d = run_fixture(tmp_path, "ft_datadir", SETTINGS)
    assert d["verdict"] == "compatible", d["findings"]
    link = next(p for p in d["phases"] if p["name"] == "data-links")
    assert link["exit_code"] == 0 and link["kind"] == "setup", link
    assert any(
        s.startswith("testdata/ linked at site-packages/testdata: ft_datadir/__init__.py")
        for s in d["test_setup"]["sources"]
    ), d["test_setup"]
    for p in (p for p in d["phases"] if p["kind"] in ("plain", "threads")):
        assert p["counts"] == {"passed": 2}, (p["name"], p["counts"])
