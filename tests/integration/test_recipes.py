"""Community recipes end to end (harness.testsetup.registry, harness.testsetup.suitesetup), on the real interpreter.

iniconfig 2.3.0 with no settings of its own: the shipped laruche recipe says
``python -m pytest testing/`` (its sdist has ``testing/``), so the suite runs there and the
result, report.md and the site say the path came from the recipe.  A registry of one's own
(``settings.registry``) whose recipe lists 3.13 in ``skip_versions`` stops the job before
anything is fetched: verdict ``skipped`` with the registry's reason.

Both run on the docker backend: a release from the index never builds or runs unisolated on
the CI runner (#46; six's job stops before its fetch, but the tests' ``cli`` refuses any package
of the index on the local backend, whatever its job would do).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.results.report import REPORT_SCHEMA
from tests.conftest import INTERP_YAML, cli, results
from tests.integration.conftest import DOCKER

pytestmark = [pytest.mark.integration, pytest.mark.network]
SETTINGS = "settings: {repeat: 1, iterations: 2, confirm: 0, job_timeout: 900}\n"
LABEL = "laruche 2026-03-08 (204de34)"


@pytest.mark.docker
@DOCKER[2]
def test_a_package_runs_with_its_recipes_test_path_and_the_report_says_so(tmp_path: Path) -> None:
    m = tmp_path / "matrix.yaml"
    m.write_text(SETTINGS + INTERP_YAML + "packages: [{name: iniconfig, version: '==2.3.0'}]\n")
    r = cli("run", "--matrix", str(m), "--out", str(tmp_path / "out"), "--backend", "docker")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (d,) = results(tmp_path / "out").values()
    assert (d["verdict"], d["backend"]) == ("compatible", "docker"), d["findings"]
    ts = d["test_setup"]
    assert (ts["tests"], ts["tests_from"]) == ("testing", "recipe")
    assert ts["recipe"]["registry"] == LABEL and ts["recipe"]["used"] == ["test path testing"]
    plain = next(p for p in d["phases"] if p["name"] == "plain-gil0")
    assert plain["command"][-1] == "testing" and plain["counts"]["passed"] > 0
    md = (tmp_path / "out" / "report.md").read_text()
    row = [line for line in md.splitlines() if line.startswith("| iniconfig |")][-1]  # the jobs table
    assert "| inferred + recipe |" in row  # the test setup column: the path from the recipe
    page = next((tmp_path / "out" / "site").rglob("*iniconfig*.html")).read_text()
    assert "testing (recipe), 0 test dep(s) (inferred" in page and f"recipe: {LABEL}" in page
    assert f"recipe ({LABEL}): test path testing" in page


@pytest.mark.docker
@DOCKER[2]
def test_a_registry_skip_for_this_python_is_not_run_and_says_why(tmp_path: Path) -> None:
    reg = tmp_path / "mine.json"
    reg.write_text(
        json.dumps(
            {
                "name": "mine",
                "commit_date": "2027-01-02",
                "packages": {
                    "six": {"test_command": "python -m pytest", "skip_versions": {"3.13": "no 3.13 for this test"}}
                },
            }
        )
    )
    m = tmp_path / "matrix.yaml"
    m.write_text(
        SETTINGS.replace("}", f", registry: {reg}}}") + INTERP_YAML + "packages: [{name: six, version: '==1.17.0'}]\n"
    )
    r = cli("run", "--matrix", str(m), "--out", str(tmp_path / "out"), "--backend", "docker")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (d,) = results(tmp_path / "out").values()
    assert (d["verdict"], d["phases"], d["version"]) == ("skipped", [], "1.17.0")
    (f,) = d["findings"]
    assert (
        f["kind"] == "skipped"
        and f["message"] == "not run: recipe (mine 2027-01-02): not run on 3.13: no 3.13 for this test"
    )
    assert d["test_setup"]["recipe"]["skip"] == "no 3.13 for this test"
    md = (tmp_path / "out" / "report.md").read_text()
    assert "⏭️ **skipped**" in md and "no 3.13 for this test" in md
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["schema"] == REPORT_SCHEMA and report["summary"]["skipped"] == 1
    junit = (tmp_path / "out" / "junit.xml").read_text()
    assert 'skipped="1"' in junit and "no 3.13 for this test" in junit
