"""JUnit XML as pytest, pytest-xdist and pytest-run-parallel wrote it (captured)."""

from pathlib import Path

import pytest

from harness.parse.junit import guess_nodeid, junit_key, parse_junit

DATA = Path(__file__).resolve().parents[2] / "data" / "parse"


def cases(rel: str):
    return parse_junit((DATA / rel).read_text(errors="replace"))


def test_xdist_crash_is_an_error_with_the_worker_message():
    got, clean = cases("crash/junit/plain-gil0.xml")
    assert clean
    out = {guess_nodeid(c): c.outcome for c in got}
    assert out == {
        "tests/test_crash.py::test_before": "passed",
        "tests/test_crash.py::test_segv": "crashed",
        "tests/test_crash.py::test_segv_nogil_only": "crashed",
        "tests/test_crash.py::test_after": "passed",
    }


def test_parallel_failed_is_a_failure_and_timeouts_are_timeouts():
    got, _ = cases("mix-noxdist/junit/threads-gil0-r1.xml")
    out = {guess_nodeid(c): c.outcome for c in got}
    assert out["tests/test_mix.py::test_race"] == "failed"
    assert out["tests/test_mix.py::test_xfail"] == "skipped"
    got, _ = cases("hang/junit/threads-gil0-r1.xml")
    assert {guess_nodeid(c): c.outcome for c in got}["tests/test_hang.py::test_lock_order"] == "timeout"


def test_collection_error_names_the_module():
    got, _ = cases("collerr/junit/plain-gil1.xml")
    bad = [c for c in got if c.outcome == "error"]
    assert [guess_nodeid(c) for c in bad] == ["tests/test_broken.py"]
    # pytest's message says only "collection failure": the error from the body goes with it
    assert bad[0].message == "collection failure: ModuleNotFoundError: No module named 'no_such_module_xyz'"


@pytest.mark.parametrize("scan", [False, True])
def test_a_real_collection_failure_carries_its_error(scan):
    # packaging 26.4, zero-config run on 3.13t: hypothesis (its test group) did not install
    text = (DATA / "collerr-hypothesis" / "plain-gil0.xml").read_text()
    got, _ = parse_junit(text[: -len("</testsuite></testsuites>")] if scan else text)
    (bad,) = [c for c in got if c.outcome == "error"]
    assert guess_nodeid(bad) == "tests/property/test_version_ordering.py"
    assert bad.message == "collection failure: ModuleNotFoundError: No module named 'hypothesis'"


@pytest.mark.parametrize(
    "nodeid",
    [
        "tests/test_mix.py::test_ok",
        "tests/test_mix.py::TestKlass::test_method",
        "tests/test_mix.py::test_param[d e]",
        "tests/test_broken.py",
    ],
)
def test_key_and_guess_are_inverse(nodeid):
    got, _ = cases("mix/junit/plain-gil0.xml")
    got += cases("collerr/junit/plain-gil1.xml")[0]
    match = [c for c in got if c.key == junit_key(nodeid)]
    assert len(match) == 1 and guess_nodeid(match[0]) == nodeid


def test_cut_file_gives_the_complete_cases_only():
    full, _ = cases("mix/junit/threads-gil0-r1.xml")
    half, clean = cases("mix-cut/junit/threads-gil0-r1.xml")
    assert not clean
    assert 0 < len(half) < len(full)
    fullmap = {c.key: c.outcome for c in full}
    assert all(fullmap[c.key] == c.outcome for c in half)


def test_garbage_and_empty_never_raise():
    assert parse_junit("") == ([], False)
    got, clean = cases("crash-garbled/junit/plain-gil0.xml")
    assert not clean and isinstance(got, list)
    assert parse_junit("\x00\xff<testsuite><testcase name=")[0] == []
