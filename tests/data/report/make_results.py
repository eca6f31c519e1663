"""Regenerate the JobResult files the report tests read (run from the repo root).

    python tests/data/report/make_results.py

Every result is built with harness.core.model's own dataclasses and written with
harness.util.safefiles.write_json_atomic, so no field exists here that model.py does not have; each finding's
reproduce line and laptop recipe are made by the code that makes them in a run
(harness.verdict.reprocommands from the finding's phase, harness.job.laptoprecipe), none is written here.
tests/unit/results/test_report_data.py checks that the stored files are what this script writes now:
when the model, the reproduce lines or the recipes change, run it again and commit the result.
Logs, excerpts, the compiler error and the GIL warning are real output captured
on the free-threaded 3.13.5 build (tests/data/report/captured/, paths shortened
to /w/venv and /w/src); the verdicts are the ones harness.verdict is specified
to give for them (issue 4's table).

  run1/     a full run: 12 jobs on cp313t (3.13.5), every verdict, plus 3 on cp31315t
            (3.13.15: attrs and msgpack the same, fx-race compatible), logs under work/<job>/logs/
  run0/     the previous run: 10 jobs, some verdicts different
  hostile/  one job whose test ids, excerpts, notes, links and metadata carry HTML/JS
  corrupt/  a truncated file, a non-JSON file, a wrong-schema file, one valid result
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
if __name__ == "__main__":  # run as a script: harness from this checkout
    sys.path.insert(0, str(HERE.parents[2]))

from harness.core.evidence import ModeCoverage, Wheel  # noqa: E402
from harness.core.model import Finding, InterpreterInfo, JobResult, Phase, TestCommand  # noqa: E402
from harness.util.safefiles import write_json_atomic  # noqa: E402
from harness.core.suiterecord import TestSetup  # noqa: E402
from harness.job.laptoprecipe import recipe  # noqa: E402
from harness.verdict.reprocommands import probe_command, reproduce  # noqa: E402

CAP = HERE / "captured"
INTERP = InterpreterInfo(
    name="cp313t",
    version="3.13.5",
    key="3.13.5-3f1a9c2e-disable-gil",
    configure=("--disable-gil",),
    free_threaded=True,
    python="/opt/ft313t/bin/python3.13t",
    source="debian:trixie",
    full_version="3.13.5",
)
INTERP2 = InterpreterInfo(  # the second column: CPython as Debian forky ships it
    name="cp31315t",
    version="3.13.15",
    key="3.13.15-0dc8cebd-disable-gil",
    configure=("--disable-gil",),
    free_threaded=True,
    python="/opt/python/bin/python3.13t",
    source="debian:forky",
    full_version="3.13.15",
)
SETTINGS = {"threads": 4, "iterations": 5, "repeat": 3, "test_timeout": 120,
            "job_timeout": 1800, "gil_modes": [0, 1], "min_parallel_fraction": 0.5}
PY = "venv/bin/python"


def _cap(name: str, start: int = 0, end: int | None = None) -> str:
    lines = (CAP / name).read_text().splitlines()
    return "\n".join(lines[start:end])


TOOLS = ("pytest==8.4.2", "pytest-run-parallel==0.10.0", "pytest-xdist==3.8.0", "pytest-timeout==2.4.0")


def _test_command(mode: int, threads: bool, rep: int = 0) -> TestCommand:
    """The parts of _pytest_cmd, as harness.job.job keeps them (a recipe is built from them)."""
    name = f"threads-gil{mode}-r{rep}" if threads else f"plain-gil{mode}"
    return TestCommand(head=(PY, "-P", "-m", "pytest", "-p", "no:cacheprovider"),
                       options=("--timeout=120", "-rfE", "-v"),
                       threads=("--parallel-threads=4", "--iterations=5") if threads else (),
                       this_run=("-n", "auto", f"--junitxml=junit/{name}.xml"), paths=("tests",))


def _pytest_cmd(mode: int, threads: bool, rep: int = 0) -> tuple[str, ...]:
    name = f"threads-gil{mode}-r{rep}" if threads else f"plain-gil{mode}"
    cmd = [PY, "-P", "-m", "pytest", "-p", "no:cacheprovider", "-n", "auto"]
    if threads:
        cmd += ["--parallel-threads=4", "--iterations=5"]
    return (*cmd, "--timeout=120", "-rfE", "-v", f"--junitxml=junit/{name}.xml", "tests")


def phases(job: str, *, counts: dict[str, dict[str, int]] | None = None,
           fail: dict[str, int] | None = None, signal: dict[str, int] | None = None,
           timed_out: tuple[str, ...] = (), durations: float = 1.0,
           tests_run: bool = True, gil_modules: tuple[str, ...] = ()) -> tuple[Phase, ...]:
    counts = counts or {}
    fail = fail or {}
    signal = signal or {}
    out = [
        Phase(name="install", kind="install", command=(PY, "-m", "pip", "install", "..."),
              exit_code=0, duration=round(8.0 * durations, 2), log=f"work/{job}/logs/install.log"),
        Phase(name="probe", kind="probe", command=(PY, "-W", "default", "probe.py"),
              exit_code=0, duration=0.4, log=f"work/{job}/logs/probe.log",
              gil_modules=gil_modules),
    ]
    if not tests_run:
        return tuple(out)
    for mode in (0, 1):
        names = [(f"plain-gil{mode}", "plain", 0)] + [
            (f"threads-gil{mode}-r{k}", "threads", k) for k in (1, 2, 3)]
        for name, kind, rep in names:
            c = counts.get(name, counts.get("*", {"passed": 10}))
            out.append(Phase(
                name=name, kind=kind, gil=mode, rep=rep,
                command=_pytest_cmd(mode, kind == "threads", rep),
                test_command=_test_command(mode, kind == "threads", rep),
                env={"PYTHON_GIL": str(mode), "PYTHONFAULTHANDLER": "1"}, cwd="src",
                exit_code=fail.get(name, 0) if name not in signal else None,
                signal=signal.get(name), timed_out=name in timed_out,
                duration=round((2.5 if kind == "plain" else 4.0) * durations, 2),
                log=f"work/{job}/logs/{name}.log", junit=f"work/{job}/junit/{name}.xml",
                counts=c, gil_modules=gil_modules,
            ))
    return tuple(out)


def with_reproduce(f: Finding, ph: tuple[Phase, ...]) -> Finding:
    """The finding with the reproduce line harness.verdict gives it: a GIL warning's import, else
    its phase's command on its test (none without a phase)."""
    by = {p.name: p for p in ph}
    if f.kind == "gil-reenabled":
        return replace(f, reproduce=probe_command(by.get("probe"), ph, f.module or ""))
    return replace(f, reproduce=reproduce(by[f.phase], f.test_id or None) if f.phase in by else "")


