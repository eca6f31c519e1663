"""The upstream-ready issue of a deciding finding (issue #57), on run1's captured results.

tests/data/report/run1 holds real output of the fixture packages on free-threaded 3.13.5 (logs and
JUnit files under work/<job>/, result files under results/): a race, a thread-unsafe test, a
hang, a crash only without the GIL, a module that re-enables the GIL, a compatible package.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path

import pytest

from harness.render import issuetext
from harness.render.issuerecipe import loop
from harness.results.report import ProjectMeta
from tests.conftest import cli
from tests.data.report.shared import DATA, full_report

RUN1 = DATA / "run1"


@pytest.fixture(scope="module")
def report():
    return full_report()


def one(report, name: str, interp: str = "cp313t") -> issuetext.Issue:
    (p,) = [q for q in report.packages if q.name == name and q.interpreter.name == interp]
    (i,) = issuetext.issues(report, p, RUN1)
    return i


@pytest.mark.parametrize(("k", "n"), [(1, 5), (9, 50), (1, 3), (4, 20), (20, 20)])
def test_the_loop_reaches_95_percent_at_a_conservative_rate(k, n) -> None:
    runs = issuetext.loop_runs(k, n)
    low = issuetext.lower_rate(k, n)
    assert 0 < low <= k / n / 2  # never more than half the observed rate
    assert 1 - (1 - low) ** runs >= 0.95
    assert runs == 1 or 1 - (1 - low) ** (runs - 1) < 0.95  # the smallest such loop
    # at the observed rate itself, the loop is (much) surer than 95%
    assert 1 - (1 - k / n) ** runs >= 0.95
    assert runs >= math.ceil(math.log(0.05) / math.log(1 - min(k / n, 0.999)))


def test_a_race_issue_has_versions_counts_failure_recipe_and_class(report) -> None:
    i = one(report, "fx-race")
    t = i.text
    assert t.startswith("## `tests/test_buf.py::test_shared_buffer` fails in threads with the GIL off")
    versions = t[t.index("### Versions") : t.index("### What happened")]
    assert "CPython 3.13.5 (free-threaded), built by ft-harness from `debian:trixie`" in versions
    assert "pytest 9.2.0, pytest-run-parallel 0.10.0, pytest-xdist 3.8.0, pytest-timeout 2.4.0" in versions
    assert "threads 4, iterations 5" in versions
    f = i.finding
    k0, n0 = f.by_mode["gil0"].split("/")
    assert f"- GIL off (PYTHON_GIL=0): failed in {k0} of {n0} threaded suite runs" in t
    assert "- GIL on (PYTHON_GIL=1):" in t
    # the other interpreter of the report, where it was not seen
    assert "- on CPython 3.13.15 (cp31315t): not seen (verdict `compatible`)" in t
    assert "### The failure" in t and f.excerpt.strip().splitlines()[0] in t
    blocks = re.findall(r"^```sh\n(.*?)\n```$", t, re.S | re.M)
    assert len(blocks) == 4
    assert "uv python install 3.13.5+freethreaded" in blocks[0]
    k, n = issuetext.gil_off_rate(f)
    runs = issuetext.loop_runs(k, n)
    assert f"seq 1 {runs}" in blocks[2] and "PYTHON_GIL=0" in blocks[2] and "PYTHON_GIL=1" in blocks[3]
    assert (
        "'tests/test_buf.py::test_shared_buffer'" in blocks[2] or "tests/test_buf.py::test_shared_buffer" in blocks[2]
    )
    assert f"`passed all {runs} runs: not reproduced`" in t  # the GIL-on line's expected output
    assert "**a bug of the library**" in t


def test_a_thread_unsafe_test_is_the_tests_bug_with_the_marker_as_fix(report) -> None:
    t = one(report, "fx-thread-unsafe").text
    assert "with the GIL on too" in t and "**a bug of the tests**" in t
    assert "@pytest.mark.thread_unsafe" in t
    assert "Expected: it fails with the GIL on too" in t


def test_a_hang_quotes_every_threads_stack_and_a_crash_its_dump(report) -> None:
    hang = one(report, "fx-hang").facts.failure
    assert "Failed: Timeout (>5.0s) from pytest-timeout" in hang and "~ Stack of <unknown>" in hang, hang[:300]
    crash = one(report, "fx-ft-crash")
    assert "Fatal Python error: Segmentation fault" in crash.facts.failure
    assert "crashes (signal 11)" in crash.title


def test_a_gil_reenabling_module_gets_the_slot_as_fix(report) -> None:
    t = one(report, "msgpack").text
    assert t.startswith("## Importing `msgpack._cmsgpack` re-enables the GIL on free-threaded CPython 3.13.5")
    assert "Py_mod_gil" in t and "PyUnstable_Module_SetGIL" in t
    assert "import msgpack._cmsgpack, sys" in t  # the import that shows it, in the recipe
    # with PYTHON_GIL unset: PYTHON_GIL=0 keeps the GIL off and hides the warning (checked on 3.13.5t)
    assert "\nenv -u PYTHON_GIL python -W default -c 'import msgpack._cmsgpack, sys;" in t
    assert "PYTHON_GIL=0 python" not in t
    assert "No bug tracker in the package's metadata." in t  # run1's probe recorded none


def test_the_tracker_comes_from_the_project_urls(report) -> None:
    (p,) = [q for q in report.packages if q.name == "msgpack" and q.interpreter.name == "cp313t"]
    urls = {"Source": "https://github.com/msgpack/msgpack-python", "Bug Tracker": "https://example.org/bugs"}
    labelled = replace(p, metadata=ProjectMeta(raw={"project_urls": urls}))
    assert issuetext.tracker(labelled) == "https://example.org/bugs"
    source = replace(p, metadata=ProjectMeta(raw={"project_urls": {"Source": urls["Source"] + ".git"}}))
    assert issuetext.tracker(source) == "https://github.com/msgpack/msgpack-python/issues"
    hostile = replace(p, metadata=ProjectMeta(raw={"project_urls": {"Issues": "javascript:alert(1)"}}))
    assert issuetext.tracker(hostile) == ""


def test_a_compatible_package_has_no_issue(report) -> None:
    (p,) = [q for q in report.packages if q.name == "attrs" and q.interpreter.name == "cp313t"]
    assert issuetext.issues(report, p, RUN1) == []


def test_a_failure_holding_backticks_stays_in_its_fence() -> None:
    fenced = issuetext._fence("a\n````\nb")
    assert fenced.startswith("`````\n") and fenced.endswith("\n`````")


def test_the_loop_stops_at_the_first_failure() -> None:
    script = loop("PYTHON_GIL=0 false", 0, 7)
    import subprocess

    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    assert r.stdout.strip() == "failed on run 1 of 7: reproduced"
    r = subprocess.run(["bash", "-c", loop("PYTHON_GIL=0 true", 1, 3)], capture_output=True, text=True)
    assert r.stdout.strip() == "passed all 3 runs: not reproduced"


def test_reproduce_issue_prints_the_markdown_and_one_line_without_one(tmp_path) -> None:
    import shutil

    out = tmp_path / "out"
    shutil.copytree(RUN1, out)
    from harness import render

    render.write_all(full_report(), out, history=None)
    r = cli("reproduce", str(out), "fx-thread-unsafe", "--issue")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("## `tests/test_state.py::test_global_counter` fails when run in threads")
    assert "### How to reproduce" in r.stdout
    r = cli("reproduce", str(out), "attrs", "--issue")
    assert r.returncode == 0
    assert r.stdout.strip().splitlines() == [
        "attrs: no finding to file upstream (compatible on cp313t, compatible on cp31315t)"
    ]
    page = (out / "site" / "pkg").glob("*fx-thread-unsafe*.html")
    html = next(page).read_text()
    assert 'id="issue-text-1"' in html and "button" in html
    assert "Issue to file:" in (out / "report.md").read_text()
    assert isinstance(Path, type)
