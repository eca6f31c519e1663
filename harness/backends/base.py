"""The boundary between a job's steps and where they run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..model import Exec


@dataclass(frozen=True, kw_only=True)
class Workspace:
    """A job's private directory, seen from the host and from the backend."""

    host_root: Path  # OUT/work/<job_id> on the host
    root: str  # the same directory as the backend's commands see it
    python: str  # the free-threaded interpreter, as the backend sees it
    source: str = ""  # a local package's source tree, as the backend sees it
    pip_cache: str = ""  # the shared pip cache root, as the backend sees it ("" = pip's default)

    def path(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

    def host(self, *parts: str) -> Path:
        return self.host_root.joinpath(*parts)


class Backend(Protocol):
    name: str

    def open(self, job_id: str, host_root: Path, python: str, source: str) -> Workspace:
        """Prepare a job's workspace (dirs, container, volumes)."""
        ...

    def run(
        self,
        ws: Workspace,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: str,
        timeout: float,
        log: Path,
        network: bool,
    ) -> Exec:
        """Run argv; stdout+stderr go to ``log`` (a host path). Never raises for the
        command's own failure; raises InfraError only when the backend itself broke."""
        ...

    def reproduce_command(self, ws: Workspace, command: str, *, network: bool) -> str:
        """``command`` (a shell line) as a user runs it by hand where this backend ran it."""
        ...

    def close(self, ws: Workspace) -> None:
        """Remove whatever open() made (containers, volumes); idempotent."""
        ...