def cov(mode: int, *, in_threads: int, total: int, single: int = 0, unsafe: int = 0,
        reasons: dict[str, str] | None = None, red_on: int = 0) -> ModeCoverage:
    """One mode's entry as harness.verdict.coverage.compute makes it; the GIL-off one's
    ``checked``: its tests in threads less the ``red_on`` that failed with the GIL on."""
    return ModeCoverage(mode=mode, known=True, source="log", in_threads=in_threads, single=single,
                        skipped_unsafe=unsafe, skipped=0, total=total, collected_parallel=in_threads,
                        reasons=reasons or {}, checked=in_threads - red_on if mode == 0 else None)


def result(job: str, package: str, version: str, verdict: str, *, source: str = "pypi",
           ph: tuple[Phase, ...] = (), findings: tuple[Finding, ...] = (), qualifier: str = "",
           coverage: dict[str, ModeCoverage] | None = None, wheel: dict | None = None, notes: str = "",
           links: tuple[str, ...] = (), metadata: dict | None = None, t: int = 0,
           interp: InterpreterInfo = INTERP, test_setup: dict | None = None) -> JobResult:
    # each finding's reproduce line (harness.verdict) and laptop recipe (harness.job.laptoprecipe)
    findings = tuple(with_reproduce(f, ph) for f in findings)
    red_on = len({f.test_id for f in findings if 1 in f.modes and f.test_id
                  and f.kind in ("thread-unsafe", "baseline-failure", "crash", "hang")})
    findings = tuple(replace(f, recipe=recipe(
        f, ph, package=package, version=version, interp=interp, tools=TOOLS, test_requires=(),
        local_path=f"fixtures/packages/{package}" if source == "local" else "")) for f in findings)
    return JobResult(
        job_id=f"{interp.name}--{job}", key=f"k-{job}-{version}", package=package,
        requested=f"=={version}" if source == "pypi" else f"fixtures/packages/{package}",
        version=version, source=source, interpreter=interp, settings=SETTINGS,
        backend="local", started=f"2026-12-03T08:{10 + t:02d}:00Z",
        finished=f"2026-12-03T08:{11 + t:02d}:30Z", harness_version="0.1.0",
        phases=ph, verdict=verdict, qualifier=qualifier, findings=findings,
        coverage=coverage if coverage is not None else {
            f"gil{m}": cov(m, in_threads=10, total=10, red_on=red_on) for m in (0, 1)},
        wheel=Wheel.from_dict(wheel) if wheel else (
            Wheel(installed="local source", available="n/a") if source == "local" else None),
        metadata=metadata or {}, notes=notes, links=links,
        test_setup=TestSetup.from_dict(test_setup or {}),
    )


