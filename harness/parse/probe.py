"""probe.json -> ``Probe``: what the import probe found, kept on the probe phase (issue #31).

The probe (harness/_inner/probe.py) writes ``<its log's name>.json`` next to its log
(``logs/probe.log``, ``logs/probe.json``).  ``parse_phase`` reads it through no link, like the
log, so the verdict reads the probe from the phases alone (``probe_of``) and a result file can be
decided again from itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from ..core.evidence import Probe
from ..core.model import Phase
from ..core.wsfs import read_beneath
from ..util import safejson

MAX_PROBE_BYTES = 16 * 1024 * 1024


def probe_file(log: str) -> str:
    """Where a probe phase's probe.json is, below the output dir: beside its log."""
    return str(PurePosixPath(log).with_suffix(".json"))


def parse_probe(raw: bytes | None) -> Probe:
    """probe.json's bytes (None: no file) as a Probe; not JSON is an empty one."""
    try:
        data = safejson.loads(raw) if raw is not None else None
    except (ValueError, RecursionError):
        return Probe()
    return Probe.from_dict(data)


def read_probe(phase: Phase, out_dir: Path) -> Probe | None:
    """The probe phase's Probe (None for any other phase, or one without a log)."""
    if phase.kind != "probe" or not phase.log:
        return None
    return parse_probe(read_beneath(out_dir, probe_file(phase.log), MAX_PROBE_BYTES))


def probe_of(phases: Sequence[Phase]) -> Probe:
    """The job's probe: its probe phase's, or an empty one (no probe ran, or a result written
    before results kept it)."""
    return next((p.probe for p in phases if p.kind == "probe" and p.probe is not None), Probe())
