"""ft-harness benchmark: overhead, schedule, cache and scale, as ratios measured side by side.

    python benchmarks/run.py [--quick] [--rounds 3] [--sections overhead,schedule,cache,scale]
                             [--with-default-matrix] [--tsan] [--results benchmarks/results]
    python benchmarks/run.py --sections sweep [--sweep-top 1000]   # the host side over real sdists
    python benchmarks/run.py --sections cost [--cost-rounds 2]     # default settings vs the previous way
    python benchmarks/run.py --sections stability [--stability-rounds 10]  # false claims, power, A/A

Writes RESULTS/latest.json and RESULTS/latest.md and prints the four sections.  The
machine's noise hits both sides of every ratio alike; absolute seconds are only context.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import logging
import os
import pstats
import shlex
import subprocess
import sys
import tempfile
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import confirm, cost, overhead, report, scale, schedule, stability, sweep  # noqa: E402
from benchmarks.common import FIXTURES, SETTINGS, fixture, write_matrix  # noqa: E402

log = logging.getLogger("bench")
SECTIONS = ("scale", "overhead", "schedule", "cache", "confirm")
REAL_PACKAGE = {"name": "six", "version": "==1.17.0"}  # a small PyPI sdist that ships its tests
OVERHEAD_FIXTURES = ("ft_clean", "ft_mixed")
SCHEDULE_FIXTURES = ("ft_clean", "ft_mixed", "ft_baseline", "ft_gilslot")  # 4 jobs: 2 workers can split them
BUDGET = 19 * 60.0


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def _profile_report(n: int, tmp: Path) -> dict[str, Any]:
    """Where the report time goes, at n packages (cProfile, top 12 by own time)."""
    prof = cProfile.Profile()
    scale.one_size(n, tmp / "profile", profiler=prof)  # only the report steps are profiled
    st = pstats.Stats(prof)
    rows = []
    for (file, line, fn), (_cc, calls, tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": f"{Path(file).name}:{line}({fn})", "tottime": tt, "cumtime": ct, "calls": calls})
    rows.sort(key=lambda r: -r["tottime"])
    return {
        "packages": n,
        "top": [{**r, "tottime": round(r["tottime"], 3), "cumtime": round(r["cumtime"], 3)} for r in rows[:12]],
    }


def _fixture_matrix(tmp: Path, names: tuple[str, ...]) -> Path:
    return write_matrix(tmp / "fixtures.yaml", [fixture(n) for n in names if (FIXTURES / n).is_dir()])


def _default_matrix_estimate(path: Path) -> float | None:
    from harness.config import estimate, matrix, plan

    try:
        jobs = plan.make_plan(matrix.load(str(path)))
    except Exception as e:  # noqa: BLE001 - a broken default matrix is reported, not fatal
        log.warning("default matrix %s: %s", path, e)
        return None
    return sum(estimate.expected_seconds(jobs))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick", action="store_true", help="fixtures only for overhead, one GIL mode, scale up to 10,000 still"
    )
    ap.add_argument("--rounds", type=int, default=3, help="overhead rounds (>= 3; default 3)")
    ap.add_argument("--sections", default=",".join(SECTIONS))
    ap.add_argument(
        "--with-default-matrix",
        action="store_true",
        help="also time the default matrix.yaml in the schedule section (alone: --sections default-matrix)",
    )
    ap.add_argument(
        "--backend",
        choices=("local", "docker"),
        default="local",
        help="backend of the default matrix's schedule runs (the fixtures always run local)",
    )
    ap.add_argument("--tsan", action="store_true", help="also run benchmarks/tsan_cost.py")
    ap.add_argument(
        "--sweep-top",
        type=int,
        default=1000,
        help="projects of the sweep (--sections sweep; not in the default sections: it "
        "downloads their sdists once into ~/.cache/ft-harness/sweep)",
    )
    ap.add_argument(
        "--cost-rounds",
        type=int,
        default=2,
        help="rounds of the cost section (--sections cost; not in the default sections: "
        "it runs the fixtures and real packages twice a round)",
    )
    ap.add_argument(
        "--stability-rounds",
        type=int,
        default=10,
        help="rounds of the stability section (--sections stability; not in the default sections: ~3 min a round)",
    )
    ap.add_argument(
        "--stability-real",
        default="",
        help="real packages the stability section also runs each round: name==version,...",
    )
    ap.add_argument("--budget", type=float, default=BUDGET, help="seconds the whole run may take")
    ap.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--keep", action="store_true", help="keep the temporary output dirs")
    ap.add_argument(
        "--scale-sizes",
        default=",".join(map(str, scale.SIZES)),
        help="package counts of the scale section (default: 10,100,1000,10000)",
    )
    ap.add_argument(
        "--merge", action="store_true", help="keep the sections of RESULTS/latest.json that this run does not measure"
    )
    ap.add_argument(
        "--render-only", action="store_true", help="only re-render RESULTS/latest.md from RESULTS/latest.json"
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[bench %(asctime)s] %(message)s", datefmt="%H:%M:%S")
    if args.render_only:
        doc = json.loads((args.results / "latest.json").read_text())
        md = report.render(doc)
        (args.results / "latest.md").write_text(md)
        print(md)
        return 0
    logging.getLogger("harness").setLevel(logging.WARNING)
    wanted = [s.strip() for s in args.sections.split(",") if s.strip()]
    t_start = time.monotonic()
    settings = dict(SETTINGS, gil_modes=[0]) if args.quick else dict(SETTINGS)
    doc: dict[str, Any] = {
        "schema": 1,
        "meta": {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "cpus": os.cpu_count(),
            "load_start": _load(),
            "quick": args.quick,
            "settings": settings,
            "command": "python benchmarks/run.py " + shlex.join(argv or sys.argv[1:]),
            "python": sys.version.split()[0],
        },
        "sections": {},
        "errors": {},
        "notes": [],
    }
    tmp = Path(tempfile.mkdtemp(prefix="ft-bench-"))
    common_settings = settings
    import benchmarks.common as common

    common.SETTINGS.clear()
    common.SETTINGS.update(common_settings)
    overhead_pkgs = [fixture(n) for n in OVERHEAD_FIXTURES] + ([] if args.quick else [REAL_PACKAGE])
    fixture_m = _fixture_matrix(tmp, SCHEDULE_FIXTURES)

    def section(name: str, fn, *a, gate: str = "", **kw):  # noqa: ANN001, ANN202
        if (gate or name) not in wanted:
            return None
        log.info("section %s (%.0f s elapsed)", name, time.monotonic() - t_start)
        t0 = time.monotonic()
        try:
            value = fn(*a, **kw)
        except Exception:  # noqa: BLE001 - one failed section must not lose the others
            doc["errors"][name] = traceback.format_exc()
            log.error("section %s failed:\n%s", name, doc["errors"][name])
            return None
        value["seconds"] = round(time.monotonic() - t0, 1)
        doc["sections"][name] = value
        return value

    sizes = tuple(int(x) for x in args.scale_sizes.split(",") if x.strip())
    sc = section("scale", scale.measure, tmp, sizes)
    if sc and sc["largest_report_seconds"] > sc["target_report_seconds"]:
        log.info("scale: the largest report missed its target; profiling at 1,000 packages")
        sc["profile"] = _profile_report(1000, tmp)
    section("overhead", overhead.measure, overhead_pkgs, rounds=max(3, args.rounds), tmp=tmp)
    section("confirm", confirm.measure, tmp, rounds=1 if args.quick else 2)
    section("sweep", sweep.measure, top=args.sweep_top)
    section("cost", cost.measure, tmp, rounds=max(1, args.cost_rounds))
    real = [
        {"name": n, "version": f"=={v}"}
        for n, _, v in (x.strip().partition("==") for x in args.stability_real.split(",") if x.strip())
    ]
    section("stability", stability.measure, tmp, rounds=max(1, args.stability_rounds), real=real)
    want_default = args.with_default_matrix or "default-matrix" in wanted
    if "schedule" in wanted or "cache" in wanted or want_default:
        sched = {"target": 1.10, "matrices": [], "skipped": []}
        one = section(
            "schedule-fixtures",
            schedule.measure,
            fixture_m,
            tmp,
            "fixtures",
            gate="schedule" if "schedule" in wanted else "cache",
        )
        doc["sections"].pop("schedule-fixtures", None)
        if one:
            sched["matrices"].append(one)
        default = ROOT / "matrix.yaml"
        est = _default_matrix_estimate(default) if default.is_file() else None
        left = args.budget - (time.monotonic() - t_start)
        if not default.is_file():
            sched["skipped"].append("the default matrix.yaml does not exist yet.")
        elif want_default:  # --jobs 2 first: the --jobs 1 run gets its built wheels
            two = section(
                "schedule-default",
                schedule.measure,
                default,
                tmp,
                "default",
                gate="schedule" if "schedule" in wanted else "default-matrix",
                backend=args.backend,
                first=2,
            )
            doc["sections"].pop("schedule-default", None)
            if two:
                sched["matrices"].append(two)
        else:
            sched["skipped"].append(
                f"the default matrix.yaml (plan estimate {est or 0:.0f} s per pass, two passes "
                f"needed; {left:.0f} s of the {args.budget:.0f} s budget left) does not fit; "
                "`python benchmarks/run.py --with-default-matrix` times it."
            )
        if "schedule" in wanted or want_default:
            doc["sections"]["schedule"] = sched
        if "cache" in wanted and one:
            c = section("cache", schedule.cache, fixture_m, tmp, "fixtures", one["j1"])
            ov = doc["sections"].get("overhead")
            if c and ov:
                per_job = [len(r["harness"]["downloads"]) for p in ov["packages"].values() for r in p["rounds"]]
                c["force_rerun_downloads"] = f"{min(per_job)}–{max(per_job)}" if per_job else None
    if args.tsan and (ROOT / "benchmarks" / "tsan_cost.py").is_file():
        section("tsan", _tsan, tmp)
    doc["meta"]["load_end"] = _load()
    doc["meta"]["total_seconds"] = round(time.monotonic() - t_start, 1)
    if doc["meta"]["total_seconds"] > args.budget and set(wanted) - {"default-matrix"}:  # the default
        # matrix's two passes alone are known to take longer; the budget is `nox -s bench`'s
        doc["notes"].append(
            f"the run took {doc['meta']['total_seconds']:.0f} s, over its "
            f"{args.budget:.0f} s budget (load average {doc['meta']['load_end']})."
        )
    args.results.mkdir(parents=True, exist_ok=True)
    if args.merge and (args.results / "latest.json").is_file():
        old = json.loads((args.results / "latest.json").read_text())
        kept = {k: v for k, v in old.get("sections", {}).items() if k not in doc["sections"]}
        if "schedule" in old.get("sections", {}) and "schedule" in doc["sections"]:
            # one schedule section, one entry per matrix: keep the matrices this run did not time
            new = doc["sections"]["schedule"]
            labels = {m["matrix"] for m in new["matrices"]}
            olds = [
                dict(
                    m,
                    measured=m.get("measured")
                    or {"date": old["meta"]["date"], "load_start": old["meta"]["load_start"]},
                )
                for m in old["sections"]["schedule"]["matrices"]
                if m["matrix"] not in labels
            ]
            new["matrices"] = olds + new["matrices"]
            if any(m["matrix"] == "default" for m in new["matrices"]):  # timed now or kept
                new["skipped"] = [n for n in new["skipped"] if "default matrix" not in n]
        for v in kept.values():
            v.setdefault(
                "measured",
                {
                    "date": old["meta"]["date"],
                    "load_start": old["meta"]["load_start"],
                    "run_seconds": old["meta"].get("total_seconds"),
                },
            )
        doc["sections"] = {**kept, **doc["sections"]}
        doc["meta"]["merged_from"] = old["meta"]["date"]
        doc["notes"] = old.get("notes", []) + doc["notes"]
    for v in doc["sections"].values():
        v.setdefault("measured", {"date": doc["meta"]["date"], "load_start": doc["meta"]["load_start"]})
    (args.results / "latest.json").write_text(json.dumps(doc, indent=1) + "\n")
    md = report.render(doc)
    (args.results / "latest.md").write_text(md)
    print(md)
    print(f"wrote {args.results / 'latest.json'} and {args.results / 'latest.md'}")
    if not args.keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"kept {tmp}")
    return 1 if doc["errors"] else 0


def _tsan(tmp: Path) -> dict[str, Any]:
    out = tmp / "tsan.json"
    p = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "tsan_cost.py"), "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=3600,
        cwd=ROOT,
    )
    data = json.loads(out.read_text()) if out.is_file() else {}
    return {"returncode": p.returncode, "stdout": p.stdout[-4000:], "data": data}


if __name__ == "__main__":
    sys.exit(main())
