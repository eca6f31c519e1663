"""harness.progress: the plain lines of a run, and a reader that goes away."""

from __future__ import annotations

import contextlib
import io
import os
import re

import pytest

from harness import progress
from harness.model import InterpreterInfo, JobResult

INFO = InterpreterInfo(name="cpython3.13t", version="3.13.5", key="k")


def result(job_id: str, verdict: str, qualifier: str = "") -> JobResult:
    return JobResult(job_id=job_id, key="x", package=job_id, interpreter=INFO, verdict=verdict,
                     qualifier=qualifier)


def test_plain_lines_count_done_over_total() -> None:
    out = io.StringIO()
    r = progress.PlainReporter(out)
    r.start(3, 1)
    r.step("cp--a", "install")
    r.done(result("cp--a", "compatible", "low thread coverage: 3/120 tests in threads"), 12.4)
    r.done(result("cp--b", "ft-crash"), 0.2)
    r.finish()
    lines = [re.sub(r"^\[ *\d+\.\ds\] ", "", line) for line in out.getvalue().splitlines()]
    assert lines == [
        "3 jobs: 1 already done, 2 to run",
        "[1/3] cp--a: install",
        "[2/3] cp--a: compatible (low thread coverage: 3/120 tests in threads) in 12s",
        "[3/3] cp--b: ft-crash in 0s",
    ]
    assert all(re.match(r"^\[ *\d+\.\ds\] ", line) for line in out.getvalue().splitlines())


def test_a_closed_stdout_silences_the_reporter_without_an_error() -> None:
    r_fd, w_fd = os.pipe()
    os.close(r_fd)  # the reader went away (`ft-harness run | head -1`)
    stream = open(w_fd, "w")  # noqa: SIM115 - closed below, past the broken pipe
    try:
        rep = progress.PlainReporter(stream)
        rep.start(2, 0)  # would raise BrokenPipeError into the job thread
        rep.step("cp--a", "install")
        rep.done(result("cp--a", "compatible"), 1.0)
        assert rep.done_n == 1
        with pytest.raises(BrokenPipeError):  # the pipe really is broken
            os.write(w_fd, b"x")
    finally:
        with contextlib.suppress(BrokenPipeError):
            stream.close()


@pytest.mark.parametrize("ci", ["true", "1"])
def test_ci_gets_plain_lines(monkeypatch: pytest.MonkeyPatch, ci: str) -> None:
    monkeypatch.setenv("CI", ci)
    assert type(progress.make_reporter()) is progress.PlainReporter
