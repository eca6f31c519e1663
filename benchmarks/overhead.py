"""Section 1, overhead: one job through the harness vs the same commands run bare, A B then B A.

A = `ft-harness run --force --package P --jobs 1` (the whole CLI: start-up, interpreter
cache check, source copy/fetch, install, probe, test phases, parsing, verdict, report).
B = the commands the harness recorded in that job's result file (phases[].command, env,
cwd), re-run with subprocess in sequence: fetch (PyPI packages), install (a fresh venv in
the same place), then every test phase.  The import probe is a harness step with no bare
counterpart, so it counts as harness time.

Two ratios per round: *test phases* (sum of the harness's recorded test-phase durations
vs the bare runs of the same commands) and *whole job* (A's wall time vs all of B).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from harness.backends.local import clean_env

from .common import CliRun, count_downloads, ratio, results, run_cli, summarize, write_matrix

log = logging.getLogger(__name__)
TEST_KINDS = ("plain", "threads")


def bare_steps(res: dict[str, Any]) -> list[dict[str, Any]]:
    """The phases of a result that a person would run by hand: fetch, install, the test runs."""
    return [p for p in res["phases"] if p["kind"] in ("install", *TEST_KINDS)]


def run_bare(res: dict[str, Any], out: Path, logs: Path) -> dict[str, Any]:
    """Re-run a job's recorded commands bare; returns per-phase seconds and exit codes."""
    work = out / "work" / res["job_id"]
    logs.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(work / "venv", ignore_errors=True)  # the install makes the venv afresh,
    shutil.rmtree(work / "sdist", ignore_errors=True)  # the fetch downloads the sdist afresh
    phases = []
    for p in bare_steps(res):
        t0 = time.monotonic()
        with open(logs / f"{p['name']}.log", "wb") as f:
            proc = subprocess.Popen(
                p["command"],
                cwd=p["cwd"],
                env=clean_env(p["env"]),
                stdout=f,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            try:  # as long as the harness gave the whole job; then the group goes, as there
                code = proc.wait(timeout=res["settings"]["job_timeout"])
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                code = None
        phases.append(
            {
                "name": p["name"],
                "kind": p["kind"],
                "seconds": time.monotonic() - t0,
                "exit_code": code,
                "harness_exit_code": p["exit_code"],
            }
        )
    return {"phases": phases, "downloads": _downloads_in(logs, ("fetch", "install"))}


def _downloads_in(logs: Path, names: tuple[str, ...]) -> list[str]:
    found = []
    for n in names:
        f = logs / f"{n}.log"
        if f.is_file():
            found += count_downloads(f.read_text(errors="replace"))
    return found


def _harness_side(run: CliRun, res: dict[str, Any], out: Path) -> dict[str, Any]:
    phase_total = sum(p["duration"] for p in res["phases"])
    tests = sum(p["duration"] for p in res["phases"] if p["kind"] in TEST_KINDS)
    return {
        "wall": run.wall,
        "phases_total": round(phase_total, 3),
        "test_phases": round(tests, 3),
        "own_seconds": round(run.wall - phase_total, 3),  # start-up, copy, parse, verdict, report
        "verdict": res["verdict"],
        "downloads": _downloads_in(out / "work" / res["job_id"] / "logs", ("fetch", "install")),
    }


def measure(packages: list[dict[str, Any]], *, rounds: int, tmp: Path) -> dict[str, Any]:
    """Every package, ``rounds`` times, harness (A) and bare (B) in the order A B, B A, A B, ...

    Whichever side runs second finds the disk cache warm, so the order alternates (it cannot
    start with B: the bare side re-runs the commands the harness recorded, from the previous
    round's result in a B-first round).
    """
    matrix = write_matrix(tmp / "overhead.yaml", packages)
    out = tmp / "overhead-out"
    per: dict[str, dict[str, Any]] = {p["name"]: {"rounds": []} for p in packages}
    last: dict[str, dict[str, Any]] = {}

    def side_a(r: int, name: str) -> dict[str, Any]:
        log.info("overhead round %d/%d: %s through the harness", r, rounds, name)
        run = run_cli(
            "run",
            "--matrix",
            str(matrix),
            "--out",
            str(out),
            "--backend",
            "local",
            "--jobs",
            "1",
            "--force",
            "--package",
            name,
        )
        last[name] = next(v for v in results(out).values() if v["package"] == name)
        return _harness_side(run, last[name], out)

    def side_b(r: int, name: str) -> dict[str, Any]:
        log.info("overhead round %d/%d: %s bare", r, rounds, name)
        return run_bare(last[name], out, tmp / "bare-logs" / f"{name}-r{r}")

    for r in range(1, rounds + 1):
        for pkg in packages:
            name = pkg["name"]
            if r % 2:
                a = side_a(r, name)
                b = side_b(r, name)
            else:
                b = side_b(r, name)
                a = side_a(r, name)
            b_tests = sum(p["seconds"] for p in b["phases"] if p["kind"] in TEST_KINDS)
            b_all = sum(p["seconds"] for p in b["phases"])
            mismatched = [p["name"] for p in b["phases"] if p["exit_code"] != p["harness_exit_code"]]
            per[name]["rounds"].append(
                {
                    "round": r,
                    "order": "AB" if r % 2 else "BA",
                    "harness": a,
                    "bare": {
                        "test_phases": round(b_tests, 3),
                        "total": round(b_all, 3),
                        "phases": b["phases"],
                        "downloads": b["downloads"],
                    },
                    "ratio_test_phases": ratio(a["test_phases"], b_tests),
                    "ratio_whole_job": ratio(a["wall"], b_all),
                    "exit_code_mismatch": mismatched,
                }
            )
    for d in per.values():
        rs = d["rounds"]
        d["test_phases"] = summarize([x["ratio_test_phases"] for x in rs if x["ratio_test_phases"]])
        d["whole_job"] = summarize([x["ratio_whole_job"] for x in rs if x["ratio_whole_job"]])
        d["own_seconds"] = summarize([x["harness"]["own_seconds"] for x in rs])
        d["harness_wall"] = summarize([x["harness"]["wall"] for x in rs])
        d["bare_total"] = summarize([x["bare"]["total"] for x in rs])
        d["verdict"] = rs[-1]["harness"]["verdict"]
        d["n_test_phases"] = sum(1 for p in rs[-1]["bare"]["phases"] if p["kind"] in TEST_KINDS)
    pooled_t = [x["ratio_test_phases"] for d in per.values() for x in d["rounds"] if x["ratio_test_phases"]]
    pooled_w = [x["ratio_whole_job"] for d in per.values() for x in d["rounds"] if x["ratio_whole_job"]]
    return {
        "rounds": rounds,
        "target": 1.05,
        "packages": per,
        "all_test_phases": summarize(pooled_t),
        "all_whole_job": summarize(pooled_w),
    }
