"""A claim about the GIL's part only from runs in both modes, and only where the counts hold it.

``ft-race`` and ``ft-crash`` say "only with the GIL off"; ``crash`` and ``thread-unsafe`` say "in
both modes" (or "only with it on"). Each needs runs of its test in every planned mode, which a job
does not always have: its budget may end in the GIL-off runs, a phase may be cut short. After
confirmation (``verdict.confirm``), every such finding is checked against all the runs of its test:

- a planned mode in which the test never ran (suite runs of the finding's kind, or runs alone)
  leaves nothing to compare: the finding becomes ``unconfirmed`` and says which mode is missing
  and why; it is shown, never the verdict (with the budget spent, that is ``infra-error``);
- ``ft-race`` holds only when the GIL-off failure rate is above the GIL-on one by a one-sided
  Fisher exact test at ``ALPHA`` over the suite's threaded runs and the runs alone together:
  1 failure in 2 against 0 in 2 (p = 0.5) is no evidence, 3/3 against 0/3 (p = 0.05) is the
  least a suite of three repetitions can give, and confirmation adds five runs per mode. One
  that does not hold is ``unconfirmed`` with its counts and p;
- ``ft-crash`` states its counts ("crashed 1/4 runs with the GIL off, 0/6 with it on"): a signal
  is no flakiness to be tested away, and the GIL-on runs that ran it without a crash are the
  evidence its word needs. So does a ThreadSanitizer finding (evidence ``tsan``): a race report
  with its stacks is no flaky assertion; its runs are the TSan runs of each mode.

A mode left out by ``settings.gil_modes`` is no missing evidence: the user asked for one mode,
and the finding says what it says of that mode. Nor is the GIL-on mode that ``gil_on: targeted``
left out because nothing was red with the GIL off (``verdict.gilon.skipped_modes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from math import comb

from ..config.matrix import Settings
from ..core.model import Finding, Phase
from .gilon import skipped_modes

ALPHA = 0.05
CLAIMS = ("ft-crash", "crash", "ft-race", "thread-unsafe")
RUN_KINDS = ("plain", "threads")
BAD = ("failed", "error")


def fisher_greater(k0: int, n0: int, k1: int, n1: int) -> float:
    """One-sided Fisher exact p: the chance of k0 or more of the k0 + k1 failures falling in the
    n0 runs of the first group, were both groups' rate the same."""
    total, fails = n0 + n1, k0 + k1
    if n0 <= 0 or n1 <= 0 or fails == 0:
        return 1.0
    return sum(comb(fails, x) * comb(total - fails, n0 - x)
               for x in range(k0, min(fails, n0) + 1)) / comb(total, n0)


def _kinds(f: Finding) -> tuple[str, ...]:
    """The suite runs comparable to the finding's: threaded ones for a race, any run for a crash."""
    return ("threads",) if f.kind in ("ft-race", "thread-unsafe") else RUN_KINDS


def _alone(f: Finding, m: int) -> tuple[int, int]:
    hit, _, n = f.confirmed.get(f"gil{m}", "0/0").partition("/")
    return (int(hit), int(n)) if hit.isdigit() and n.isdigit() else (0, 0)


def counts(f: Finding, phases: Sequence[Phase], m: int) -> tuple[int, int]:
    """(runs that showed the finding's event, runs of its test) in mode ``m``: the suite's runs of
    its kind and the runs alone together. A ThreadSanitizer finding counts the TSan runs of the
    mode (``count`` of them reported it, all in its modes)."""
    if f.evidence == "tsan":
        n = sum(1 for p in phases if p.kind == "tsan" and p.gil == m)
        return (f.count if f.modes == (m,) else 0), n
    kinds = _kinds(f)
    runs = [p for p in phases if p.kind in kinds and p.gil == m
            and (f.test_id in p.tests or any(c.test_id == f.test_id for c in p.crashes)
                 or (not f.test_id and (p.tests or p.crashes)))]
    if f.kind in ("ft-crash", "crash"):
        bad = [p for p in runs if any(c.test_id == f.test_id for c in p.crashes)]
    else:
        bad = [p for p in runs if p.tests.get(f.test_id) is not None
               and p.tests[f.test_id].outcome in BAD]
    k, n = _alone(f, m)
    return len(bad) + k, len(runs) + n


def _mode(m: int) -> str:
    return f"with the GIL {'off' if m == 0 else 'on'}"


def check(findings: Sequence[Finding], phases: Sequence[Phase], settings: Settings) -> list[Finding]:
    """The findings with every claim about the modes checked against the runs (module docstring)."""
    planned = sorted(set(settings.gil_modes) - skipped_modes(phases, settings))
    spent = any(f.kind == "budget-spent" for f in findings)
    out = []
    for f in findings:
        if f.kind not in CLAIMS:
            out.append(f)
            continue
        per = {m: counts(f, phases, m) for m in planned}
        missing = [m for m in planned if per[m][1] == 0]
        if missing:
            why = ("the job's budget ran out before" if spent
                   else "no run in that mode reached it")
            absent = " or ".join(_mode(m) for m in missing)
            out.append(replace(f, kind="unconfirmed", message=(
                f"{f.kind} not claimed: no run of it {absent} ({why}), so nothing is said of the "
                f"GIL's part; seen: {f.message}")[:600]))
            continue
        if f.kind in ("ft-race", "ft-crash") and 1 in per:
            (k0, n0), (k1, n1) = per[0], per[1]
            bound = f"{k0}/{n0} runs with the GIL off, {k1}/{n1} with it on"
            if f.kind == "ft-race" and f.evidence != "tsan":  # a TSan report is no flakiness
                p = fisher_greater(k0, n0, k1, n1)
                if p > ALPHA:
                    out.append(replace(f, kind="unconfirmed", message=(
                        f"ft-race not claimed: failed {bound}, a difference that does not hold "
                        f"(one-sided Fisher p = {p:.2f} > {ALPHA}); {f.message}")[:600]))
                    continue
                f = replace(f, message=f"{f.message}; failed {bound} (p = {p:.3f})")
            else:
                what = "reported in" if f.evidence == "tsan" else "crashed"
                f = replace(f, message=f"{f.message}; {what} {bound}")
        out.append(f)
    return out
