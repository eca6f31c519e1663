"""Run one phase of a real harness run again, without pytest-xdist, and store it as a test case.

    python tests/data/parse/_tools/rerun_phase.py OUT/results/<job>.json PHASE tests/data/parse/<case>

The phase's own command, env and cwd (its workspace must still be there), with ``-n auto``
dropped; the log starts with the harness's own three header lines. For what only a run without
workers shows (the process itself ended by faulthandler, no JUnit file).
"""
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path


def main(result: str, name: str, case: str) -> None:
    d = json.loads(Path(result).read_text())
    p = next(x for x in d["phases"] if x["name"] == name)
    argv = [a for i, a in enumerate(p["command"])
            if not (a == "-n" or (i and p["command"][i - 1] == "-n"))]
    dest = Path(case)
    for sub in ("phases", "logs", "junit"):
        (dest / sub).mkdir(parents=True, exist_ok=True)
    log = dest / "logs" / f"{name}.log"
    junit = Path(next(a for a in argv if a.startswith("--junitxml="))[len("--junitxml="):])
    junit.unlink(missing_ok=True)  # the first run's
    with open(log, "w") as f:
        f.write(f"$ {shlex.join(argv)}\n# cwd: {p['cwd']}\n# env: {json.dumps(p['env'], sort_keys=True)}\n")
        f.flush()
        t0 = time.monotonic()
        rc = subprocess.run(argv, cwd=p["cwd"], env=p["env"], stdout=f, stderr=subprocess.STDOUT,
                            timeout=600).returncode
    p.update(command=argv, exit_code=rc if rc >= 0 else None, signal=-rc if rc < 0 else None,
             timed_out=False, duration=round(time.monotonic() - t0, 3), log=f"logs/{name}.log", junit="")
    p["test_command"]["this_run"] = [a for a in p["test_command"]["this_run"] if a not in ("-n", "auto")]
    if junit.exists():
        (dest / "junit" / f"{name}.xml").write_bytes(junit.read_bytes())
        p["junit"] = f"junit/{name}.xml"
    for k in ("tests", "counts", "crash", "crashes", "hang", "gil_modules", "parallel", "tsan", "excerpt", "setup"):
        p.pop(k, None)
    (dest / "phases" / f"{name}.json").write_text(json.dumps(p, indent=1) + "\n")
    with open(dest / "CMD", "a") as f:
        f.write(f"# {name} again without pytest-xdist: exit={p['exit_code']} signal={p['signal']} "
                f"duration={p['duration']}s\ncd {p['cwd']} && {shlex.join(argv)}\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
