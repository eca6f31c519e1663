"""What the harness tells whoever watches it, as types the CLI implements (harness.cli.progress)
and passes in: the runner and interpreters/ import nothing of the CLI.

- ``Reporter``: the runner's jobs and steps (plain lines, a live table); ``NullReporter`` says
  nothing.
- ``Heartbeat``: a long step without output of its own (an interpreter or image build, 4-14 min),
  as a context manager around it whose value is told the build's steps (``Beat.step``);
  ``no_heartbeat`` says nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

from .model import JobResult


class Reporter(Protocol):
    def start(self, total: int, skipped: int, todo: Sequence[str] = ()) -> None: ...
    def step(self, job_id: str, step: str) -> None: ...
    def done(self, result: JobResult, elapsed: float) -> None: ...
    def finish(self) -> None: ...


class NullReporter:
    def start(self, total: int, skipped: int, todo: Sequence[str] = ()) -> None: ...
    def step(self, job_id: str, step: str) -> None: ...
    def done(self, result: JobResult, elapsed: float) -> None: ...
    def finish(self) -> None: ...


class Beat(Protocol):
    """What a heartbeat's block tells it: the build moved on (``make -j4``)."""

    def step(self, text: str) -> None: ...


# ``with heartbeat("building CPython 3.14.0 for cpython3.14t (log ...)") as hb: hb.step("make")``
Heartbeat = Callable[[str], contextlib.AbstractContextManager[Beat]]


class _Silent:
    def step(self, text: str) -> None: ...


@contextlib.contextmanager
def no_heartbeat(what: str) -> Iterator[Beat]:
    """The default ``Heartbeat``: says nothing."""
    yield _Silent()
