"""Tests inside the import package run from the installed copy (issue #14; numpy's layout).

ft_intree keeps its tests and a conftest.py inside `ft_intree/`, and the install ships them. Run
from the source tree, pytest loads the source's `ft_intree/conftest.py` while `ft_intree` is the
installed one: `ImportPathMismatchError`, every run an infra-error (numpy 2.5.5 in the top-30
run). From site-packages, with the sdist's own pytest config, the suite runs.
"""

from __future__ import annotations

import pytest

from tests.conftest import run_fixture

pytestmark = [pytest.mark.integration]
SETTINGS = "settings: {repeat: 1, iterations: 2, confirm: 0}"


def test_tests_inside_the_package_run_from_site_packages(tmp_path, ft_interpreter) -> None:
    d = run_fixture(tmp_path, "ft_intree", SETTINGS)
    assert d["verdict"] == "compatible", d["findings"]
    ts = d["test_setup"]
    assert ts["tests"] == "ft_intree/tests" and "--import-mode=append" not in ts["pytest_args"]
    assert ts["sources"][-1].startswith("tests run from the installed copy: site-packages/ft_intree/tests")
    for p in d["phases"]:
        if p["kind"] not in ("plain", "threads"):
            continue
        assert p["cwd"].endswith("/venv/lib/python3.13t/site-packages"), p["cwd"]
        assert p["counts"] == {"passed": 2}, (p["name"], p["counts"])
        log = (tmp_path / "out" / p["log"]).read_text()
        assert "configfile: ../../../../src/pkg/pyproject.toml" in log  # the sdist's config, via -c
        assert "site-packages/ft_intree/conftest.py" not in log  # no ImportPathMismatchError
