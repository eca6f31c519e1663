"""The index's first screen: per interpreter, "N of M compatible" and a stacked bar of verdicts.

Plain numbers for the template (templates/index.html draws the SVG at render time: no chart
library, no script).  The bar is readable without colour: each segment wide enough carries its
verdict's mark and count, every segment has a ``<title>``, and the legend under it lists each
verdict present as mark, word and count.  A deciding finding is shortened for a one-line cell.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..core.model import VERDICTS
from ..results.report import CompatReport, JobEntry

# One mark per verdict (and finding kind), a distinct shape in DejaVu Sans and most system
# fonts; U+FE0E asks for the text glyph, not an emoji.  Never the only sign: the word is next
# to it everywhere.
MARK = {
    "build-failure": "✖", "infra-error": "⚙\ufe0e", "ft-crash": "⚡\ufe0e", "crash": "☠\ufe0e",
    "hang": "◷", "ft-race": "⇄", "thread-unsafe": "≋", "gil-reenabled": "⊘",
    "baseline-failure": "△", "compatible": "✔\ufe0e", "no-tests": "○", "skipped": "⏭\ufe0e",
    "no-thread-coverage": "◌", "unconfirmed": "?", "setup-error": "⚠\ufe0e", "budget-spent": "⌁",
    "slow-in-threads": "≈",
    "repeat-failure": "↻",
}
# left to right: what is safe first, then what is wrong, the harness's own problems last
BAR_ORDER = ("compatible", *(v for v in reversed(VERDICTS) if v not in ("compatible", "infra-error")),
             "infra-error")
LABEL_MIN_PCT = 7.0  # a segment narrower than this carries no text (its title and the legend do)
SHORT_ID = 32


def column_summaries(report: CompatReport) -> list[dict[str, Any]]:
    """Per interpreter column: packages run there, how many are compatible, the bar's segments
    (verdict, count, x and width in percent, whether it is wide enough for a label)."""
    out = []
    for c in report.interpreters:
        counts = Counter(cell.verdict for row in report.table
                         if (cell := row.cell(c.name)) is not None)
        total = sum(counts.values())
        segs, x = [], 0.0
        for v in BAR_ORDER:
            n = counts.get(v, 0)
            if not n:
                continue
            w = 100.0 * n / total
            segs.append({"verdict": v, "n": n, "x": round(x, 3), "w": round(w, 3),
                         "mid": round(x + w / 2, 3), "label": w >= LABEL_MIN_PCT})
            x += w
        out.append({
            "name": c.name, "label": c.label, "column": c,
            "total": total, "compatible": counts.get("compatible", 0), "segments": segs,
            "described": ", ".join(f"{s['n']} {s['verdict']}" for s in segs),
        })
    return out


def shorten(test_id: str, limit: int = SHORT_ID) -> str:
    """A test id cut for a one-line cell: its last ``::`` part (``test_shared_buffer``,
    ``TestX::test_y``), its middle elided when still too long."""
    parts = test_id.split("::")
    short = "::".join(parts[-2:]) if len(parts) > 2 else parts[-1]
    if len(short) > limit:
        short = short[: limit // 2 - 1] + "…" + short[-(limit - limit // 2):]
    return short


def decider(p: JobEntry) -> dict[str, str] | None:
    """What decided the job's verdict, for its cell: the finding of that kind (the first of the
    most severe), as a short text, its full text and its rate k/R."""
    f = next((f for f in p.findings if f.kind == p.verdict), None)
    if f is None:
        return None
    full = f.test_id or f.module or ""
    if not full:
        return None
    return {"short": shorten(full) if f.test_id else full, "full": full, "ratio": f.ratio,
            "kind": f.kind}
