"""The test-deps phase's record of what did not install -> ``SetupProblem``\\ s on the phase.

The phase's script (``harness.job.stages._deps_sh``) installs the inferred test dependencies
together, else one at a time, and writes the name of each that did not install, one a line, to a
file beside its log (``logs/test-deps.not-installed``). Each name becomes a ``not-installed``
setup problem on the phase; the verdict and the causes read those, never the log's text.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from ..core.evidence import NOT_INSTALLED_SUFFIX, SetupProblem
from ..core.evidence import not_installed as _problems
from ..core.model import Phase
from ..core.wsfs import read_beneath

MAX_BYTES = 64 * 1024
MAX_NAMES = 200
_NAME_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,200}[A-Za-z0-9])?")  # a requirement's name (PEP 508)


def missing_file(log: str) -> str:
    """Where a test-deps phase's list of what did not install is, below the output dir: beside its log."""
    return str(PurePosixPath(log).with_suffix(NOT_INSTALLED_SUFFIX))


def not_installed(names: str) -> tuple[SetupProblem, ...]:
    """One ``not-installed`` problem per requirement name in ``names`` (whitespace-separated;
    anything that is not a name is left out), first seen first."""
    return _problems([w for w in names.split() if _NAME_RE.fullmatch(w)][:MAX_NAMES])


def read_not_installed(phase: Phase, out_dir: Path) -> tuple[SetupProblem, ...]:
    """The test-deps phase's problems (the phase's own for any other phase, or without a log)."""
    if phase.kind != "setup" or not phase.log:
        return phase.setup
    raw = read_beneath(out_dir, missing_file(phase.log), MAX_BYTES)
    return not_installed(raw.decode("utf-8", errors="replace")) if raw else ()
