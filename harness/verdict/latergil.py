"""The import probe run again once the test dependencies are installed (``probe-test-deps``):
what re-enables the GIL only then is not what ``pip install <package>`` gives a user (aiohttp
3.14.5: Brotli's ``_brotli``, its ``speedups`` extra, which its tests install). Said as a note
(``JobResult.gil_with_test_deps``), never the verdict: the verdict reads the first probe, of the
package as a user installs it (harness.verdict.rules reads the first probe phase).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.model import Phase
from ..core.proberecord import LaterGil

LATER_PROBE = "probe-test-deps"  # the second probe phase's name (harness.job.stages)


def _modules(phase: Phase) -> list[str]:
    """Every module a probe phase saw re-enable the GIL: its log's warnings and its probe.json's."""
    named = list(phase.gil_modules)
    return named + [m for m in (phase.probe.modules if phase.probe else ()) if m not in named]


def later_gil(phases: Sequence[Phase]) -> tuple[LaterGil, ...]:
    """The modules the second probe saw re-enable the GIL and the first did not, each with the
    distribution that installed it and the package's extra it came through (the probe's
    ``origins``); () without a second probe (no test dependencies: nothing to compare)."""
    first = next((p for p in phases if p.kind == "probe"), None)
    later = next((p for p in phases if p.kind == "probe" and p.name == LATER_PROBE), None)
    if first is None or later is None or first is later:
        return ()
    seen = set(_modules(first))
    origins = later.probe.origins if later.probe else {}
    return tuple(
        LaterGil(module=m, dist=origins.get(m, {}).get("dist", ""), extra=origins.get(m, {}).get("extra", ""))
        for m in _modules(later)
        if m not in seen
    )
