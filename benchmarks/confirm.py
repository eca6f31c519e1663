"""Section "confirm": what re-running a finding's test alone costs (issue #20).

The same fixture matrix (a crash and a race: ft_realloc, ft_sharedbuf) runs with
``confirm: 0`` and with ``confirm: N``, side by side, in alternating order (A B, then B A) so
neither side always finds the warmer disk cache.  Reported: the extra wall seconds per job and
per confirmed finding, and the confirm phases' own seconds (from the results).  A hang's
re-runs cost ``test_timeout`` each by construction (pytest-timeout's thread method ends the
process there); that is said, not measured here, to keep the section short.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from .common import SETTINGS, fixture, results, run_cli, summarize, write_matrix

log = logging.getLogger(__name__)
FIXTURES = ("ft_realloc", "ft_sharedbuf")
CONFIRM = 5


def _one(tmp: Path, confirm: int, tag: str) -> dict[str, Any]:
    m = write_matrix(
        tmp / f"confirm-{tag}.yaml", [fixture(n) for n in FIXTURES], settings={**SETTINGS, "confirm": confirm}
    )
    out = tmp / f"out-confirm-{tag}"
    run = run_cli("run", "--matrix", str(m), "--out", str(out), "--backend", "local", "--force")
    res = results(out)
    confirm_s = sum(p["duration"] for r in res.values() for p in r["phases"] if p["kind"] == "confirm")
    confirmed = sum(1 for r in res.values() for f in r["findings"] if f.get("confirmed"))
    return {
        "wall": run.wall,
        "confirm_phase_seconds": round(confirm_s, 2),
        "confirmed": confirmed,
        "verdicts": {k: v["verdict"] for k, v in res.items()},
    }


def measure(tmp: Path, rounds: int = 2) -> dict[str, Any]:
    off: list[dict[str, Any]] = []
    on: list[dict[str, Any]] = []
    for i in range(rounds):
        order = [("off", 0), ("on", CONFIRM)] if i % 2 == 0 else [("on", CONFIRM), ("off", 0)]
        for side, n in order:
            log.info("confirm: round %d, confirm %d", i + 1, n)
            (on if side == "on" else off).append(_one(tmp, n, f"{side}{i}"))
    extra = [b["wall"] - a["wall"] for a, b in zip(off, on, strict=True)]
    per_finding = [(b["wall"] - a["wall"]) / max(1, b["confirmed"]) for a, b in zip(off, on, strict=True)]
    phase_per_finding = [b["confirm_phase_seconds"] / max(1, b["confirmed"]) for b in on]
    return {
        "fixtures": list(FIXTURES),
        "confirm": CONFIRM,
        "rounds": rounds,
        "off": off,
        "on": on,
        "extra_wall_seconds": summarize(extra),
        "extra_wall_per_finding": summarize(per_finding),
        "confirm_phase_seconds_per_finding": summarize(phase_per_finding),
        "hang_note": f"a hang's re-runs cost test_timeout each ({SETTINGS.get('test_timeout')} s "
        f"here), {CONFIRM} per GIL mode at most, within confirm_budget",
    }
