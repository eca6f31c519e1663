"""harness.config.timings: per-phase profiles of measured jobs, summed for the phases a job's
settings will run (plan's estimate, shard sizing and the run's ETA), on results captured from the
default matrix's 3.13.5t column (tests/data/timings/defmat: docker, 2026-12-05, load ~15)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.config import estimate, matrix, plan, timings
from harness.core.model import read_result

DEFMAT = Path(__file__).resolve().parents[2] / "data" / "timings" / "defmat"
ROOT = Path(__file__).resolve().parents[3]


def _result(name: str):
    return read_result(DEFMAT / f"cpython3.13t--{name}.json")


def _profile(name: str) -> timings.Profile:
    r = _result(name)
    return timings.from_phases(r.phases, r.settings)


def _settings(**kw) -> matrix.Settings:
    """The default matrix's settings (matrix.yaml), with ``kw`` changed."""
    base = dict(threads=4, iterations=5, repeat=3, test_timeout=120, job_timeout=1200, confirm=5, gil_on="full")
    return matrix.Settings(**{**base, **kw})


def _phases(name: str, *kinds: str, gil: int | None = None) -> float:
    return sum(
        p.duration for p in _result(name).phases if (not kinds or p.kind in kinds) and (gil is None or p.gil == gil)
    )


@pytest.mark.parametrize("name", ["idna", "iniconfig", "pyyaml", "cffi", "six"])
def test_the_measured_settings_give_the_measured_time(name):
    """Under the settings it ran with, a profile sums back to the job's phases."""
    prof = _profile(name)
    assert prof.measured == pytest.approx(_phases(name), abs=0.01)
    assert timings.seconds(_settings(), prof) == pytest.approx(prof.measured, rel=0.005)


def test_a_profile_is_per_kind_of_phase():
    prof = _profile("iniconfig")
    assert prof.install == pytest.approx(_phases("iniconfig", "install", "setup"), abs=0.01)
    assert prof.plain == {
        0: pytest.approx(_phases("iniconfig", "plain", gil=0), abs=0.01),
        1: pytest.approx(_phases("iniconfig", "plain", gil=1), abs=0.01),
    }
    assert prof.threads[0] == pytest.approx(_phases("iniconfig", "threads", gil=0) / 3, abs=0.01)
    assert prof.off_failed == 0.0 and prof.confirm == 0.0  # compatible: nothing red with the GIL off


def test_targeted_gil_on_after_a_clean_gil_off_run_has_no_gil_on_phases():
    """iniconfig passed with the GIL off: a targeted job runs no GIL-on test at all."""
    prof = _profile("iniconfig")
    off_only = prof.install + prof.probe + prof.collect + prof.plain[0] + 3 * prof.threads[0]
    assert timings.seconds(_settings(gil_on="targeted"), prof) == pytest.approx(off_only, abs=0.01)
    assert timings.seconds(_settings(gil_on="full"), prof) > off_only + prof.plain[1]


def test_targeted_gil_on_reruns_the_failed_share_and_drops_gil_on_only_confirmations():
    """idna: one test failed in one GIL-off run; its 600 s of confirmation were of the hang seen
    with the GIL on only, which a targeted job does not run."""
    prof = _profile("idna")
    assert 0 < prof.off_failed < 0.05
    assert prof.confirm == pytest.approx(_phases("idna", "confirm"), abs=0.01) and prof.confirm > 500
    assert prof.confirm_off == 0.0  # the confirmed test passed in every GIL-off run
    full = timings.seconds(_settings(), prof)
    targeted = timings.seconds(_settings(gil_on="targeted"), prof)
    off = prof.install + prof.probe + prof.collect + prof.plain[0] + 3 * prof.threads[0]
    # each GIL-on run costs a start-up and the failed share of the suite
    assert off < targeted < off + 4 * prof.collect + prof.plain[1] + 3 * prof.threads[1]
    assert targeted < full / 3


def test_six_fails_in_both_modes_and_keeps_its_share():
    prof = _profile("six")
    assert prof.off_failed and prof.off_failed > 0
    assert timings.seconds(_settings(gil_on="targeted"), prof) < timings.seconds(_settings(), prof)


def test_a_job_that_stopped_before_its_tests_costs_its_steps_only():
    prof = _profile("cffi")  # build-failure: fetch and install
    assert not prof.plain and not prof.threads
    for s in (_settings(), _settings(gil_on="targeted"), _settings(repeat=10, iterations=50)):
        assert timings.seconds(s, prof) == pytest.approx(prof.install + prof.probe, abs=0.01)


def test_settings_scale_the_phases():
    prof = _profile("six")
    base = timings.seconds(_settings(), prof)
    assert timings.seconds(_settings(repeat=1), prof) < base < timings.seconds(_settings(repeat=5), prof)
    # iterations x threads grow only the part of a threaded run over a plain run
    more = timings.seconds(_settings(iterations=10), prof)
    over = sum(max(0.0, prof.threads[m] - prof.plain[m]) for m in (0, 1))
    assert more == pytest.approx(base + 3 * over, rel=0.01)
    assert timings.seconds(_settings(gil_modes=(0,)), prof) < base


def test_confirmation_scales_with_confirm_and_stays_in_its_budget():
    prof = _profile("idna")
    no = timings.seconds(_settings(confirm=0), prof)
    assert timings.seconds(_settings(), prof) - no == pytest.approx(prof.confirm, rel=0.01)
    assert timings.seconds(_settings(confirm=10, confirm_budget=100), prof) - no == pytest.approx(100, abs=0.5)


