"""What a verdict's qualifier adds, and what a clean verdict's runs rule out (issue #47).

A ``compatible`` is not a proof: threads make failures intermittent, and a suite's threaded runs
see a failure of per-run rate ``r`` in ``n`` runs with chance ``1 - (1 - r) ** n``. The result
says which rate its runs rule out at 95% (``util.stats.rules_out``): 3 runs rule out only rates
above 63%; a rarer failure can pass them all.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.jobspec import Settings
from ..core.model import Finding, Phase
from ..util.stats import bound_text
from .confirm import rate

CLEAN = ("compatible", "gil-reenabled")  # verdicts with no red test: what their runs rule out


def rules_out(phases: Sequence[Phase], settings: Settings, each: str = "") -> str:
    """What the whole-suite threaded runs with the GIL off rule out for every test they ran
    (issue #47): '0 failures in 3 threaded runs …: a per-run failure rate above 63% would have
    shown (95%)'. "" when no such run happened. ``each``: what each run gave a test, when not the
    settings' threads x iterations (a run planned to the job's budget: harness.job.budgetplan)."""
    runs = [p for p in phases if p.kind == "threads" and p.gil == 0 and not p.subset and p.tests]
    if not runs:
        return ""
    each = each or f"{settings.threads} threads x {settings.iterations} iterations each"
    return (
        f"each test that passed: {bound_text(len(runs), f'threaded runs with the GIL off ({each})')}; "
        "rarer failures are not ruled out"
    )


def qualify(verdict: str, findings: Sequence[Finding], phases: Sequence[Phase], coverage: str) -> str:
    """The qualifier: a compatible's unconfirmed findings (with their rates) and coverage; beside
    an "only without the GIL" verdict, the package's own thread-unsafe background; and a verdict
    taken from a run the job's budget cut says so."""
    parts: list[str] = []
    if verdict == "compatible":  # not a clean pass: what was seen once, with its rate
        parts = [
            *(
                f"unconfirmed: `{f.test_id}` failed in {rate(f)}"
                for f in findings
                if f.kind == "unconfirmed" and f.test_id
            ),
            coverage,
        ]
    elif verdict in ("ft-race", "ft-crash"):  # the package's own background, said beside it
        unsafe = sorted({f.test_id for f in findings if f.kind == "thread-unsafe" and 1 in f.modes})
        if unsafe:
            parts = [
                f"also thread-unsafe with the GIL on: {len(unsafe)} test(s) fail in threads in both "
                f"modes; the {verdict} above holds against that background on its own runs alone"
            ]
    deciding = next((f for f in findings if f.kind == verdict), None)
    cut = {p.name for p in phases if p.timed_out and p.kind in ("plain", "threads") and not (p.hang and p.hang.stalled)}
    if deciding is not None and deciding.phase in cut:
        parts.append(f"taken from {deciding.phase}, a run the job's budget (job_timeout) cut")
    return "; ".join(p for p in parts if p)
