"""What one job's ask of the wheel store did and cost (#56): the lines of its plan's log, the
entries and bytes it added, what it found, refused or could not build, and the store's time,
bounded per job (``store_seconds_per_job``, ``store_bytes_per_job``, ``store_entries_per_job``)
and per run (``store_seconds_per_run``: ``RunClock``). harness.store.take fills one per job and
returns it as a ``StoreUse``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core import limits
from ..core.stored import StoredWheel
from . import storecap
from .wheelstore import BUILD_TIMEOUT


@dataclass(frozen=True, kw_only=True)
class StoreUse:
    """What the store gives one job's install, and what it cost."""

    planned: bool = False  # the wheel-plan phase ran (and made the venv)
    find_links: tuple[str, ...] = ()  # the store dirs of the plan's sdists, as the backend sees them
    built: tuple[StoredWheel, ...] = ()  # built by this job's own isolated steps, now in the store
    found: tuple[StoredWheel, ...] = ()  # in the store before this job
    tools_layer: str = ""  # the venv's pip and test tools: "built <digest>" / "reused <digest>"
    evicted: tuple[str, ...] = ()  # entries removed to make room for this job's (storecap: store_bytes)
    refused: tuple[str, ...] = ()  # "<name> <version>: why" not stored (a store limit)
    untrusted: tuple[str, ...] = ()  # "<name> <version>: why" not stored nor taken: provenance
    failed: tuple[str, ...] = ()  # "<name> <version>: why" its build failed (the install builds it itself)
    seconds: float = 0.0  # the store's time this job spent (not charged to its budget)
    bytes_added: int = 0  # bytes of the entries this job added
    limits: tuple[str, ...] = ()  # the store limits this job reached, as limits.note says them


class RunClock:
    """The seconds all jobs of one run spent on the store (``store_seconds_per_run``)."""

    def __init__(self) -> None:
        self._spent = 0.0
        self._lock = threading.Lock()

    def add(self, seconds: float) -> None:
        with self._lock:
            self._spent += seconds

    def left(self) -> float:
        with self._lock:
            return limits.value("store_seconds_per_run") - self._spent


@dataclass(kw_only=True)
class Tally:
    """What one job did to the store so far."""

    run: RunClock
    started: float = field(default_factory=time.monotonic)
    charged: float = 0.0  # seconds already added to the run's clock
    lines: list[str] = field(default_factory=list)  # the plan log's lines
    added: int = 0  # entries this job put in the store (store_entries_per_job)
    bytes: int = 0  # their bytes (store_bytes_per_job)
    built: list[StoredWheel] = field(default_factory=list)
    found: list[StoredWheel] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    untrusted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    limits: list[str] = field(default_factory=list)
    bound: str = ""  # the store limit that set the last step's limit ("": BUILD_TIMEOUT or the caller's)

    def spent(self) -> float:
        return time.monotonic() - self.started

    def _sync(self) -> None:
        now = self.spent()
        self.run.add(now - self.charged)
        self.charged = now

    def timeout(self, most: float = BUILD_TIMEOUT) -> tuple[float, str]:
        """(the next store step's limit, "") or (0, the limit that leaves it no time)."""
        self._sync()
        job_left = limits.value("store_seconds_per_job") - self.spent()
        run_left = self.run.left()
        if job_left < 1:
            return 0, self.limit("store_seconds_per_job", f"this job spent {self.spent():.0f} s on the store")
        if run_left < 1:
            return 0, self.limit("store_seconds_per_run", "the run's jobs spent it on the store")
        least = min(most, job_left, run_left)
        # the step's own limit when a store limit leaves about as much (the job's 3,600 s and
        # BUILD_TIMEOUT, at its first step)
        self.bound = (
            "" if least > most - 5 else "store_seconds_per_job" if least == job_left else "store_seconds_per_run"
        )
        return least, ""

    def ran_past(self, step: str, timeout: float) -> str:
        """A step that ran past its limit: when a store limit set it, that limit is reached
        (a line of the job's result); the words for the step's line either way."""
        if self.bound:
            self.limit(self.bound, f"its step {step} ran past the {timeout:.0f} s left of it")
            return f", stopped at the {timeout:.0f} s left of {self.bound}"
        return f", past its limit of {timeout:.0f} s"

    def limit(self, name: str, detail: str) -> str:
        """Limit ``name`` reached: said once in the job's ``limits`` (its first occasion); the
        words for the line of what it stopped."""
        note = limits.note(name, detail)
        if not any(n.startswith(f"limit {name} (") for n in self.limits):
            self.limits.append(note)
        return note + "; not stored, the install builds it itself"

    def room(self, store: Path) -> Callable[[int], str]:
        """The store's room (store_bytes) behind this job's own bytes (store_bytes_per_job)."""
        whole = storecap.Room(root=store, removed=self.evicted)

        def fits(size: int) -> str:
            cap = limits.value("store_bytes_per_job")
            if self.bytes + size > cap:
                return self.limit("store_bytes_per_job", f"this job added {self.bytes} bytes, this entry is {size}")
            return whole(size)

        return fits

    def use(self, *, planned: bool, tools_layer: str = "", links: Sequence[str] = ()) -> StoreUse:
        self._sync()
        return StoreUse(
            planned=planned,
            find_links=tuple(dict.fromkeys(links)),
            built=tuple(self.built),
            found=tuple(self.found),
            tools_layer=tools_layer,
            evicted=tuple(self.evicted),
            refused=tuple(self.refused),
            untrusted=tuple(self.untrusted),
            failed=tuple(self.failed),
            seconds=round(self.spent(), 1),
            bytes_added=self.bytes,
            limits=tuple(self.limits),
        )
