"""The index's first screen: per interpreter, "N of M work without the GIL as with it" and a
stacked bar of the answers (harness.results.answer), each segment naming its verdicts.

Plain numbers for the template (templates/index.html draws the SVG at render time: no chart
library, no script).  The bar is readable without colour: each segment wide enough carries its
answer's mark and count, every segment has a ``<title>`` with the verdicts in it, and the legend
under it lists each answer present as mark, words, count and verdicts.  A deciding finding is
shortened for a one-line cell: its test function's name whole, the class shortened.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..core.model import VERDICTS, Finding, severity
from ..results.answer import ANSWER_TEXT
from ..results.report import CompatReport, JobEntry

# One mark per verdict (and finding kind), a distinct shape in DejaVu Sans and most system
# fonts; U+FE0E asks for the text glyph, not an emoji.  Never the only sign: the word is next
# to it everywhere.
MARK = {
    "build-failure": "✖",
    "infra-error": "⚙\ufe0e",
    "ft-crash": "⚡\ufe0e",
    "crash": "☠\ufe0e",
    "hang": "◷",
    "ft-race": "⇄",
    "thread-unsafe": "≋",
    "gil-reenabled": "⊘",
    "baseline-failure": "△",
    "compatible": "✔\ufe0e",
    "no-tests": "○",
    "skipped": "⏭\ufe0e",
    "no-thread-coverage": "◌",
    "unconfirmed": "?",
    "setup-error": "⚠\ufe0e",
    "budget-spent": "⌁",
    "slow-in-threads": "≈",
    "repeat-failure": "↻",
}
# left to right: what is safe first, then what is wrong, the harness's own problems last
BAR_ORDER = ("compatible", *(v for v in reversed(VERDICTS) if v not in ("compatible", "infra-error")), "infra-error")
# the answers left to right: what works first, then what is wrong, what was not judged last
ANSWER_ORDER = ("no-ft-problem", "ft-problem", "both-modes", "not-judged")
ANSWER_MARK = {"no-ft-problem": "✔\ufe0e", "ft-problem": "✖", "both-modes": "☠\ufe0e", "not-judged": "○"}
LABEL_MIN_PCT = 7.0  # a segment narrower than this carries no text (its title and the legend do)
SHORT_ID = 32


def column_summaries(report: CompatReport) -> list[dict[str, Any]]:
    """Per interpreter column: packages run there, how many work without the GIL as with it
    (answer ``no-ft-problem``) and how many of those are plainly ``compatible``, the bar's
    segments (answer, count, its verdicts, x and width in percent, wide enough for a label)."""
    out = []
    for c in report.interpreters:
        cells = [cell for row in report.table if (cell := row.cell(c.name)) is not None]
        by_answer = Counter(cell.answer for cell in cells)
        total = len(cells)
        segs, x = [], 0.0
        for a in ANSWER_ORDER:
            n = by_answer.get(a, 0)
            if not n:
                continue
            verdicts = Counter(cell.verdict for cell in cells if cell.answer == a)
            w = 100.0 * n / total
            segs.append(
                {
                    "answer": a,
                    "text": ANSWER_TEXT[a],
                    "mark": ANSWER_MARK[a],
                    "n": n,
                    "verdicts": ", ".join(f"{k} {verdicts[k]}" for k in sorted(verdicts, key=severity)),
                    "x": round(x, 3),
                    "w": round(w, 3),
                    "mid": round(x + w / 2, 3),
                    "label": w >= LABEL_MIN_PCT,
                }
            )
            x += w
        out.append(
            {
                "name": c.name,
                "label": c.label,
                "column": c,
                "total": total,
                "works": by_answer.get("no-ft-problem", 0),
                "compatible": sum(1 for cell in cells if cell.verdict == "compatible"),
                "caveats": sum(1 for cell in cells if cell.answer == "no-ft-problem" and cell.caveat),
                "segments": segs,
                "described": ", ".join(f"{s['n']} {s['text']}" for s in segs),
            }
        )
    return out


def shorten(test_id: str, limit: int = SHORT_ID) -> str:
    """A test id for a one-line cell: its function's name whole (``test_shared_buffer``), after
    its class (``TestX::test_y``) when it has one, the class cut to fit ``limit`` (never the
    function's name: ``CLIVersionTests…::test_version``)."""
    parts = test_id.split("::")
    func = parts[-1]
    if len(parts) <= 2:
        return func
    cls = parts[-2]
    room = limit - len(func) - 2
    if len(cls) > room:
        cls = cls[: max(room - 1, 4)] + "…"
    return f"{cls}::{func}"


def runs_label(f: Finding, per_mode: dict[int, int] | None = None) -> str:
    """k/R with its modes, from the finding's fields: "2/3 off · 0/3 on" (a finding of the GIL-off
    runs; ``per_mode``: the job's runs of the finding's kind per mode, for the other mode's R),
    "3/3 off · 3/3 on" (both modes, every run), "5/6 off and on together" (both, pooled: the
    finding does not say how they split), then the runs alone per mode ("alone 4/5 off · 0/5
    on", settings.confirm) when there were any."""
    parts = []
    per_mode = per_mode or {}
    modes = tuple(f.modes)
    if f.runs and len(modes) == 1:
        m = modes[0]
        label = f"{f.count}/{f.runs} {'off' if m == 0 else 'on'}"
        other = per_mode.get(1 - m, 0)
        parts.append(label + (f" · 0/{other} {'on' if m == 0 else 'off'}" if other else ""))
    elif f.runs and modes == (0, 1) and f.count == f.runs and sum(per_mode.values()) == f.runs:
        parts.append(" · ".join(f"{per_mode[m]}/{per_mode[m]} {w}" for m, w in ((0, "off"), (1, "on"))))
    elif f.runs:
        parts.append(f"{f.count}/{f.runs}" + (" off and on together" if modes else ""))
    alone = [f"{f.confirmed[k]} {w}" for k, w in (("gil0", "off"), ("gil1", "on")) if f.confirmed.get(k)]
    if alone:
        parts.append("alone " + " · ".join(alone))
    return "; ".join(parts)


def decider(p: JobEntry) -> dict[str, str] | None:
    """What decided the job's verdict, for its cell: the finding of that kind (the first of the
    most severe), as a short text, its full text and its rate k/R."""
    f = next((f for f in p.findings if f.kind == p.verdict), None)
    if f is None:
        return None
    full = f.test_id or f.module or ""
    if not full:
        return None
    return {
        "short": shorten(full) if f.test_id else full,
        "full": full,
        "ratio": f.ratio,
        "runs": runs_label(f, runs_per_mode(p, f)),
        "kind": f.kind,
    }


def runs_per_mode(p: JobEntry, f: Finding) -> dict[int, int]:
    """The job's suite runs per GIL mode of the kind ``f`` counts (threaded ones for a race or a
    thread-unsafe test, plain and threaded for the rest; harness.verdict.modes)."""
    kinds = ("threads",) if f.kind in ("ft-race", "thread-unsafe", "repeat-failure") else ("plain", "threads")
    out: dict[int, int] = {}
    for ph in p.phases:
        if ph.kind in kinds and ph.gil in (0, 1):
            out[ph.gil] = out.get(ph.gil, 0) + 1
    return out
