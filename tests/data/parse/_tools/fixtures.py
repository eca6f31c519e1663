# ruff: noqa: E401, E402, BLE001, I001
"""Run H2's fixture packages through install + probe + COMMON.md phases (+ collect), then decide."""
import json, os, shutil, subprocess, sys
from pathlib import Path
sys.path.insert(0, "/work/main")
sys.path.insert(0, "/work/main/tests/data/parse/_tools")
import capture
from harness.core.model import Phase
from harness.parse import parse_phase
from harness.verdict import decide
from harness.config.matrix import Settings

FX = Path("/work/main/tests/fixtures/packages")
OUT = Path("/tmp/h1/fx")
capture.DATA = OUT
PIP = "/tmp/h1/venv/bin/pip"
PROBE = "/work/main/harness/_inner/probe.py"
reps = int(os.environ.get("REPS", "3"))
names = sys.argv[1:] or sorted(p.name for p in FX.iterdir() if p.is_dir())
for name in names:
    out = OUT / name
    shutil.rmtree(out, ignore_errors=True)
    (out / "logs").mkdir(parents=True)
    (out / "phases").mkdir()
    src = FX / name
    cmd = [PIP, "install", "--no-deps", "--force-reinstall", str(src)]
    with open(out / "logs/install.log", "wb") as f:
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT)
    phases = [Phase(name="install", kind="install", command=tuple(cmd), cwd=str(src), exit_code=rc,
                    log="logs/install.log")]
    if rc == 0:
        env = {k: v for k, v in os.environ.items() if k != "PYTHON_GIL"}
        pc = ["/tmp/h1/venv/bin/python", "-W", "default", PROBE, name, str(out / "logs/probe.json")]
        with open(out / "logs/probe.log", "wb") as f:
            prc = subprocess.call(pc, stdout=f, stderr=subprocess.STDOUT, env=env, cwd="/tmp")
        phases.append(Phase(name="probe", kind="probe", command=tuple(pc), cwd="/tmp", exit_code=prc,
                            log="logs/probe.log"))
        if (src / "tests").is_dir():
            capture.standard(name, str(src), reps=reps, T=20, job_timeout=240)
            for pj in sorted((out / "phases").glob("*.json")):
                phases.append(Phase.from_dict(json.loads(pj.read_text())))
    phases = [parse_phase(p, out) for p in phases]
    d = decide(phases, settings=Settings(repeat=reps))  # the probe: logs/probe.json, on its phase
    print(f"### {name}: {d.verdict} {('(' + d.qualifier + ')') if d.qualifier else ''}", flush=True)
    for f in d.findings:
        print(f"    {f.kind} {f.test_id} modes={f.modes} {f.ratio} sig={f.signal} mod={f.module} | {f.message[:100]}")
    print("    coverage", {k: (v["in_threads"], v["total"]) for k, v in d.coverage.items()}, flush=True)
    subprocess.call([PIP, "uninstall", "-y", "-q", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
