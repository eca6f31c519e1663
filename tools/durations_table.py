"""Write harness/data/durations.json, the shipped table of measured per-package job times
(harness.config.timings), from the results of real runs.

    python tools/durations_table.py OUT_DIR [OUT_DIR ...] [--note TEXT]

Each package's row is its job's phases together (seconds), with the job's settings, version,
interpreter, backend and date; of one package in several dirs, the result that finished last.
Jobs that ended as infra-error are left out unless nothing else measured the package.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.config.timings import SETTINGS_KEYS, TABLE  # noqa: E402
from harness.results.load import load_results  # noqa: E402


def _rank(row: dict) -> tuple[bool, str]:
    return row["verdict"] != "infra-error", row["finished"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--note", default="")
    ap.add_argument("--out", type=Path, default=TABLE)
    args = ap.parse_args(argv)
    rows: dict[str, dict] = {}
    for d in args.dirs:
        results, problems = load_results([d])
        for p in problems:
            print(f"skipped: {p}", file=sys.stderr)
        for r in results:
            secs = round(sum(p.duration for p in r.phases), 1)
            if secs <= 0:
                continue
            row = {"seconds": secs, "version": r.version, "verdict": r.verdict,
                   "interpreter": r.interpreter.full_version or r.interpreter.version,
                   "backend": r.backend, "finished": r.finished[:10],
                   "settings": {k: r.settings.get(k) for k in SETTINGS_KEYS if k in r.settings}}
            old = rows.get(r.package)
            if old is None or _rank(row) >= _rank(old):
                rows[r.package] = row
    data = {"note": args.note or "seconds of one job (its phases together) measured on a 2-core x86_64 "
                                 "machine; see tools/durations_table.py",
            "packages": dict(sorted(rows.items()))}
    args.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"{len(rows)} packages written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
