"""pip's ``--report`` -> ``PipReport``: read once, onto the install phase that wrote it (#45).

An install phase's script has pip write its report beside the phase's log, as
``<log's name>-report.json`` (``logs/install.log``: ``logs/install-report.json``; the pure
fallback's rebuild, ``logs/install-sdist.log``: ``logs/install-sdist-report.json``).
``parse_phase`` reads it through no link, as it reads the log, and every reader of the report
takes ``Phase.pip_report``.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from ..core.model import Phase
from ..core.pipinstalled import PipReport
from ..core.wsfs import read_beneath
from ..util import safejson

MAX_REPORT_BYTES = 64 * 1024 * 1024


def report_file(log: str) -> str:
    """Where an install phase's pip report is, below the output dir: beside its log."""
    p = PurePosixPath(log)
    return str(p.with_name(f"{p.stem}-report.json"))


def parse_pip_report(raw: bytes | None) -> PipReport:
    """A report's bytes (None: no file) as a PipReport; not JSON, or of another shape: an empty one."""
    try:
        data = safejson.loads(raw) if raw else None
    except (ValueError, RecursionError):
        return PipReport()
    return PipReport.from_dict(data)


def read_pip_report(phase: Phase, out_dir: Path) -> PipReport | None:
    """An install phase's report; None for any other phase, or when pip wrote none (the fetch
    phase; an install that failed before pip wrote it)."""
    if phase.kind != "install" or not phase.log:
        return None
    raw = read_beneath(out_dir, report_file(phase.log), MAX_REPORT_BYTES)
    return parse_pip_report(raw) if raw is not None else None
