"""ThreadSanitizer reports of the ``tsan`` phases -> findings (the verdict's TSan rules).

One finding per report signature with a frame in the package, over all tsan phases; a lock-order
inversion is a ``hang``, a report that ended the process a crash, anything else a race.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence

from ..core.evidence import TsanReport
from ..core.model import Finding, Phase, by_mode
from ..parse.tsan import dedup, excerpt
from .reprocommands import reproduce

log = logging.getLogger(__name__)

# TSan report kind -> finding kind; anything else is a race.
_KIND = {
    "lock-order-inversion": "hang"  # TSan: "potential deadlock"
}


def _finding_kind(report: TsanReport, modes: set[int]) -> str:
    if report.deadly:
        return "ft-crash" if modes and modes <= {0} else "crash"
    return _KIND.get(report.kind, "ft-race")


def tsan_findings(phases: Sequence[Phase]) -> list[Finding]:
    """One finding per report signature with a frame in the package, over all tsan phases:
    ``count`` = runs that reported it, ``runs`` = tsan runs.  Reports with no package
    frame (interpreter noise the suppressions missed) are left out and logged."""
    runs = [p for p in phases if p.kind == "tsan"]
    seen_in: dict[str, list[Phase]] = {}
    first: dict[str, TsanReport] = {}
    tests: dict[str, Counter[str]] = {}
    occurrences: Counter[str] = Counter()
    for ph in runs:
        for r in dedup(ph.tsan):
            sig = r.signature
            if not r.in_package and not r.deadly:
                log.info("%s: TSan %s with no package frame (%s) not counted", ph.name, r.kind, r.summary[:120])
                continue
            first.setdefault(sig, r)
            seen_in.setdefault(sig, []).append(ph)
            occurrences[sig] += r.count
            tests.setdefault(sig, Counter()).update(r.test_ids or [""])
    out = []
    for sig, r in first.items():
        phs = seen_in[sig]
        modes = {p.gil for p in phs if p.gil is not None}
        test_id = next((t for t, _ in tests[sig].most_common() if t), "")
        top = r.top_package_frame or (r.location.func if r.location else "")
        func = (r.package_frames[0].func if r.package_frames else "") or top
        out.append(
            Finding(
                kind=_finding_kind(r, modes),
                evidence="tsan",
                test_id=test_id,
                modes=tuple(sorted(modes)),
                count=len(phs),
                runs=len(runs),
                by_mode=by_mode(phs, runs),
                stack_top=top,
                excerpt=excerpt(r),
                message=f"ThreadSanitizer: {r.kind} in `{func}`"
                + (f" ({occurrences[sig]} reports)" if occurrences[sig] > 1 else ""),
                phase=phs[0].name,
                reproduce=reproduce(phs[0], test_id or None),
            )
        )
    return out
