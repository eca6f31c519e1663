"""Section 4, scale: plan and report time for synthetic matrices (results generated, not run).

For N packages: a matrix.yaml of N PyPI entries, then timed separately
  load   = matrix.load
  plan   = plan.make_plan + plantext.render_plan(fmt="json", shards=8)
  report = load.load_results + aggregate.build_report + render.write_all
with N synthetic JobResult files (written through harness.core.model, not timed) whose shape
follows a real job: fetch, install, probe, 2 plain + 2 threaded phases of TESTS tests each,
verdicts cycling through every verdict, a finding with an excerpt for each non-compatible one.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any

from harness import render
from harness.config import matrix, plan, plantext
from harness.config.matrix import Package
from harness.core.evidence import ModeCoverage, ParallelInfo
from harness.core.model import VERDICTS, Finding, InterpreterInfo, JobResult, Phase, TestCase
from harness.results import aggregate, load

from .common import INTERP, SETTINGS, summarize, write_matrix

log = logging.getLogger(__name__)
SIZES = (10, 100, 1000, 10000)
TESTS = 25  # per test phase
EXCERPT = "\n".join(f"tests/test_mod.py::test_case_{i} PASSED [{i * 4}%]" for i in range(12))


def _package_entry(i: int) -> dict[str, str]:
    return {"name": f"pkg-{i:05d}", "version": f"=={1 + i % 7}.{i % 13}.0"}


def synthetic_result(job: plan.Job, i: int, interp: InterpreterInfo) -> JobResult:
    verdict = VERDICTS[i % len(VERDICTS)]
    root = f"work/{job.job_id}"
    phases = [
        Phase(
            name=n,
            kind="install",
            command=("pip", "install", job.package.name),
            exit_code=0,
            duration=3.0 + i % 5,
            log=f"{root}/logs/{n}.log",
            excerpt=EXCERPT,
        )
        for n in ("fetch", "install")
    ]
    phases.append(Phase(name="probe", kind="probe", exit_code=0, duration=0.5, log=f"{root}/logs/probe.log"))
    for mode in (0, 1):
        for kind, name in (("plain", f"plain-gil{mode}"), ("threads", f"threads-gil{mode}-r1")):
            tests = {
                f"tests/test_mod.py::test_case_{t}": TestCase(
                    outcome="failed" if (verdict != "compatible" and t == 0) else "passed",
                    message="AssertionError: 1 != 2" if t == 0 else "",
                    parallel=kind == "threads",
                )
                for t in range(TESTS)
            }
            counts = {
                "passed": sum(tc.outcome == "passed" for tc in tests.values()),
                "failed": sum(tc.outcome == "failed" for tc in tests.values()),
            }
            phases.append(
                Phase(
                    name=name,
                    kind=kind,
                    gil=mode,
                    rep=1 if kind == "threads" else 0,
                    command=(f"{root}/venv/bin/python", "-P", "-m", "pytest", "-n", "auto", "-v"),
                    env={"PYTHON_GIL": str(mode)},
                    cwd=f"{root}/src",
                    exit_code=1 if counts["failed"] else 0,
                    duration=2.0 + (i % 11) / 10,
                    log=f"{root}/logs/{name}.log",
                    junit=f"{root}/junit/{name}.xml",
                    tests=tests,
                    counts=counts,
                    excerpt=EXCERPT,
                    parallel=ParallelInfo(trusted=True, source="log", collected_parallel=TESTS, in_threads=tuple(tests))
                    if kind == "threads"
                    else None,
                )
            )
    findings = ()
    if verdict not in ("compatible", "no-tests"):
        findings = (
            Finding(
                kind=verdict,
                test_id="tests/test_mod.py::test_case_0",
                modes=(0,),
                count=1,
                runs=1,
                evidence="junit",
                excerpt=EXCERPT,
                message=f"synthetic {verdict}",
                reproduce="PYTHON_GIL=0 pytest -x",
                phase="threads-gil0-r1",
            ),
        )
    return JobResult(
        job_id=job.job_id,
        key=job.key(interp.key),
        package=job.package.name,
        requested=job.package.version,
        version=job.package.version.lstrip("="),
        source="pypi",
        interpreter=interp,
        settings=dict(SETTINGS),
        backend="local",
        started="2026-01-01T00:00:00+00:00",
        finished="2026-01-01T00:00:30+00:00",
        harness_version="bench",
        phases=tuple(phases),
        verdict=verdict,
        findings=findings,
        coverage={
            f"gil{m}": ModeCoverage(
                mode=m, known=True, source="log", in_threads=TESTS, single=0, skipped_unsafe=0, total=TESTS
            )
            for m in (0, 1)
        },
    )


CPU: dict[str, float] = {}  # step -> CPU seconds of the last _timed call (less noisy than wall)


def write_results(jobs: list[plan.Job], interp: InterpreterInfo, results_dir: Path) -> None:
    """One result file per job: a JSON template per verdict, the job's names put in by text.

    (Building and dumping 10,000 dataclass trees would take longer than the step timed.)
    No fsync, unlike the harness: generation is not what is measured.
    """
    templates = []
    for k in range(len(VERDICTS)):
        dummy = plan.Job(
            job_id=f"{INTERP['name']}--zzdummy{k}zz",
            interpreter=jobs[0].interpreter,
            package=Package(name=f"zzdummy{k}zz", version="==9.9.9"),
            settings=jobs[0].settings,
        )
        text = json.dumps(synthetic_result(dummy, k, interp).to_dict())
        templates.append((text, f"zzdummy{k}zz", dummy.key(interp.key)))
    for i, job in enumerate(jobs):
        text, name, key = templates[i % len(templates)]
        text = text.replace(name, job.package.name).replace(key, job.key(interp.key))
        text = text.replace("9.9.9", job.package.version.lstrip("="))
        (results_dir / f"{job.job_id}.json").write_text(text)


def _timed(step: str, fn, *args, **kw) -> tuple[Any, float]:  # noqa: ANN001
    t0, c0 = time.perf_counter(), time.process_time()
    value = fn(*args, **kw)
    CPU[step] = time.process_time() - c0
    return value, time.perf_counter() - t0


def one_size(n: int, tmp: Path, profiler: Any = None) -> dict[str, Any]:
    base = tmp / f"scale-{n}"
    shutil.rmtree(base, ignore_errors=True)
    path = write_matrix(base / "matrix.yaml", [_package_entry(i) for i in range(n)])
    spec, t_load = _timed("matrix_load", matrix.load, str(path))
    jobs, t_make = _timed("plan_make", plan.make_plan, spec)
    text, t_render = _timed("plan_render", plantext.render_plan, jobs, fmt="json", shards=8)
    assert len(json.loads(text)["jobs"]) == n
    interp = InterpreterInfo(
        name=INTERP["name"],
        version=INTERP["version"],
        key="bench-key",
        configure=("--disable-gil",),
        python="/opt/bench/python3.13t",
    )
    results_dir = base / "out" / "results"
    results_dir.mkdir(parents=True)
    t0 = time.perf_counter()
    write_results(jobs, interp, results_dir)  # not timed
    t_gen = time.perf_counter() - t0
    out = base / "out"
    if profiler is not None:
        profiler.enable()
    (loaded, problems), t_loadres = _timed("load_results", load.load_results, [out])
    assert len(loaded) == n and not problems, problems[:3]
    report, t_build = _timed(
        "build_report",
        aggregate.build_report,
        loaded,
        meta={"harness_version": "bench"},
        expected_jobs=[j.job_id for j in jobs],
    )
    written, t_write = _timed("write_all", render.write_all, report, out)
    if profiler is not None:
        profiler.disable()
    sizes = sum(p.stat().st_size for p in written if p.is_file())
    plan_s = t_make + t_render
    report_s = t_loadres + t_build + t_write
    shutil.rmtree(base, ignore_errors=True)
    return {
        "packages": n,
        "matrix_load": round(t_load, 4),
        "plan": round(plan_s, 4),
        "plan_make": round(t_make, 4),
        "plan_render": round(t_render, 4),
        "report": round(report_s, 4),
        "load_results": round(t_loadres, 4),
        "build_report": round(t_build, 4),
        "write_all": round(t_write, 4),
        "files_written": len(written),
        "bytes_written": sizes,
        "generate_results": round(t_gen, 3),
        "cpu": {k: round(v, 4) for k, v in CPU.items()},
        "report_cpu": round(CPU["load_results"] + CPU["build_report"] + CPU["write_all"], 4),
        "plan_cpu": round(CPU["plan_make"] + CPU["plan_render"], 4),
        "plan_ms_per_package": round(plan_s * 1000 / n, 4),
        "report_ms_per_package": round(report_s * 1000 / n, 4),
        "load_ms_per_package": round(t_load * 1000 / n, 4),
    }


def measure(tmp: Path, sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    os.environ.pop("GITHUB_STEP_SUMMARY", None)  # write_all would append 10,000 rows to it
    rows = []
    for n in sizes:
        log.info("scale: %d packages", n)
        rows.append(one_size(n, tmp))
    big = rows[-1]
    return {
        "sizes": list(sizes),
        "rows": rows,
        "target_report_seconds": 10.0,
        "largest": big["packages"],
        "largest_report_seconds": big["report"],
        "largest_report_cpu_seconds": big["report_cpu"],
        # linear growth: per-package time stays flat from the 2nd size on (the 1st is start-up)
        "growth_plan": summarize([r["plan_ms_per_package"] for r in rows[1:]]),
        "growth_report": summarize([r["report_ms_per_package"] for r in rows[1:]]),
    }
