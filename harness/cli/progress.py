"""Progress of a run for the person watching it: which job, which step, elapsed, done/total.

``make_reporter()`` picks plain lines for CI and pipes (``CI=true`` or stderr not a
terminal) and a live status table (rich) in a terminal.  The runner calls a
``Reporter`` from its job threads; a reporter never raises into a job: a closed
stdout (``ft-harness run | head``) silences it, and the jobs go on.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any

from ..core.model import JobResult
from ..core.progress import Reporter  # the protocol the runner is passed (harness.job.runner)
from ..util import textsafe


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _verdict(result: JobResult) -> str:
    return textsafe.line(result.verdict + (f" ({result.qualifier})" if result.qualifier else ""))


PACE_PRIOR = 300.0  # expected seconds the ETA trusts the estimate for before the measured pace
PACE_LIMITS = (0.2, 5.0)


class PlainReporter:
    """Plain lines (CI, pipes): one per step, on stdout."""

    def __init__(
        self, stream: IO[str] | None = None, *, expected: Mapping[str, float] | None = None, workers: int = 1
    ) -> None:
        self.total = 0
        self.done_n = 0
        self.t0 = time.monotonic()
        self._stream = stream
        self._lock = threading.Lock()
        self._silent = False
        self.expected = dict(expected or {})  # job id -> expected seconds (estimate.expected_seconds)
        self.workers = max(1, workers)
        self.pending: set[str] = set()
        self.began: dict[str, float] = {}  # job id -> when its first step was said (monotonic)
        self.took = [0.0, 0.0]  # the finished jobs' (seconds taken, seconds expected)

    def pace(self) -> float:
        """How much longer than expected the finished jobs took (this machine, its load, --jobs):
        their seconds over their expected seconds, started from 1 as if PACE_PRIOR expected
        seconds had gone as planned, and kept within PACE_LIMITS."""
        taken, planned = self.took
        lo, hi = PACE_LIMITS
        return min(hi, max(lo, (taken + PACE_PRIOR) / (planned + PACE_PRIOR)))

    def eta(self) -> str:
        """What is left: the pending jobs' expected times at the pace so far, less what the
        running ones have done, over the workers ('' when nothing is known)."""
        if not self.pending or not self.expected:
            return ""
        pace, now = self.pace(), time.monotonic()
        left = (
            sum(
                max(0.0, self.expected.get(j, 0.0) * pace - (now - self.began[j] if j in self.began else 0.0))
                for j in self.pending
            )
            / self.workers
        )
        return f"ETA ~{left / 60:.0f} min" if left >= 90 else f"ETA ~{left:.0f} s"

    def _finished(self, job_id: str, elapsed: float) -> None:
        if job_id in self.pending and job_id in self.expected:
            self.took[0] += max(0.0, elapsed)
            self.took[1] += self.expected[job_id]
        self.pending.discard(job_id)
        self.began.pop(job_id, None)

    def _say(self, text: str) -> None:
        with self._lock:
            if self._silent:
                return
            try:
                print(
                    f"[{time.monotonic() - self.t0:7.1f}s] {textsafe.line(text)}",
                    file=self._stream or sys.stdout,
                    flush=True,
                )
            except BrokenPipeError:  # nobody reads any more; the results still get written
                self._silent = True

    def start(self, total: int, skipped: int, todo: Sequence[str] = ()) -> None:
        self.total, self.done_n = total, skipped
        self.pending = set(todo)
        eta = self.eta()
        self._say(f"{total} jobs: {skipped} already done, {total - skipped} to run" + (f" ({eta})" if eta else ""))

    def step(self, job_id: str, step: str) -> None:
        self.began.setdefault(job_id, time.monotonic())
        self._say(f"[{self.done_n}/{self.total}] {job_id}: {step}")

    def done(self, result: JobResult, elapsed: float) -> None:
        with self._lock:  # jobs finish in several threads at once
            self.done_n += 1
            n = self.done_n
            self._finished(result.job_id, elapsed)
            eta = self.eta()
        self._say(
            f"[{n}/{self.total}] {result.job_id}: {_verdict(result)} in {elapsed:.0f}s" + (f"; {eta}" if eta else "")
        )

    def finish(self) -> None:
        pass


class RichReporter(PlainReporter):
    """A live status line per running job, on stderr (a terminal)."""

    def __init__(self, *, expected: Mapping[str, float] | None = None, workers: int = 1) -> None:
        super().__init__(expected=expected, workers=workers)
        from rich.console import Console
        from rich.live import Live

        self.console = Console(stderr=True)
        self.running: dict[str, tuple[str, float]] = {}
        self.live = Live(console=self.console, refresh_per_second=4, transient=True)

    def _render(self) -> Any:
        from rich.table import Table

        t = Table.grid(padding=(0, 2))
        eta = self.eta()
        t.add_row(
            f"[bold]{self.done_n}/{self.total} done[/]",
            f"{time.monotonic() - self.t0:.0f}s" + (f", {eta}" if eta else ""),
        )
        for job_id, (step, since) in sorted(self.running.items()):
            t.add_row(f"  {job_id}", f"{step} ({time.monotonic() - since:.0f}s)")
        return t

    def start(self, total: int, skipped: int, todo: Sequence[str] = ()) -> None:
        self.total, self.done_n = total, skipped
        self.pending = set(todo)
        self.console.print(f"{total} jobs: {skipped} already done, {total - skipped} to run")
        self.live.start()

    def step(self, job_id: str, step: str) -> None:
        self.began.setdefault(job_id, time.monotonic())
        self.running[job_id] = (step, time.monotonic())
        self.live.update(self._render())

    def done(self, result: JobResult, elapsed: float) -> None:
        self.done_n += 1
        self.running.pop(result.job_id, None)
        self._finished(result.job_id, elapsed)
        from rich.markup import escape

        extra = escape(textsafe.line(f" ({result.qualifier})")) if result.qualifier else ""
        self.live.console.print(
            f"[{self.done_n}/{self.total}] {escape(result.job_id)}: "
            f"[bold]{escape(result.verdict)}[/]{extra} in {elapsed:.0f}s"
        )
        self.live.update(self._render())

    def finish(self) -> None:
        self.live.stop()


HEARTBEAT_SECONDS = 30.0


def _elapsed(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m} min {s:02d} s" if m else f"{s} s"


class Heartbeat:
    """What a long step without output (an interpreter or image build, 4-14 min) is doing now:
    its ``step`` and, every ``every`` seconds, a line with the time elapsed."""

    def __init__(self, what: str, every: float, stream: IO[str] | None) -> None:
        self.what, self.every, self._stream = what, every, stream
        self.current = ""
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self._silent = False

    def say(self, text: str, command: str = "") -> None:
        """One line; ``command`` (``::group::``) is ours, the text never starts one."""
        if self._silent:
            return
        try:
            print(command + textsafe.line(text), file=self._stream or sys.stdout, flush=True)
        except (BrokenPipeError, ValueError):  # a closed stdout: the build goes on
            self._silent = True

    def step(self, text: str) -> None:
        """The build moved on (``make -j4``): said at once, and in the lines that follow."""
        self.current = text
        self.say(f"{self.what}: {text}")

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            doing = f" ({self.current})" if self.current else ""
            self.say(f"{self.what}{doing}: {_elapsed(time.monotonic() - self.t0)} so far")


@contextlib.contextmanager
def heartbeat(what: str, *, every: float | None = None, stream: IO[str] | None = None) -> Iterator[Heartbeat]:
    """Say ``what`` now and, while the block runs, how long it has been every ``every`` seconds
    (30; $FT_HARNESS_HEARTBEAT), on stdout, without -v: a build that prints nothing for 14 minutes
    looks hung.  In CI the lines are a folded ``::group::``."""
    if every is None:
        try:
            every = float(os.environ.get("FT_HARNESS_HEARTBEAT", "") or HEARTBEAT_SECONDS)
        except ValueError:
            every = HEARTBEAT_SECONDS
    hb = Heartbeat(what, max(every, 0.01), stream)
    ci = in_ci()
    hb.say(what if ci else f"{what} ...", "::group::" if ci else "")
    thread = threading.Thread(target=hb._beat, name="ft-harness-heartbeat", daemon=True)
    thread.start()
    try:
        yield hb
    finally:
        hb._stop.set()
        thread.join()
        took = _elapsed(time.monotonic() - hb.t0)
        if ci:
            hb.say("", "::endgroup::")
        failed = sys.exc_info()[0] is not None
        hb.say(f"{what}: {'stopped' if failed else 'done'} after {took}")


def make_reporter(expected: Mapping[str, float] | None = None, workers: int = 1) -> Reporter:
    """Plain lines in CI and pipes, a live view on a terminal; both with an ETA from ``expected``."""
    if in_ci() or not sys.stderr.isatty():
        return PlainReporter(expected=expected, workers=workers)
    return RichReporter(expected=expected, workers=workers)
