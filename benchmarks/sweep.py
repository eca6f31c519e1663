"""The sweep (issue #29): the host side of a job over the newest sdists of the top N projects.

    python benchmarks/sweep.py [--top 1000] [--cache ~/.cache/ft-harness/sweep] [--downloads 3]
    python benchmarks/run.py --sections sweep

For each of the first N projects of the shipped snapshot (harness/data/top-pypi-packages.json)
the newest non-yanked sdist is downloaded once (``harness.job.fetch``: the index's JSON page, the
sha256 checked) into a cache outside the repo, then the steps the host runs on a package's own
files before and after its code runs -- the fetch check, the bounded extraction
(``harness.job.extract``), the test-setup inference (``harness.testsetup.infer``: tests dir, test deps, pytest
config, conftest imports) -- run on it one at a time, in this process.  Nothing is built.

It reports the exceptions (each one a bug of ours: a package's odd file must be a note or a
named limit), the time per sdist (median, p99, max), the peak memory of the process and what the
inference found.  Each sdist's row goes to ``CACHE/rows.json`` for a look at the odd ones.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from packaging.utils import InvalidSdistFilename, parse_sdist_filename  # noqa: E402

from harness.config import select  # noqa: E402
from harness.core import limits  # noqa: E402
from harness.job import extract, fetch  # noqa: E402
from harness.testsetup import infer, pytestcfg, where  # noqa: E402

log = logging.getLogger("bench.sweep")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ft-harness" / "sweep"


# ----------------------------------------------------------------------------- downloads


def _marker(cache: Path, name: str) -> Path:
    return cache / name / "fetched.json"


def download_one(name: str, cache: Path) -> dict[str, Any]:
    """The newest sdist of ``name`` in ``cache/name/`` (once): {"file": ..} or {"no_sdist": why}
    or {"unavailable": why} (a network error: tried again next time)."""
    marker = _marker(cache, name)
    if marker.is_file():
        return json.loads(marker.read_text())
    dest = cache / name
    t0 = time.monotonic()
    try:
        got = fetch.sdist(name, "", dest)
    except fetch.NoSdist as e:
        rec: dict[str, Any] = {"no_sdist": str(e)}
    except fetch.IndexUnavailable as e:
        return {"unavailable": str(e)}
    else:
        rec = {
            "file": got.path.name,
            "version": got.version,
            "size": got.size,
            "seconds": round(time.monotonic() - t0, 2),
        }
    dest.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps(rec))
    return rec


def download(names: list[str], cache: Path, workers: int = 3) -> dict[str, dict[str, Any]]:
    cache.mkdir(parents=True, exist_ok=True)
    out: dict[str, dict[str, Any]] = {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for i, (name, rec) in enumerate(zip(names, pool.map(lambda n: download_one(n, cache), names), strict=True), 1):
            out[name] = rec
            if i % 50 == 0:
                log.info("downloaded %d/%d", i, len(names))
    return out


# ----------------------------------------------------------------------------- host steps


def host_steps(name: str, archive: Path, work: Path) -> dict[str, Any]:
    """What the host does with one sdist, timed: extraction, then the test-setup inference."""
    row: dict[str, Any] = {"name": name, "file": archive.name}
    t0 = time.monotonic()
    try:
        # the fetch check as job.py makes it: a regular file, a name that is an sdist's
        found = extract.archives(archive.parent)
        if archive not in found:
            row["fetch_error"] = "not a regular file"
        try:
            parse_sdist_filename(archive.name)
        except InvalidSdistFilename as e:
            row["fetch_error"] = str(e)
        t_x = time.monotonic()
        try:
            top, links_out = extract.extract(archive, work / "src")
        except extract.LimitExceeded as e:
            row["limit"] = e.limit
            row["extract_error"] = str(e)
        except extract.UNSAFE as e:
            row["extract_error"] = f"{type(e).__name__}: {e}"
        else:
            row["links_out"] = len(links_out)
            row["extract_seconds"] = round(time.monotonic() - t_x, 4)
            t_i = time.monotonic()
            setup = infer.infer_test_setup(top, name)
            row["setup"] = setup.to_dict()
            # what the suite setup asks of the source next (shadowing, tests present, own config)
            row["shadowing"] = bool(where.shadowing(top, setup.tests, name))
            row["has_tests"] = where.has_tests(top, setup.tests)
            row["own_config"] = pytestcfg.pytest_config(top, setup.tests, []) is not None
            row["infer_seconds"] = round(time.monotonic() - t_i, 4)
    except Exception as e:  # noqa: BLE001 - the count the sweep exists for (must be 0)
        row["exception"] = f"{type(e).__name__}: {e}"
        row["traceback"] = traceback.format_exc()
    row["seconds"] = round(time.monotonic() - t0, 4)
    shutil.rmtree(work / "src", ignore_errors=True)
    return row


def _found(setup: dict[str, Any]) -> list[str]:
    """What the inference found in one sdist, as counted keys."""
    sources = setup.get("sources", [])
    keys = []
    if setup.get("tests"):
        keys.append("tests dir found")
    frm = next((s[len("test deps from ") :] for s in sources if s.startswith("test deps from ")), "")
    if frm:
        kind = frm.split(" ", 1)[0] if not frm.startswith("[") else frm.split("]", 1)[0] + "]"
        if frm.endswith(".txt"):
            kind = "requirements file"
        keys.append(f"test deps from {kind}")
    if any(s.startswith("addopts neutralized") for s in sources):
        keys.append("pytest addopts neutralized")
    if any(" imports " in s and " from " in s for s in sources):
        keys.append("conftest import added")
    if any("limit" in s and "exceeded" in s for s in sources):
        keys.append("a limit exceeded (noted)")
    if not setup.get("tests") and not frm and not setup.get("pytest_args"):
        keys.append("nothing found")
    if any("not a list" in s or "not a table" in s or "not a string" in s for s in sources):
        keys.append("a value of the wrong type (noted)")
    if any(" not read: " in s for s in sources):
        keys.append("a config file not read (noted)")
    return keys


def _pct(values: list[float], q: float) -> float:
    vals = sorted(values)
    if not vals:
        return 0.0
    k = min(len(vals) - 1, max(0, round(q * (len(vals) - 1))))
    return vals[k]


def _spread(times: list[float]) -> dict[str, float | None]:
    return {
        "median": round(statistics.median(times), 4) if times else None,
        "p99": round(_pct(times, 0.99), 4),
        "max": round(max(times, default=0), 4),
    }


def summarize(rows: list[dict[str, Any]], fetched: dict[str, dict[str, Any]]) -> dict[str, Any]:
    times = [r["seconds"] for r in rows]
    counts: Counter[str] = Counter()
    for r in rows:
        if "setup" in r:
            counts.update(_found(r["setup"]))
            counts.update(
                k
                for k, on in (
                    ("tests in the source", r["has_tests"]),
                    ("own pytest config", r["own_config"]),
                    ("--import-mode=append (shadowing)", r["shadowing"]),
                )
                if on
            )
        if "fetch_error" in r:
            counts["fetch check failed"] += 1
        if "limit" in r:
            counts[f"limit {r['limit']}"] += 1
        elif "extract_error" in r:
            counts["extraction refused"] += 1
    slow = sorted(rows, key=lambda r: -r["seconds"])[:5]
    return {
        "projects": len(fetched),
        "sdists": len(rows),
        "no_sdist": sum(1 for r in fetched.values() if "no_sdist" in r),
        "unavailable": sum(1 for r in fetched.values() if "unavailable" in r),
        "exceptions": sum(1 for r in rows if "exception" in r),
        "exception_rows": [{k: r[k] for k in ("name", "exception", "traceback")} for r in rows if "exception" in r][
            :20
        ],
        "seconds_per_sdist": {
            "median": round(statistics.median(times), 4) if times else None,
            "p99": round(_pct(times, 0.99), 4),
            "max": round(max(times, default=0), 4),
            "total": round(sum(times), 1),
        },
        "extract_seconds": _spread([r["extract_seconds"] for r in rows if "extract_seconds" in r]),
        "infer_seconds": _spread([r["infer_seconds"] for r in rows if "infer_seconds" in r]),
        "slowest": [{"name": r["name"], "seconds": r["seconds"]} for r in slow],
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "found": dict(sorted(counts.items())),
        "limits": limits.defaults(),
    }


def measure(top: int = 1000, cache: Path = CACHE, downloads: int = 3) -> dict[str, Any]:
    names = select.read_names()[:top]
    t0 = time.monotonic()
    fetched = download(names, cache, downloads)
    t_dl = time.monotonic() - t0
    rows = []
    work = Path(tempfile.mkdtemp(prefix="ft-sweep-"))
    t1 = time.monotonic()
    try:
        for i, name in enumerate(names, 1):
            rec = fetched[name]
            if "file" in rec:
                rows.append(host_steps(name, cache / name / rec["file"], work))
            if i % 100 == 0:
                log.info("host steps: %d/%d, %d exception(s)", i, len(names), sum(1 for r in rows if "exception" in r))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    doc = summarize(rows, fetched)
    doc["download_seconds"] = round(t_dl, 1)
    doc["host_seconds"] = round(time.monotonic() - t1, 1)
    (cache / "rows.json").write_text(json.dumps(rows, indent=1))
    return doc


def lines(d: dict[str, Any]) -> list[str]:
    s = d["seconds_per_sdist"]
    out = [
        f"## sweep: the host side over the newest sdists of the top {d['projects']} projects",
        "",
        f"{d['sdists']} sdists ({d['no_sdist']} projects without one, {d['unavailable']} not "
        f"reachable); exceptions: **{d['exceptions']}** (must be 0).",
        f"Time per sdist (extraction + inference): median {s['median']} s, p99 {s['p99']} s, "
        f"max {s['max']} s; {s['total']} s in all ({d.get('host_seconds')} s wall, downloads "
        f"{d.get('download_seconds')} s). Peak memory {d['peak_rss_mib']} MiB.",
        f"Of which extraction: median {d['extract_seconds']['median']} s, p99 "
        f"{d['extract_seconds']['p99']} s, max {d['extract_seconds']['max']} s; inference (with the "
        f"suite checks): median {d['infer_seconds']['median']} s, p99 {d['infer_seconds']['p99']} s, "
        f"max {d['infer_seconds']['max']} s.",
        "",
        "| found | sdists |",
        "|---|---|",
    ]
    out += [f"| {k} | {v} |" for k, v in d["found"].items()]
    out += ["", "Slowest: " + ", ".join(f"{r['name']} {r['seconds']} s" for r in d["slowest"])]
    if d.get("largest_seen"):  # measured apart (the archives' headers), against the limits' defaults
        out += [
            "",
            "Largest seen against the limit: "
            + ", ".join(
                f"{k} {v[1]:,} ({v[0]}; limit {d['limits'].get(k, 100 if k == 'pyproject_nesting' else '?'):,})"
                for k, v in d["largest_seen"].items()
            ),
        ]
    for r in d["exception_rows"]:
        out.append(f"- {r['name']}: {r['exception']}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=1000)
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--downloads", type=int, default=3, help="parallel downloads (default 3)")
    ap.add_argument("--download-only", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the summary here")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[sweep %(asctime)s] %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("harness").setLevel(logging.ERROR)
    if args.download_only:
        got = download(select.read_names()[: args.top], args.cache, args.downloads)
        print(Counter(next(iter(r)) for r in got.values()))
        return 0
    d = measure(args.top, args.cache, args.downloads)
    print("\n".join(lines(d)))
    if args.json:
        args.json.write_text(json.dumps(d, indent=1) + "\n")
    return 1 if d["exceptions"] else 0


if __name__ == "__main__":
    sys.exit(main())
