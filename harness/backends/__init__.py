"""Backends run commands for a job and return raw outcomes; nothing else.

A backend is chosen per run.  ``job.py`` builds every command with paths under
``Workspace.root`` (as the backend sees it) and asks the backend to run them;
logs and JUnit files land under ``Workspace.host_root`` so the host parses
them with the same code whatever the backend.
"""

from __future__ import annotations

from .base import Backend, Workspace

__all__ = ["Backend", "Workspace"]