def test_the_job_budget_caps_the_tests():
    prof = _profile("idna")
    s = _settings(job_timeout=60)
    assert timings.seconds(s, prof) == pytest.approx(prof.install + prof.probe + 60, abs=0.01)


def test_a_targeted_source_is_taken_as_measured():
    """A result that ran targeted GIL-on phases: a targeted job takes them as they were; one
    that ran none (nothing red with the GIL off) has none; a full job runs the whole suite."""
    r = _result("iniconfig")
    none_on = [p for p in r.phases if p.gil != 1]
    prof = timings.from_phases(none_on, {**r.settings, "gil_on": "targeted"})
    off_only = timings.seconds(_settings(gil_on="targeted"), prof)
    assert off_only == pytest.approx(prof.measured, abs=0.01)
    assert timings.seconds(_settings(), prof) > off_only + prof.plain[0]
    some_on = [p for p in r.phases if p.rep <= 1]  # repeat 1: the first threaded run per mode
    prof = timings.from_phases(some_on, {**r.settings, "gil_on": "targeted", "repeat": 1})
    assert timings.seconds(_settings(gil_on="targeted", repeat=1), prof) == pytest.approx(prof.measured, abs=0.01)


def test_a_report_row_without_test_ids_keeps_the_confirmation():
    """A report's PhaseRow has counts but no per-test outcomes: confirmations are kept whole."""
    from harness.results import aggregate

    rep = aggregate.build_report([_result("idna")], meta={})
    (entry,) = rep.packages
    prof = timings.from_phases(entry.phases, entry.settings)
    assert prof.confirm_off == prof.confirm > 500 and prof.off_failed and prof.off_failed > 0


# ------------------------------------------------------------------ the table


def _jobs(settings: str, *pkgs: str, sanitizer: str = "") -> list[plan.Job]:
    san = ", sanitizer: thread" if sanitizer else ""
    return plan.make_plan(
        matrix.loads(
            f'interpreters: [{{name: cpython3.13t, version: "3.13.5", source: "debian:trixie"{san}}}]\n'
            f"settings: {settings}\npackages: [" + ", ".join(f"{{name: {p}}}" for p in pkgs) + "]\n"
        )
    )


def _table(tmp_path, scale=None, **rows):
    path = tmp_path / "durations.json"
    path.write_text(json.dumps({"packages": rows, **({"scale": scale} if scale else {})}))
    timings.table.cache_clear()
    return path


def _row(name: str) -> dict:
    prof = _profile(name)
    return {"seconds": prof.measured, "settings": timings.row_settings(prof.settings), "phases": prof.to_row()}


def test_a_table_row_is_the_profile_and_its_scale_is_applied(tmp_path):
    path = _table(tmp_path, Six=_row("six"))
    six = timings.table(path)["six"]
    assert six == _profile("six")
    path = _table(tmp_path, scale={"factor": 0.5, "note": "halved"}, six=_row("six"))
    half = timings.table(path)["six"]
    assert half.plain[0] == pytest.approx(six.plain[0] / 2, abs=0.001) and half.off_failed == six.off_failed
    (job,) = _jobs("{gil_on: full}", "six")
    assert timings.seconds(job.settings, half) == pytest.approx(timings.seconds(job.settings, six) / 2, rel=0.01)


def test_not_for_tsan_local_or_unknown_packages_and_old_rows_are_skipped(tmp_path):
    path = _table(tmp_path, six=_row("six"), idna={"seconds": 900.0, "settings": {}})  # an old row
    job, other = _jobs("{}", "six", "idna")
    assert set(timings.measured([job, other], path)) == {job.job_id}
    (tsan,) = _jobs("{}", "six", sanitizer="thread")
    assert timings.measured([tsan], path) == {}


def test_a_missing_or_broken_table_is_no_table(tmp_path):
    timings.table.cache_clear()
    assert timings.table(tmp_path / "none.json") == {}
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert timings.table(bad) == {}
    broken = _table(tmp_path, six={"seconds": 1, "phases": {"plain": {"0": "x"}}})
    assert timings.table(broken) == {}


def test_the_shipped_table_covers_the_default_matrix_and_plan_uses_it():
    timings.table.cache_clear()
    jobs = plan.make_plan(matrix.load(ROOT / "matrix.yaml"))
    got = timings.measured(jobs)
    assert set(got) == {j.job_id for j in jobs}, "every default-matrix package is in the table"
    assert estimate.estimate_sources(jobs) == ["table"] * len(jobs)
    assert estimate.expected_seconds(jobs) == [round(timings.seconds(j.settings, got[j.job_id]), 3) for j in jobs]
    data = json.loads(timings.TABLE.read_text())
    assert "load" in data["note"] and data["scale"]["note"]


def test_the_durations_tool_writes_rows_from_result_dirs(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "t.json"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "durations_table.py"),
            str(DEFMAT),
            "--note",
            "captured, load ~15",
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    timings.table.cache_clear()
    rows = timings.table(out)
    assert set(rows) == {"idna", "iniconfig", "pyyaml", "cffi", "six"}
    idna = _profile("idna")
    assert rows["idna"].plain[0] == pytest.approx(idna.plain[0], abs=0.05)
    assert rows["idna"].confirm_off == 0.0 and rows["idna"].off_failed == idna.off_failed
    assert rows["idna"].settings == timings.row_settings(idna.settings)