def run1() -> list[JobResult]:
    crash_x = _cap("plain-gil0.log", 16, 29)
    hang_x = _cap("plain-gil0.log", 58, 66)
    bug_x = _cap("threads-gil0-r1.log", 21, 31)
    cc = _cap("build-refuses.log")
    gil = _cap("probe-gil.log")
    rs = []
    rs.append(result("attrs", "attrs", "25.3.0", "compatible", ph=phases("cp313t--attrs"),
                     wheel={"installed": "wheel (pure)", "available": "pure",
                            "installed_file": "attrs-25.3.0-py3-none-any.whl"},
                     metadata={"summary": "Classes Without Boilerplate",
                               "project_urls": {"Homepage": "https://www.attrs.org/",
                                                "Source": "https://github.com/python-attrs/attrs"}},
                     # what harness.testsetup.infer read from attrs 26.1.0's sdist (tests/data/infer/)
                     test_setup={"tests": "tests", "tests_from": "inferred",
                                 "requires": ["cloudpickle; platform_python_implementation == \"CPython\"",
                                              "hypothesis", "pympler"],
                                 "requires_from": "inferred", "pytest_args": [],
                                 "pytest_args_from": "inferred",
                                 "sources": ["tests dir: tests/",
                                             "test deps from [dependency-groups] tests"]},
                     t=0))
    rs.append(result(
        "msgpack", "msgpack", "1.0.5", "gil-reenabled", ph=phases("cp313t--msgpack",
                                                                  gil_modules=("msgpack._cmsgpack",)),
        findings=(Finding(kind="gil-reenabled", module="msgpack._cmsgpack", evidence="warning",
                          excerpt=gil.replace("_speedups", "msgpack._cmsgpack"), modes=(0,),
                          message="GIL re-enabled by `msgpack._cmsgpack`", phase="probe"),),
        wheel={"installed": "built from sdist", "installed_file": "msgpack-1.0.5.tar.gz",
               "available": "gil-only"},
        links=("https://github.com/msgpack/msgpack-python/issues/613",),
        notes="Fixed upstream in 1.1.0 (declares Py_mod_gil).", t=1))
    rs.append(result(
        "fx-ft-crash", "fx-ft-crash", "0.1", "ft-crash", source="local",
        ph=phases("cp313t--fx-ft-crash", signal={"plain-gil0": 11},
                  counts={"plain-gil0": {"passed": 4, "crashed": 1}}),
        findings=(Finding(kind="ft-crash", test_id="tests/test_grow.py::test_concurrent_append",
                          modes=(0,), count=1, runs=1, evidence="signal", signal=11,
                          stack_top="grow_append (fx_ft_crash/_grow.c:41)",
                          excerpt=crash_x, message="SIGSEGV with the GIL off only",
                          phase="plain-gil0", confirmed={"gil0": "12/16", "gil1": "0/16"}),), t=2))
    rs.append(result(
        "fx-crash", "fx-crash", "0.1", "crash", source="local",
        ph=phases("cp313t--fx-crash", signal={"plain-gil0": 11, "plain-gil1": 11}),
        findings=(Finding(kind="crash", test_id="tests/test_demo.py::test_crash", modes=(0, 1),
                          count=2, runs=2, evidence="signal", signal=11, excerpt=crash_x,
                          stack_top="string_at (ctypes/__init__.py:538)",
                          message="Segmentation fault in both GIL modes",
                          phase="plain-gil0", confirmed={"gil0": "1/1", "gil1": "1/1"}),), t=3))
    rs.append(result(
        "fx-race", "fx-race", "0.1", "ft-race", source="local",
        ph=phases("cp313t--fx-race", fail={"threads-gil0-r1": 1, "threads-gil0-r3": 1},
                  counts={"threads-gil0-r1": {"passed": 9, "failed": 1},
                          "threads-gil0-r3": {"passed": 9, "failed": 1}}),
        findings=(Finding(kind="ft-race", test_id="tests/test_buf.py::test_shared_buffer",
                          modes=(0,), count=2, runs=3, evidence="junit",
                          excerpt="PARALLEL FAILED tests/test_buf.py::test_shared_buffer\n"
                                  "AssertionError: assert b'abcd' == b'abab'",
                          message="fails in threaded runs with the GIL off only (2/3)",
                          phase="threads-gil0-r1", confirmed={"gil0": "14/16", "gil1": "0/16"},
                          by_mode={"gil0": "2/3", "gil1": "0/3"}),), t=4))
    rs.append(result(
        "fx-thread-unsafe", "fx-thread-unsafe", "0.1", "thread-unsafe", source="local",
        ph=phases("cp313t--fx-thread-unsafe", fail={f"threads-gil{m}-r{k}": 1
                                                     for m in (0, 1) for k in (1, 2, 3)}),
        findings=(Finding(kind="thread-unsafe", test_id="tests/test_state.py::test_global_counter",
                          modes=(0, 1), count=6, runs=6, evidence="junit",
                          excerpt="PARALLEL FAILED tests/test_state.py::test_global_counter",
                          message="fails in threaded runs in both GIL modes",
                          phase="threads-gil0-r1", confirmed={"gil0": "1/1", "gil1": "1/1"},
                          by_mode={"gil0": "3/3", "gil1": "3/3"}),), t=5))
    rs.append(result(
        "fx-hang", "fx-hang", "0.1", "hang", source="local",
        ph=phases("cp313t--fx-hang", fail={"plain-gil0": 1, "plain-gil1": 1},
                  counts={"plain-gil0": {"passed": 4, "timeout": 1},
                          "plain-gil1": {"passed": 4, "timeout": 1}}),
        findings=(Finding(kind="hang", test_id="tests/test_demo.py::test_hang", modes=(0, 1),
                          count=2, runs=2, evidence="timeout", excerpt=hang_x,
                          message="timed out after 120 s (pytest-timeout)",
                          phase="plain-gil0", confirmed={"gil0": "1/1", "gil1": "1/1"}),), t=6))
    rs.append(result(
        "fx-baseline", "fx-baseline", "0.1", "baseline-failure", source="local",
        ph=phases("cp313t--fx-baseline", fail={n: 1 for n in (
            "plain-gil0", "plain-gil1", "threads-gil0-r1", "threads-gil0-r2", "threads-gil0-r3",
            "threads-gil1-r1", "threads-gil1-r2", "threads-gil1-r3")},
                  counts={"*": {"passed": 9, "failed": 1}}),
        findings=(Finding(kind="baseline-failure", test_id="tests/test_demo.py::test_plain_bug",
                          modes=(0, 1), count=2, runs=2, evidence="junit", excerpt=bug_x,
                          message="AssertionError: assert 'freethreaded' == 'free threaded'",
                          phase="plain-gil1"),), t=7))
    rs.append(result(
        "fx-all-unsafe", "fx-all-unsafe", "0.1", "compatible", source="local",
        ph=phases("cp313t--fx-all-unsafe"),
        qualifier="low thread coverage: 0/8 tests in threads",
        coverage={f"gil{m}": cov(m, in_threads=0, total=8, single=8, reasons={
            f"tests/test_all.py::test_{i}": "marked thread_unsafe" for i in range(8)})
            for m in (0, 1)},
        findings=(Finding(kind="no-thread-coverage", modes=(0, 1), evidence="log",
                          excerpt="Collected 0 items to run in parallel",
                          message="no test ran in parallel threads (8 marked thread_unsafe)",
                          phase="threads-gil0-r1"),), t=8))
    rs.append(result(
        "fx-refuses-ft", "fx-refuses-ft", "0.1", "build-failure", source="local",
        ph=(Phase(name="install", kind="install", command=(PY, "-m", "pip", "install", "."),
                  exit_code=1, duration=3.2, log="work/cp313t--fx-refuses-ft/logs/install.log"),),
        findings=(Finding(kind="build-failure", evidence="compiler", excerpt=cc,
                          message="refuses_ft.c:3:2: error: #error \"refuses_ft does not support "
                                  "the free-threaded build (Py_GIL_DISABLED)\"",
                          phase="install"),),
        coverage={}, t=9))
    rs.append(result("fx-notests", "fx-notests", "0.1", "no-tests", source="local",
                     ph=phases("cp313t--fx-notests", tests_run=False), coverage={}, t=10))
    rs.append(result(
        "idna", "idna", "3.10", "infra-error",
        ph=(Phase(name="install", kind="install", command=(PY, "-m", "pip", "install", "idna==3.10"),
                  exit_code=None, timed_out=True, duration=600.0, infra="install timed out after 600 s",
                  log="work/cp313t--idna/logs/install.log"),),
        findings=(Finding(kind="infra-error", evidence="timeout", phase="install",
                          message="install timed out after 600 s (network?)"),),
        coverage={}, t=11))
    return rs + on_second(rs)


