"""The few statistics every claim about intermittent events uses (issue #47): pure, exact, small.

Threads make every red event intermittent, so a claim that two sets of runs differ (GIL off vs on,
one interpreter vs another, this week vs last) is a claim about two failure rates:

- :func:`fisher_greater`: the one-sided Fisher exact p of "the first rate is above the second";
- :func:`holm`: which of a family of such p-values hold with the chance of any false claim in the
  family kept at or under ``alpha`` (Holm's step-down procedure: the smallest p against
  ``alpha/m``, the next against ``alpha/(m-1)``, ...; it stops at the first that fails);
- :func:`least_failures`: the fewest failures in ``n`` runs (against none in ``n``) that can hold at
  a level: what a sequential re-run needs to reach, so that it stops when it no longer can;
- :func:`rules_out`: what ``0`` failures in ``n`` runs rule out: the per-run failure rate above
  which at least one failure would have shown with 95% confidence (exact: ``1 - 0.05 ** (1/n)``;
  about ``3/n``, the rule of three).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb

ALPHA = 0.05  # the chance of a false claim a job (or a comparison) may take, over all its candidates
CONFIDENCE = 0.95


def fisher_greater(k0: int, n0: int, k1: int, n1: int) -> float:
    """One-sided Fisher exact p: the chance of k0 or more of the k0 + k1 failures falling in the
    n0 runs of the first group, were both groups' rate the same."""
    total, fails = n0 + n1, k0 + k1
    if n0 <= 0 or n1 <= 0 or fails == 0:
        return 1.0
    return sum(comb(fails, x) * comb(total - fails, n0 - x) for x in range(k0, min(fails, n0) + 1)) / comb(total, n0)


def holm(pvalues: Sequence[float], alpha: float = ALPHA) -> list[bool]:
    """Which p-values hold, in their order, with the family-wise error at or under ``alpha``."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    held = [False] * len(pvalues)
    m = len(pvalues)
    for rank, i in enumerate(order):
        if pvalues[i] > alpha / (m - rank):
            break
        held[i] = True
    return held


def holm_level(rank: int, m: int, alpha: float = ALPHA) -> float:
    """The level the ``rank``-th smallest (0-based) of ``m`` p-values is held to."""
    return alpha / (m - rank) if m > rank else alpha


def least_failures(n: int, alpha: float = ALPHA) -> int | None:
    """The fewest failures in ``n`` runs, against 0 in ``n`` runs of the other group, whose
    one-sided Fisher p is at or under ``alpha`` (None: no count can)."""
    for k in range(1, n + 1):
        if fisher_greater(k, n, 0, n) <= alpha:
            return k
    return None


def rules_out(n: int, confidence: float = CONFIDENCE) -> float:
    """The per-run failure rate that ``0`` failures in ``n`` runs rules out (1.0 when n is 0)."""
    return 1.0 if n <= 0 else 1.0 - (1.0 - confidence) ** (1.0 / n)


def bound_text(n: int, what: str = "runs") -> str:
    """'0 failures in 15 runs: a per-run failure rate above 18% would have shown (95%)'."""
    if n <= 0:
        return ""
    return (
        f"0 failures in {n} {what}: a per-run failure rate above {rules_out(n):.0%} would have shown ({CONFIDENCE:.0%})"
    )
