"""A failed install that the build machine decided, not the package (issue #43).

The missing piece (harness.parse.buildenv: a header, a library, a toolchain, a host the build
could not reach) makes the job ``infra-error`` with evidence ``build-env``: what was missing, the
Debian package that provides it, and the log line it was read from. ``build-failure`` stays for a
package that does not build for the free-threaded interpreter. Pure, over the phase's excerpt.
"""

from __future__ import annotations

from ..core.model import Finding, Phase
from ..parse.buildenv import missing_piece
from .reprocommands import reproduce

EVIDENCE = "build-env"


def build_env_finding(phase: Phase) -> Finding | None:
    """The finding of an install (or fetch) phase that failed for want of a piece of the build
    machine; None when it did not fail, timed out, the backend failed, or the package's own
    build did."""
    if phase.ok or phase.timed_out or phase.infra:
        return None
    found = missing_piece(phase.excerpt)
    if found is None:
        return None
    excerpt = found.line if found.line in phase.excerpt else f"{found.line}\n{phase.excerpt[-1500:]}"
    return Finding(
        kind="infra-error",
        evidence=EVIDENCE,
        excerpt=excerpt,
        message=found.message[:300],
        reproduce=reproduce(phase, None),
        phase=phase.name,
    )