def on_second(rs: list[JobResult]) -> list[JobResult]:
    """Three of the jobs again on cp31315t: attrs and msgpack give the same verdicts, fx-race
    (ft-race on 3.13.5) is compatible there, the row whose cells differ."""
    by = {r.package: r for r in rs}
    out = []
    for name in ("attrs", "msgpack", "fx-race"):
        d = by[name].to_dict()
        job = d["job_id"].split("--", 1)[1]
        d.update(job_id=f"{INTERP2.name}--{job}", key=f"{d['key']}-{INTERP2.name}",
                 interpreter=INTERP2.to_dict())
        d["phases"] = [{**ph, "log": ph["log"].replace(f"/{INTERP.name}--", f"/{INTERP2.name}--"),
                        "junit": ph["junit"].replace(f"/{INTERP.name}--", f"/{INTERP2.name}--")}
                       for ph in d["phases"]]
        if name == "fx-race":
            d.update(verdict="compatible", findings=[])
        out.append(JobResult.from_dict(d))
    return out


def run0() -> list[JobResult]:
    """The previous run: fx-race was compatible, fx-hang was ft-race, idna compatible, an old
    package since removed, fx-notests and fx-all-unsafe not there yet."""
    by = {r.package: r for r in run1() if r.interpreter.name == INTERP.name}
    out = []
    for r in by.values():
        if r.package in ("fx-notests", "fx-all-unsafe"):
            continue
        d = r.to_dict()
        if r.package == "fx-race":
            d.update(verdict="compatible", findings=[])
        if r.package == "fx-hang":  # a race of another test then, confirmed alone
            f0 = d["findings"][0]
            d.update(verdict="ft-race", findings=[dict(
                f0, kind="ft-race", modes=[0], test_id="tests/test_demo.py::test_flaky",
                reproduce=f0["reproduce"].replace("test_hang", "test_flaky"),
                confirmed={"gil0": "9/16", "gil1": "0/16"})])
        if r.package == "idna":
            d.update(verdict="compatible", findings=[], version="3.9")
        if r.package == "fx-ft-crash":  # then it crashed alone with the GIL on too (5 runs a mode)
            d.update(verdict="crash", findings=[dict(d["findings"][0], kind="crash", modes=[0, 1],
                                                     confirmed={"gil0": "5/5", "gil1": "5/5"})])
        out.append(JobResult.from_dict(d))
    old = by["attrs"].to_dict()
    old.update(job_id="cp313t--simplejson", package="simplejson", version="3.19.3",
               key="k-simplejson")
    out.append(JobResult.from_dict(old))
    return out


