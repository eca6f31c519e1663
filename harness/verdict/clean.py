"""What a clean verdict's runs rule out (issue #47).

A ``compatible`` is not a proof: threads make failures intermittent, and a suite's threaded runs
see a failure of per-run rate ``r`` in ``n`` runs with chance ``1 - (1 - r) ** n``. The result
says which rate its runs rule out at 95% (``core.stats.rules_out``): 3 runs rule out only rates
above 63%; a rarer failure can pass them all.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..config.matrix import Settings
from ..core.model import Phase
from ..core.stats import bound_text

CLEAN = ("compatible", "gil-reenabled")  # verdicts with no red test: what their runs rule out


def rules_out(phases: Sequence[Phase], settings: Settings) -> str:
    """What the whole-suite threaded runs with the GIL off rule out for every test they ran
    (issue #47): '0 failures in 3 threaded runs …: a per-run failure rate above 63% would have
    shown (95%)'. "" when no such run happened."""
    runs = [p for p in phases if p.kind == "threads" and p.gil == 0 and not p.subset and p.tests]
    if not runs:
        return ""
    each = f"{settings.threads} threads x {settings.iterations} iterations each"
    return (f"each test that passed: {bound_text(len(runs), f'threaded runs with the GIL off ({each})')}; "
            "rarer failures are not ruled out")
