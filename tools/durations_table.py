"""Write harness/data/durations.json, the shipped table of measured per-package job phases
(harness.config.timings), from the results of real runs.

    python tools/durations_table.py OUT_DIR [OUT_DIR ...] --note TEXT

Each package's row is one measured job: its phases' seconds per kind (``timings.Profile``: install,
probe, collect, plain and threaded runs per GIL mode, confirmation), the share of its tests that
failed with the GIL off, the settings it ran under, and its version, interpreter, backend and date.
Of one package measured in several dirs, the dir named later wins (within a dir: the result that
finished last).  Jobs that ended as infra-error are left out unless nothing else measured the
package.  The note must say where and under what load the runs were measured: the rows are that
machine's times under that load, as measured; ``--scale`` (with ``--scale-note`` saying from what)
sets the factor they are read with, to put the estimates between the loads measured.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.config.timings import TABLE, from_phases, row_settings  # noqa: E402
from harness.results.load import load_results  # noqa: E402


def _rank(row: dict) -> tuple[bool, int, str]:
    return row["verdict"] != "infra-error", row.pop("_dir"), row["finished"]


def _rounded(phases: dict) -> dict:
    """Seconds to 0.1 s (the share of failed tests as it is)."""

    def r(v: object) -> object:
        return {k: r(x) for k, x in v.items()} if isinstance(v, dict) else round(v, 1) if isinstance(v, float) else v

    return {k: v if k == "off_failed" else r(v) for k, v in phases.items()}


def rows_from(dirs: list[Path]) -> dict[str, dict]:
    """package -> its row, from the results under ``dirs`` (later dirs win)."""
    rows: dict[str, dict] = {}
    for n, d in enumerate(dirs):
        results, problems = load_results([d], tests=True)  # which tests failed
        for p in problems:
            print(f"skipped: {p}", file=sys.stderr)
        for r in results:
            if r.interpreter.sanitizer or r.reused_from:
                continue  # the table is of plain interpreters, and of jobs that ran
            prof = from_phases(r.phases, r.settings)
            if prof.measured <= 0:
                continue
            row = {
                "seconds": round(prof.measured, 1),
                "version": r.version,
                "verdict": r.verdict,
                "interpreter": r.interpreter.full_version or r.interpreter.version,
                "backend": r.backend,
                "finished": r.finished[:19],
                "run": str(d),
                "settings": row_settings(r.settings),
                "phases": _rounded(prof.to_row()),
            }
            old = rows.get(r.package)
            if old is None or _rank({**row, "_dir": n}) >= _rank({**old, "_dir": old["_n"]}):
                rows[r.package] = {**row, "_n": n}
    return {k: {f: v for f, v in row.items() if f != "_n"} for k, row in sorted(rows.items())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--note", required=True, help="where, when and under what load the runs were measured")
    ap.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="factor the rows are read with (harness.config.timings.table): where "
        "between the loads measured the estimates should sit",
    )
    ap.add_argument("--scale-note", default="", help="how --scale was arrived at (required with it)")
    ap.add_argument("--out", type=Path, default=TABLE)
    args = ap.parse_args(argv)
    if args.scale != 1.0 and not args.scale_note:
        ap.error("--scale needs --scale-note: say what it was measured from")
    rows = rows_from(args.dirs)
    data: dict = {"note": args.note}
    if args.scale != 1.0 or args.scale_note:  # 1.0 said too: how the rows are meant to be read
        data["scale"] = {"factor": args.scale, "note": args.scale_note}
    data["packages"] = rows
    args.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"{len(rows)} packages written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