XSS = "<script>alert(1)</script>"
XSS2 = "</pre><img src=x onerror=alert(1)>"


def hostile() -> JobResult:
    return result(
        "evil", "evil-pkg", "1.0", "ft-race", ph=phases("cp313t--evil"),
        findings=(
            Finding(kind="ft-race", test_id=f"tests/test_x.py::test_{XSS}", modes=(0,), count=1,
                    runs=3, evidence="junit", excerpt=f"boom {XSS2} {XSS}",
                    message=f"assert {XSS2}",
                    stack_top=XSS2, phase="threads-gil0-r1"),
            Finding(kind="no-thread-coverage", test_id=XSS2, excerpt=XSS, message=XSS),
        ),
        qualifier=XSS, notes=f"note {XSS} {XSS2}",
        links=("javascript:alert(1)", f"https://example.org/{XSS}"),
        metadata={"summary": XSS2, "project_urls": {"Home": "javascript:alert(1)",
                                                    XSS: "https://example.org/?q=<b>"}},
        wheel={"installed": XSS, "available": XSS2, "warning": XSS},
        coverage={"gil0": cov(0, in_threads=1, total=2, single=1, reasons={XSS: XSS2})}, t=0)


SETS = ("run1", "run0", "hostile", "corrupt")  # what main() writes, each a dir under its dest


