import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

DATA = Path("/work/main/tests/data/parse")
def run(case, cmd, cwd="/tmp/h1"):
    out = DATA / case
    (out / "logs").mkdir(parents=True, exist_ok=True)
    (out / "phases").mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with open(out / "logs/install.log", "wb") as log:
        rc = subprocess.call(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    d = round(time.monotonic() - t0, 2)
    phase = {"name": "install", "kind": "install", "gil": None, "rep": 0, "command": cmd, "env": {},
             "cwd": cwd, "exit_code": rc, "signal": None, "timed_out": False, "duration": d,
             "log": "logs/install.log", "junit": "", "infra": ""}
    (out / "phases/install.json").write_text(json.dumps(phase, indent=1) + "\n")
    (out / "CMD").write_text(f"# install: exit={rc} duration={d}s\ncd {cwd} && {shlex.join(cmd)}\n")
    print(case, rc, d)
pip = "/tmp/h1/venv/bin/pip"
which = sys.argv[1]
if which == "build":
    run("install-build-failure", [pip, "install", "/tmp/h1/pkgs/badbuild"])
elif which == "nomatch":
    run("install-no-match", [pip, "install", "pytest==0.0.0.1"])
elif which == "dns":
    run("install-dns", [pip, "install", "--isolated", "--retries", "1", "--timeout", "3", "--index-url", "https://pypi.invalid/simple", "six"])
