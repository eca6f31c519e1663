"""The wheel store's cost and reuse in report.json's meta (harness.results.storecost, #43)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harness.core.model import Phase
from harness.core.stored import StoredWheel
from harness.results import storecost
from harness.results.load import load_results

DATA = Path(__file__).resolve().parents[2] / "data" / "report" / "run0"
NUMPY = StoredWheel(
    name="numpy", version="2.5.5", sdist_sha256="a" * 64, wheel="numpy-2.5.5-cp313-cp313t-linux_x86_64.whl"
)


def _jobs():
    results, problems = load_results([DATA])
    assert problems == [] and len(results) >= 3
    first, *others = results[:3]
    step = Phase(name="wheel-numpy-2.5.5", kind="wheels", command=("pip", "wheel"), exit_code=0, duration=1312.4)
    built = dataclasses.replace(first, wheels_built=(NUMPY,), phases=(*first.phases, step))
    return [built, *(dataclasses.replace(r, wheels_reused=(NUMPY,)) for r in others)]


def test_a_wheel_built_once_and_reused_by_the_others_is_said_with_its_cost():
    jobs = _jobs()
    s = storecost.summary(jobs)
    assert s["built"] == [
        {
            "name": "numpy",
            "version": "2.5.5",
            "wheel": NUMPY.wheel,
            "interpreter": jobs[0].interpreter.name,
            "job_id": jobs[0].job_id,
            "seconds": 1312.4,
        }
    ]
    assert (s["build_seconds"], s["reused"], s["reused_by_wheel"]) == (1312.4, 2, {"numpy 2.5.5": 2})
    assert "before_jobs" not in s
    assert storecost.line(s) == "wheel store: built 1 (numpy 2.5.5, 1312 s), reused 2"


def test_the_store_step_before_the_jobs_is_carried_and_said():
    before = {"jobs": 3, "built": [NUMPY.to_dict()], "reused": [], "not_planned": [], "seconds": 1330.0, "limit": 3600}
    s = storecost.summary([dataclasses.replace(r, wheels_built=()) for r in _jobs()], before)
    assert s["built"] == [] and s["reused"] == 2 and s["before_jobs"] == before
    assert storecost.line(s) == "wheel store: built 0, reused 2; before the jobs: 1 built, 0 reused in 1330 s"
    failed = {**before, "failed": ["cpython3.13t--grpcio-tools: grpcio 1.85.4: its build failed (…)"]}
    s = storecost.summary([dataclasses.replace(r, wheels_built=()) for r in _jobs()], failed)
    assert storecost.line(s) == "wheel store: built 0, reused 2; before the jobs: 1 built, 1 failed, 0 reused in 1330 s"


def test_a_run_without_the_store_says_nothing_was_built_or_reused():
    results, _ = load_results([DATA])
    assert storecost.summary(results) == {
        "built": [],
        "build_seconds": 0.0,
        "reused": 0,
        "reused_by_wheel": {},
        "seconds": 0.0,
        "charged": [],
    }


def test_what_the_store_cost_each_job_and_refused_it_is_summed_and_listed():
    """#56: a job's ``store`` (its store seconds, bytes, limits, sdists refused for provenance)
    goes into meta.store; a job the store cost nothing is not listed."""
    from harness.core.stored import StoreCharge

    first, second, third = _jobs()
    hog = StoreCharge(seconds=600.0, bytes_added=5000, limits=("limit store_seconds_per_job (600) exceeded: …",))
    hostile = StoreCharge(seconds=2.5, untrusted=("numpy 99.0: the index lists no sdist of numpy 99.0 with sha256 …",))
    s = storecost.summary([dataclasses.replace(first, store=hog), dataclasses.replace(second, store=hostile), third])
    assert s["seconds"] == 602.5
    assert s["charged"] == [
        {"job_id": first.job_id, **hog.to_dict()},
        {"job_id": second.job_id, **hostile.to_dict()},
    ]
