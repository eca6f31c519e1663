"""The runs alone's part of a job's budget is kept from the job's start (issue #58): every phase
but a run alone stops before it, so the runs alone happen however long the suite runs are.

A real job context on the local backend, real commands that would run past the budget."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from harness.backends.local import LocalBackend
from harness.job.context import PhaseSpec, run_phase
from harness.job.job import free_job, open_job
from tests.unit.job.test_job_stages import INFO, pypi_job

SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_a_suite_run_stops_at_the_reserve_and_a_run_alone_gets_it(tmp_path: Path) -> None:
    job = pypi_job("pkg", "==1.0", "{job_timeout: 9, confirm: 5, confirm_budget: 3}")
    ctx = open_job(
        job,
        interp=INFO,
        python=sys.executable,
        backend=LocalBackend(),
        out=tmp_path / "out",
        progress=lambda job_id, step: None,
        tarball="",
    )
    try:
        assert ctx.reserve == 3.0  # confirm_budget (at most a third of the job's budget)
        t0 = time.monotonic()
        suite = run_phase(
            ctx, PhaseSpec(name="plain-gil0", kind="plain", command=SLEEP, env={}, cwd=str(tmp_path), timeout=60, gil=0)
        )
        assert suite.timed_out and 4 < time.monotonic() - t0 < 7.5, suite.duration  # 9 s less the 3 kept
        assert ctx.spent  # no other suite run starts now ...
        assert ctx.remaining(reserved=True) > 1.5  # ... while the runs alone still have theirs
        alone = run_phase(
            ctx,
            PhaseSpec(
                name="confirm1-gil0-r1",
                kind="confirm",
                command=SLEEP,
                env={},
                cwd=str(tmp_path),
                timeout=60,
                gil=0,
                reserved=True,
            ),
        )
        assert alone.timed_out and 1.5 < alone.duration < 4.5, alone.duration  # up to the job's end
        assert time.monotonic() - t0 < 11
    finally:
        free_job(ctx)
