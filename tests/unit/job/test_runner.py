"""harness.job.runner.run_plan, the scheduler, on a fake backend and fake job steps (like
pytest-xdist's fake nodes): resume by key, infra errors retried, a broken backend, SIGINT and
SIGTERM, a result that cannot be written.  The result files and signals are real."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.backends.base import Prepared, Workspace
from harness.config import matrix, plan
from harness.core.errors import InfraError, Interrupted
from harness.core.model import Exec, InterpreterInfo, JobResult, read_result
from harness.job.runner import result_path, run_plan
from harness.util.safefiles import write_json_atomic

INTERP = "cpython3.13t"
INFO = InterpreterInfo(name=INTERP, version="3.13.5", key="interp-key-1")
PREPARED = {
    INTERP: Prepared(
        info=INFO, python="/fake/bin/python3.13t", cache_hit=True, source_tarball="/fake/Python-3.13.5.tar.xz"
    )
}


def make_jobs(n: int) -> list[plan.Job]:
    names = ", ".join(f"{{name: pkg{i}}}" for i in range(n))
    spec = matrix.loads(
        f'interpreters: [{{name: {INTERP}, version: "3.13.5", source: "debian:trixie"}}]\npackages: [{names}]\n'
    )
    return plan.make_plan(spec)


class FakeBackend:
    """The Backend protocol, with cancel/healthy observable by the test."""

    name = "fake"
    base_path = "/usr/bin:/bin"

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self.is_healthy = True

    def open(self, job_id: str, host_root: Path, python: str, source: str) -> Workspace:
        return Workspace(host_root=host_root, root=str(host_root), python=python)

    def run(
        self, ws: Workspace, argv: list[str], *, env: dict[str, str], cwd: str, timeout: float, log: Path, network: bool
    ) -> Exec:
        return Exec(exit_code=0)

    def reproduce_command(self, ws: Workspace, command: str, *, network: bool) -> str:
        return command

    def close(self, ws: Workspace) -> None:
        return None

    def cancel(self) -> None:
        self.cancelled.set()

    def healthy(self) -> bool:
        return self.is_healthy


Behaviour = Callable[[plan.Job, FakeBackend], str]  # returns the verdict, or raises


class FakeSteps:
    """Stands in for job.run_job: records each call, then does what the test scripted."""

    def __init__(self, script: dict[str, Behaviour] | None = None) -> None:
        self.script = script or {}
        self.calls: list[dict] = []
        self.running = 0
        self.most_at_once = 0
        self._lock = threading.Lock()

    def __call__(self, job, *, interp, python, backend, out, key, progress, tarball) -> JobResult:
        with self._lock:
            self.calls.append(
                {"job": job.job_id, "interp": interp, "python": python, "key": key, "tarball": tarball, "out": out}
            )
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            progress(job.job_id, "install")
            behave = self.script.get(job.job_id, lambda job, backend: "compatible")
            verdict = behave(job, backend)
        finally:
            with self._lock:
                self.running -= 1
        return JobResult(
            job_id=job.job_id,
            key=key,
            package=job.package.name,
            interpreter=interp,
            backend=backend.name,
            verdict=verdict,
        )

    @property
    def ran(self) -> list[str]:
        return [c["job"] for c in self.calls]


class RecordingReporter:
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def start(self, total: int, skipped: int, todo=()) -> None:
        self.events.append(("start", total, skipped))

    def step(self, job_id: str, step: str) -> None:
        self.events.append(("step", job_id, step))

    def done(self, result: JobResult, elapsed: float) -> None:
        self.events.append(("done", result.job_id, result.verdict))

    def finish(self) -> None:
        self.events.append(("finish",))


def go(jobs, out: Path, steps: FakeSteps, backend: FakeBackend | None = None, **kw):
    return run_plan(jobs, out=out, backend=backend or FakeBackend(), prepared=PREPARED, run_one=steps, **kw)


def write_previous(out: Path, job: plan.Job, *, key: str, verdict: str = "compatible") -> None:
    res = JobResult(
        job_id=job.job_id,
        key=key,
        package=job.package.name,
        interpreter=INFO,
        verdict=verdict,
        notes="from the earlier run",
    )
    write_json_atomic(result_path(out, job.job_id), res.to_dict())


# ----------------------------------------------------------------------------- running


def test_every_job_runs_once_and_its_result_is_on_disk(tmp_path: Path) -> None:
    jobs = make_jobs(3)
    steps, reporter = FakeSteps(), RecordingReporter()
    summary = go(jobs, tmp_path / "out", steps, reporter=reporter, workers=2)
    assert sorted(summary.ran) == sorted(steps.ran) == sorted(j.job_id for j in jobs)
    assert summary.skipped == []
    assert summary.started and summary.finished
    for job in jobs:
        call = next(c for c in steps.calls if c["job"] == job.job_id)
        assert call["key"] == job.key(INFO.key)
        assert (call["interp"], call["python"]) == (INFO, "/fake/bin/python3.13t")
        assert call["tarball"] == "/fake/Python-3.13.5.tar.xz"
        assert call["out"] == (tmp_path / "out").resolve()
        res = read_result(result_path(tmp_path / "out", job.job_id))
        assert (res.key, res.verdict, res.backend) == (job.key(INFO.key), "compatible", "fake")
    assert reporter.events[0] == ("start", 3, 0)
    assert reporter.events[-1] == ("finish",)
    assert sorted(e[1] for e in reporter.events if e[0] == "done") == sorted(summary.ran)
    assert {e[1] for e in reporter.events if e[0] == "step"} == set(summary.ran)


@pytest.mark.parametrize("workers", [1, 2])
def test_workers_bound_the_jobs_at_once(tmp_path: Path, workers: int) -> None:
    both = threading.Barrier(2, timeout=5)

    def slow(job, backend) -> str:
        if workers == 2:
            both.wait()  # breaks (and the run fails) unless two jobs really run together
        time.sleep(0.05)
        return "compatible"

    jobs = make_jobs(4)
    steps = FakeSteps({j.job_id: slow for j in jobs})
    go(jobs, tmp_path / "out", steps, workers=workers)
    assert len(steps.calls) == 4
    assert steps.most_at_once == workers


# ----------------------------------------------------------------------------- resume


def test_resume_skips_only_a_finished_result_with_the_same_key(tmp_path: Path) -> None:
    out = tmp_path / "out"
    same, other_key, infra, unreadable, fresh = jobs = make_jobs(5)
    write_previous(out, same, key=same.key(INFO.key))
    write_previous(out, other_key, key=other_key.key("another-interpreter-build"))
    write_previous(out, infra, key=infra.key(INFO.key), verdict="infra-error")
    result_path(out, unreadable.job_id).write_text("{ not json")
    steps, reporter = FakeSteps(), RecordingReporter()
    summary = go(jobs, out, steps, reporter=reporter)
    assert summary.skipped == [same.job_id]
    assert sorted(steps.ran) == sorted(j.job_id for j in (other_key, infra, unreadable, fresh))
    assert reporter.events[0] == ("start", 5, 1)
    kept = read_result(result_path(out, same.job_id))
    assert kept.notes == "from the earlier run"  # untouched
    assert next(r for r in summary.results if r.job_id == same.job_id) == kept
    assert read_result(result_path(out, unreadable.job_id)).verdict == "compatible"


def test_force_reruns_finished_jobs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    jobs = make_jobs(2)
    for job in jobs:
        write_previous(out, job, key=job.key(INFO.key))
    steps = FakeSteps()
    summary = go(jobs, out, steps, force=True)
    assert summary.skipped == [] and sorted(steps.ran) == sorted(j.job_id for j in jobs)
    assert read_result(result_path(out, jobs[0].job_id)).notes == ""


def test_a_rerun_with_nothing_left_runs_nothing(tmp_path: Path) -> None:
    jobs = make_jobs(2)
    go(jobs, tmp_path / "out", FakeSteps())
    steps = FakeSteps()
    summary = go(jobs, tmp_path / "out", steps)
    assert steps.calls == [] and summary.ran == []
    assert sorted(summary.skipped) == sorted(j.job_id for j in jobs)


# ----------------------------------------------------------------------------- infra errors


def _raise(exc: BaseException) -> Behaviour:
    def behave(job, backend) -> str:
        raise exc

    return behave


def test_infra_error_is_a_result_and_the_next_run_retries_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    flaky, fine = jobs = make_jobs(2)
    first = FakeSteps({flaky.job_id: _raise(InfraError("pip: index unreachable"))})
    summary = go(jobs, out, first)
    assert sorted(summary.ran) == sorted(j.job_id for j in jobs)
    res = read_result(result_path(out, flaky.job_id))
    assert res.verdict == "infra-error" and res.key == flaky.key(INFO.key)
    assert [(f.kind, f.message) for f in res.findings] == [("infra-error", "pip: index unreachable")]
    assert res.backend == "fake" and res.interpreter == INFO
    second = FakeSteps()
    summary = go(jobs, out, second)
    assert second.ran == [flaky.job_id] and summary.skipped == [fine.job_id]
    assert read_result(result_path(out, flaky.job_id)).verdict == "compatible"


def test_os_error_of_the_harness_is_an_infra_result(tmp_path: Path) -> None:
    (job,) = make_jobs(1)
    disk = OSError(28, "No space left on device", "/out/work/pkg0/venv")
    go([job], tmp_path / "out", FakeSteps({job.job_id: _raise(disk)}))
    res = read_result(result_path(tmp_path / "out", job.job_id))
    assert res.verdict == "infra-error"
    assert res.findings[0].message == "No space left on device (/out/work/pkg0/venv)"


def test_a_broken_backend_stops_the_whole_run(tmp_path: Path) -> None:
    backend = FakeBackend()
    first, *rest = jobs = make_jobs(3)

    def daemon_gone(job, be: FakeBackend) -> str:
        be.is_healthy = False
        raise InfraError("docker daemon is not answering: connection refused")

    steps = FakeSteps({first.job_id: daemon_gone})
    with pytest.raises(InfraError, match="docker daemon is not answering"):
        go(jobs, tmp_path / "out", steps, backend=backend, workers=1)
    assert steps.ran == [first.job_id]  # the others never started
    assert backend.cancelled.is_set()
    assert list((tmp_path / "out" / "results").iterdir()) == []  # no infra-error for anyone


def test_a_result_that_cannot_be_written_stops_the_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first, second = jobs = make_jobs(2)
    result_path(out, first.job_id).mkdir(parents=True)  # os.replace onto a directory fails
    backend = FakeBackend()
    steps = FakeSteps()
    with pytest.raises(InfraError, match=rf"cannot write .*{first.job_id}\.json"):
        go(jobs, out, steps, backend=backend, workers=1)
    assert steps.ran == [first.job_id]
    assert backend.cancelled.is_set()
    assert not result_path(out, second.job_id).exists()


@pytest.mark.parametrize(
    "exc",
    [
        ValueError("No closing quotation"),  # shlex on an addopts with an unclosed quote
        TypeError("'str' object is not iterable"),
        AttributeError("'str' object has no attribute 'get'"),
        RecursionError("maximum recursion depth exceeded"),
        MemoryError(),
        ZeroDivisionError("division by zero"),
    ],
)
def test_a_bug_in_a_job_is_its_infra_error_and_the_run_goes_on(tmp_path: Path, exc: Exception) -> None:
    out = tmp_path / "out"
    odd, fine = jobs = make_jobs(2)
    backend = FakeBackend()
    summary = go(jobs, out, FakeSteps({odd.job_id: _raise(exc)}), backend=backend, workers=1)
    assert sorted(summary.ran) == sorted(j.job_id for j in jobs)
    assert not backend.cancelled.is_set()
    assert read_result(result_path(out, fine.job_id)).verdict == "compatible"
    res = read_result(result_path(out, odd.job_id))
    assert res.verdict == "infra-error" and res.key == odd.key(INFO.key)
    (f,) = res.findings
    assert f.kind == "infra-error"
    assert f"a bug of ft-harness, not of the package): {type(exc).__name__}: {exc}" in f.message
    assert f"work/{odd.job_id}/logs/harness-error.log" in f.message
    assert "Traceback" in f.excerpt and "_raise" not in f.message
    tb = (out / "work" / odd.job_id / "logs" / "harness-error.log").read_text()
    assert "Traceback (most recent call last)" in tb and f"{type(exc).__name__}" in tb
    assert "in behave" in tb  # where it was raised


def test_a_result_that_cannot_be_serialized_is_a_bug_result(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (job,) = make_jobs(1)

    class Steps(FakeSteps):
        def __call__(self, job, **kw) -> JobResult:
            res = super().__call__(job, **kw)
            return JobResult(
                job_id=res.job_id,
                key=res.key,
                package=res.package,
                interpreter=res.interpreter,
                verdict="compatible",
                metadata={"probe": object()},
            )  # what json cannot write

    go([job], out, Steps())
    res = read_result(result_path(out, job.job_id))
    assert res.verdict == "infra-error" and "TypeError" in res.findings[0].message


# ----------------------------------------------------------------------------- resume, hostile files


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _dev_zero(p: Path) -> None:
    p.symlink_to("/dev/zero")


def _deep(p: Path) -> None:
    p.write_text("[" * 100_000 + "]" * 100_000)


def _loop(p: Path) -> None:
    p.symlink_to(p.name)


def _huge_nesting_in_a_field(p: Path) -> None:
    p.write_text('{"job_id": "x", "phases": ' + "[" * 50_000 + "]" * 50_000 + "}")


@pytest.mark.parametrize(
    ("plant", "said"),
    [
        (_fifo, "not a regular file"),
        (_dev_zero, "symlink that points outside"),
        (_deep, "nested too deeply"),
        (_loop, "cannot read"),
        (_huge_nesting_in_a_field, ""),
    ],
)
def test_resume_reads_results_through_the_guarded_reader(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, plant, said: str
) -> None:
    out = tmp_path / "out"
    bad, good = jobs = make_jobs(2)
    (out / "results").mkdir(parents=True)
    plant(result_path(out, bad.job_id))
    write_previous(out, good, key=good.key(INFO.key))
    steps = FakeSteps()
    done = threading.Event()
    result: list = []

    def run() -> None:
        result.append(go(jobs, out, steps))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(30), "the resume hung on a result file"
    assert steps.ran == [bad.job_id] and result[0].skipped == [good.job_id]
    lines = [r.getMessage() for r in caplog.records if bad.job_id in r.getMessage()]
    assert len(lines) == 1 and said in lines[0] and "the job runs again" in lines[0]
    assert "Traceback" not in caplog.text
    assert read_result(result_path(out, bad.job_id)).verdict == "compatible"  # replaced, as a file


# ----------------------------------------------------------------------------- signals


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_keeps_finished_results_and_drops_the_jobs_in_flight(tmp_path: Path, sig: signal.Signals) -> None:
    out = tmp_path / "out"
    quick, stuck, queued = jobs = make_jobs(3)
    backend = FakeBackend()
    reporter = RecordingReporter()

    def until_cancelled(job, be: FakeBackend) -> str:
        # the signal comes once the quick job is written and the main thread has taken it in
        deadline = time.monotonic() + 10
        while ("done", quick.job_id, "compatible") not in reporter.events:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        time.sleep(1.0)
        os.kill(os.getpid(), sig)
        assert be.cancelled.wait(10), "run_plan did not cancel the backend"
        return "crash"  # what a job whose commands were killed would come back with

    def after_cancel(job, be: FakeBackend) -> str:
        assert be.cancelled.wait(10)
        return "compatible"

    steps = FakeSteps({stuck.job_id: until_cancelled, queued.job_id: after_cancel})
    term_before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Interrupted, match=r"interrupted: 1 of 3 results kept in .*results; rerun"):
        go(jobs, out, steps, backend=backend, reporter=reporter, workers=2)
    assert backend.cancelled.is_set()
    assert result_path(out, quick.job_id).exists()
    assert not result_path(out, stuck.job_id).exists()  # in flight: no partial result
    assert not result_path(out, queued.job_id).exists()
    assert reporter.events[-1] == ("finish",)
    assert signal.getsignal(signal.SIGTERM) == term_before  # the runner's handler is gone


def test_off_the_main_thread_the_signal_handlers_are_left_alone(tmp_path: Path) -> None:
    seen: list[object] = []

    def look(job, backend) -> str:
        seen.append(signal.getsignal(signal.SIGTERM))
        return "compatible"

    (job,) = make_jobs(1)
    before = signal.getsignal(signal.SIGTERM)
    t = threading.Thread(target=go, args=([job], tmp_path / "out", FakeSteps({job.job_id: look})))
    t.start()
    t.join(30)
    assert seen == [before]
    assert result_path(tmp_path / "out", job.job_id).exists()


def test_a_package_past_a_limit_gets_a_result_naming_it(tmp_path: Path) -> None:
    from harness.core.limits import LimitExceeded

    out = tmp_path / "out"
    bomb, fine = jobs = make_jobs(2)
    go(jobs, out, FakeSteps({bomb.job_id: _raise(LimitExceeded("extract_bytes", "x.tar.gz unpacks to more"))}))
    res = read_result(result_path(out, bomb.job_id))
    assert res.verdict == "infra-error"
    (f,) = res.findings
    assert f.evidence == "setup" and "limit extract_bytes (1073741824) exceeded" in f.message
    assert "FT_HARNESS_LIMIT_EXTRACT_BYTES" in f.message and "bug of ft-harness" not in f.message
    assert read_result(result_path(out, fine.job_id)).verdict == "compatible"
