# ruff: noqa: E701, E741
"""Run the COMMON.md phase commands on a suite and store real output as test data."""
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

VENV = Path("/tmp/h1/venv")
DATA = Path("/work/main/tests/data/parse")


def cmd_for(kind, name, gil, *, xdist=True, T=10, N=4, I=5, tests="tests", extra=()):
    py = str(VENV / "bin/python")
    c = [py, "-P", "-m", "pytest", "-p", "no:cacheprovider"]
    if xdist:
        c += ["-n", "auto"]
    if kind == "threads":
        c += [f"--parallel-threads={N}", f"--iterations={I}"]
    c += [f"--timeout={T}", "-rfE", "-v", f"--junitxml=junit/{name}.xml", *extra, tests]
    return c


def run(case, suite, name, kind, gil, cmd, *, job_timeout=120, rep=0):
    out = DATA / case
    (out / "logs").mkdir(parents=True, exist_ok=True)
    (out / "junit").mkdir(parents=True, exist_ok=True)
    junit_abs = out / "junit" / f"{name}.xml"
    cmd = [a.replace(f"--junitxml=junit/{name}.xml", f"--junitxml={junit_abs}") for a in cmd]
    env_set = {} if gil is None else {"PYTHON_GIL": str(gil), "PYTHONFAULTHANDLER": "1"}
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHON_GIL",)}
    env.update(env_set)
    t0 = time.monotonic()
    timed_out = False
    with open(out / "logs" / f"{name}.log", "wb") as log:
        p = subprocess.Popen(cmd, cwd=suite, env=env, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
        try:
            rc = p.wait(timeout=job_timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(p.pid, signal.SIGKILL)
            rc = p.wait()
    dur = time.monotonic() - t0
    shown = [a.replace(str(junit_abs), f"junit/{name}.xml") for a in cmd]
    phase = {
        "name": name, "kind": kind, "gil": gil, "rep": rep, "command": shown, "env": env_set,
        "cwd": str(suite),
        "exit_code": None if timed_out else rc,
        "signal": -rc if (rc < 0 and not timed_out) else (signal.SIGKILL if timed_out else None),
        "timed_out": timed_out, "duration": round(dur, 2),
        "log": f"logs/{name}.log", "junit": f"junit/{name}.xml" if junit_abs.exists() else "",
        "infra": "",
    }
    (out / "phases").mkdir(exist_ok=True)
    (out / "phases" / f"{name}.json").write_text(json.dumps(phase, indent=1) + "\n")
    with open(out / "CMD", "a") as f:
        envs = " ".join(f"{k}={v}" for k, v in env_set.items())
        f.write(f"# {name}: exit={phase['exit_code']} signal={phase['signal']} "
                f"timed_out={timed_out} duration={phase['duration']}s\n")
        f.write(f"cd {suite} && {envs} {shlex.join(shown)}\n")
    print(case, name, phase["exit_code"], phase["signal"], timed_out, f"{dur:.1f}s", flush=True)


def standard(case, suite, *, reps=2, xdist=True, T=10, job_timeout=120, extra=(), modes=(0, 1),
             collect=True):
    for m in modes:
        if collect:
            n = f"collect-gil{m}"
            c = cmd_for("threads", n, m, xdist=xdist, T=T, extra=extra)
            c = [a for a in c if not a.startswith("--junitxml")]
            c.insert(c.index("-v") + 1, "--collect-only")
            run(case, suite, n, "collect", m, c, job_timeout=job_timeout)
        n = f"plain-gil{m}"
        run(case, suite, n, "plain", m, cmd_for("plain", n, m, xdist=xdist, T=T, extra=extra),
            job_timeout=job_timeout)
        for r in range(1, reps + 1):
            n = f"threads-gil{m}-r{r}"
            run(case, suite, n, "threads", m,
                cmd_for("threads", n, m, xdist=xdist, T=T, extra=extra),
                job_timeout=job_timeout, rep=r)


if __name__ == "__main__":
    case, suite = sys.argv[1], sys.argv[2]
    xdist = "--no-xdist" not in sys.argv
    reps = 2
    extra = []
    T = 10
    jt = 120
    for a in sys.argv[3:]:
        if a.startswith("--reps="): reps = int(a.split("=")[1])
        if a.startswith("--T="): T = int(a.split("=")[1])
        if a.startswith("--jt="): jt = int(a.split("=")[1])
        if a.startswith("--extra="): extra.append(a.split("=", 1)[1])
    standard(case, suite, reps=reps, xdist=xdist, T=T, job_timeout=jt, extra=extra)


def default_mode(case, suite, T=10):
    """PYTHON_GIL unset (the interpreter's default): where GIL warnings show up in test runs."""
    for kind in ("plain", "threads"):
        n = f"{kind}-default"
        run(case, suite, n, kind, None, cmd_for(kind, n, None, T=T))