def main(dest: Path = HERE) -> None:
    """Write the result sets under ``dest`` (by default, over the stored ones)."""
    for sub in SETS:
        shutil.rmtree(dest / sub, ignore_errors=True)
    for r in run1():
        write_json_atomic(dest / "run1" / "results" / f"{r.job_id}.json", r.to_dict())
        logs = dest / "run1" / "work" / r.job_id / "logs"
        logs.mkdir(parents=True)
        wanted = {f.phase for f in r.findings} | {"probe"}
        for ph in r.phases:
            if ph.name not in wanted:
                continue  # keep the test data small: logs of the phases findings cite
            src = {"plain-gil0": "plain-gil0.log", "plain-gil1": "plain-gil1.log",
                   "probe": "probe-gil.log", "install": "build-refuses.log"}.get(
                ph.name, "threads-gil0-r1.log")
            shutil.copyfile(CAP / src, dest / "run1" / ph.log)
    for r in run0():
        write_json_atomic(dest / "run0" / "results" / f"{r.job_id}.json", r.to_dict())
    h = hostile()
    write_json_atomic(dest / "hostile" / "results" / f"{h.job_id}.json", h.to_dict())
    c = dest / "corrupt" / "results"
    good = run1()[0]
    write_json_atomic(c / f"{good.job_id}.json", good.to_dict())
    text = (dest / "run1" / "results" / "cp313t--msgpack.json").read_text()
    (c / "truncated.json").write_text(text[: len(text) // 3])
    (c / "notjson.json").write_text("this is not json\n")
    wrong = run1()[1].to_dict()
    wrong["schema"] = 99
    write_json_atomic(c / "wrongschema.json", wrong)


if __name__ == "__main__":
    main()
