"""A module that re-enables the GIL only once the test deps are in is a note, never the verdict
(harness.verdict.latergil; issue #57). The probe.json files are the real probe's (tests/data/probe)."""

from __future__ import annotations

from pathlib import Path

from harness.core.model import Finding, InterpreterInfo, JobResult, Phase
from harness.core.proberecord import LaterGil, Probe
from harness.parse.probe import parse_probe
from harness.results.report import JobEntry
from harness.verdict.latergil import LATER_PROBE, later_gil

DATA = Path(__file__).parents[2] / "data" / "probe" / "ft_gilextra"


def _phase(name: str, file: str) -> Phase:
    return Phase(name=name, kind="probe", exit_code=0, probe=parse_probe((DATA / file).read_bytes()))


def test_the_extra_s_module_seen_only_after_the_test_deps_is_a_note_naming_the_extra() -> None:
    first, later = _phase("probe", "probe.json"), _phase(LATER_PROBE, "probe-test-deps.json")
    assert first.probe is not None and first.probe.modules == () and first.probe.gil_enabled is False
    (note,) = later_gil([first, Phase(name="test-deps", kind="setup", exit_code=0), later])
    assert (note.module, note.dist, note.extra) == ("ft_gilextra_speedups._fast", "ft_gilextra_speedups", "speedups")
    assert (
        note.note == "with the `speedups` extra: ft_gilextra_speedups's `ft_gilextra_speedups._fast` re-enables the GIL"
    )


def test_a_module_the_first_probe_saw_is_no_note_and_one_probe_gives_none() -> None:
    later = _phase(LATER_PROBE, "probe-test-deps.json")
    both = Phase(name="probe", kind="probe", exit_code=0, gil_modules=("ft_gilextra_speedups._fast",))
    assert later_gil([both, later]) == ()  # the package's own import re-enabled it: the verdict's
    assert later_gil([_phase("probe", "probe-test-deps.json")]) == ()  # no second probe


def test_a_test_dependency_outside_the_extras_is_said_as_one() -> None:
    later = Phase(
        name=LATER_PROBE,
        kind="probe",
        exit_code=0,
        probe=Probe.from_dict({"modules": ["_six"], "origins": {"_six": {"dist": "six", "extra": ""}}}),
    )
    (note,) = later_gil([Phase(name="probe", kind="probe", exit_code=0), later])
    assert note.note == "a test dependency: six's `_six` re-enables the GIL"


def test_origins_of_the_wrong_shape_are_dropped_and_said() -> None:
    p = Probe.from_dict({"modules": ["m"], "origins": {"m": ["Brotli"]}})
    assert p.origins == {} and p.problems == ("probe.json: origins has the wrong type, ignored",)


def test_the_notes_travel_through_the_result_and_report_json() -> None:
    later = LaterGil(module="_brotli", dist="Brotli", extra="speedups")
    base = JobResult(
        job_id="j", key="k", package="p", interpreter=InterpreterInfo(name="t", version="3.13.5", key="t")
    ).to_dict()
    assert base["gil_with_test_deps"] == []
    r = JobResult.from_dict({**base, "gil_with_test_deps": [later.to_dict(), {"module": 5}, "x"]})
    assert r.gil_with_test_deps == (later,)
    assert JobResult.from_dict(r.to_dict()).gil_with_test_deps == (later,)
    e = JobEntry.from_dict({"gil_with_test_deps": [later.to_dict()], "findings": [Finding(kind="x").to_dict()]})
    assert e.gil_with_test_deps == (later,) and e.to_dict()["gil_with_test_deps"][0]["note"].startswith(
        "with the `speedups` extra: Brotli's `_brotli`"
    )


def test_aiohttp_s_brotli_is_a_note_naming_the_speedups_extra() -> None:
    # the real probes of a harness run of aiohttp 3.14.5 (tests/data/probe/aiohttp-3.14.5)
    from harness.parse.gil import gil_modules

    data = DATA.parent / "aiohttp-3.14.5"
    first, later = (
        Phase(
            name=n,
            kind="probe",
            exit_code=0,
            gil_modules=tuple(gil_modules((data / f"{n}.log").read_text())),
            probe=parse_probe((data / f"{n}.json").read_bytes()),
        )
        for n in ("probe", LATER_PROBE)
    )
    assert first.gil_modules == () and first.probe is not None and first.probe.gil_enabled is False
    assert "aiohttp._http_parser" in first.probe.imported  # the compiled build, not the pure wheel
    (note,) = later_gil([first, later])
    assert note.note == "with the `speedups` extra: brotli's `_brotli` re-enables the GIL"
