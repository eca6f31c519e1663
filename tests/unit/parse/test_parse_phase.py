"""parse_phase on every captured phase (tests/data/parse/*/phases/*.json): real runs of
pytest / pytest-xdist / pytest-run-parallel on the free-threaded 3.13.5 build, plus
cut-in-half and garbled copies.  See tests/data/parse/*/CMD for the exact commands."""

import dataclasses
import json
from pathlib import Path

import pytest

from harness.core.model import OUTCOMES, Phase
from harness.parse import incomplete, parse_phase

DATA = Path(__file__).resolve().parents[2] / "data" / "parse"
CASES = sorted(p.name for p in DATA.iterdir() if (p / "phases").is_dir())


def load(case: str) -> dict[str, Phase]:
    d = DATA / case
    out = {}
    for pj in sorted((d / "phases").glob("*.json")):
        phase = Phase.from_dict(json.loads(pj.read_text()))
        out[phase.name] = parse_phase(phase, d)
    return out


@pytest.mark.parametrize("case", CASES)
def test_every_captured_phase_parses(case):
    phases = load(case)
    assert phases
    for p in phases.values():
        assert set(p.counts) <= set(OUTCOMES)
        assert sum(p.counts.values()) == len(p.tests) or not p.tests
        assert all(tc.outcome in OUTCOMES for tc in p.tests.values())
        if (DATA / case / p.log).stat().st_size:
            assert p.excerpt
        json.dumps(p.to_dict())  # everything parse adds must serialise


def test_same_ids_with_and_without_xdist():
    xd, plain = load("mix"), load("mix-noxdist")
    ids = set(xd["plain-gil0"].tests)
    assert ids == set(plain["plain-gil0"].tests) == set(xd["threads-gil0-r1"].tests)
    assert ids == set(plain["threads-gil0-r1"].tests)
    assert "tests/test_mix.py::test_param[d e]" in ids
    assert "tests/test_mix.py::TestKlass::test_method" in ids
    assert len(ids) == 12


def test_outcomes_of_the_mixed_suite():
    p = load("mix")["threads-gil0-r1"]
    t = p.tests
    assert t["tests/test_mix.py::test_race"].outcome == "failed"
    assert "another thread wrote" in t["tests/test_mix.py::test_race"].message
    assert t["tests/test_mix.py::test_skipped"].outcome == "skipped"
    assert t["tests/test_mix.py::test_xfail"].outcome == "skipped"
    assert p.counts == {"passed": 7, "failed": 3, "skipped": 2}
    assert load("mix")["threads-gil1-r1"].tests["tests/test_mix.py::test_race"].outcome == "passed"


def test_crashed_worker_and_timeout_outcomes():
    c = load("crash")["plain-gil0"]
    assert c.tests["tests/test_crash.py::test_segv"].outcome == "crashed"
    assert c.tests["tests/test_crash.py::test_after"].outcome == "passed"
    h = load("hang")["plain-gil1"]
    assert h.tests["tests/test_hang.py::test_sleeps_forever"].outcome == "timeout"
    assert h.tests["tests/test_hang.py::test_lock_order"].outcome == "passed"


def test_missing_files_give_an_empty_phase():
    p = Phase(name="plain-gil0", kind="plain", gil=0, log="logs/nope.log", junit="junit/nope.xml", exit_code=1)
    out = parse_phase(p, DATA)
    assert out.tests == {} and out.excerpt == "" and out.crash is None
    assert incomplete(out)


def test_junit_alone_when_the_log_is_missing():
    p = dataclasses.replace(load("mix")["plain-gil1"], log="")
    out = parse_phase(p, DATA / "mix")
    assert out.tests["tests/test_mix.py::test_baseline_fail"].outcome == "failed"
    assert out.tests["tests/test_mix.py::TestKlass::test_method"].outcome == "passed"


@pytest.mark.parametrize("case", ["mix-cut", "crash-cut", "hang-cut", "mix-garbled"])
def test_cut_or_garbled_output_is_flagged_not_raised(case):
    phases = load(case)
    flagged = [p.name for p in phases.values() if incomplete(p)]
    assert flagged, "a cut log must be marked incomplete"
    assert all(phases[n].excerpt for n in flagged)


def test_complete_runs_are_not_flagged():
    for case in ("mix", "crash", "hang", "collerr", "empty", "allunsafe"):
        for p in load(case).values():
            assert not incomplete(p), (case, p.name)


def test_an_internalerror_that_is_a_memoryerror_says_so():
    # botocore 1.44.18, zero configuration, local backend (4 GiB RLIMIT_DATA a process): an
    # xdist worker's MemoryError while rewriting a test module's asserts, from the log's end
    from harness.parse import _internal_cause

    text = (DATA / "internal-memoryerror.log").read_text()
    assert _internal_cause(text) == ("MemoryError: a pytest process ran out of memory under the run's memory limit")
    assert _internal_cause("INTERNALERROR> AssertionError: ('t.py::x', <WorkerController gw0>)") == ""
