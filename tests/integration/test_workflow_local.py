"""The weekly workflow as written, twice, with a hostile package (#46, acceptance 1).

``.github/workflows/matrix.yml`` runs through tools/run_workflow.py (its jobs and run: steps as
written; checkout, setup-python, artifacts, caches and Pages emulated on local folders) on a
matrix of two fixture packages served by an index on loopback: ft_noconfig (the victim) and
ft_plant, whose build and tests plant forged results -- the victim's and its own, with the
right job ids, keys and sdist sha256, verdicts never seen and a recipe that writes a host file
-- with manifests everywhere they reach in the workspace, logs/results/ included.  Week 1 runs
from nothing; week 2 restores week 1's cache and reuses.  Each week's published verdicts equal
a clean run's (ft_plant built without anything to plant), the report job lists the planted
files as refused, and week 2 reuses what week 1 ran, not what was planted.  Docker backend,
the real interpreter image (reused when built)."""

from __future__ import annotations

import hashlib
import http.server
import json
import shutil
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from harness.config import matrix, plan
from harness.core.model import read_result
from harness.interpreters import interpreters
from harness.verdict import decide
from tests.conftest import FIXTURES, ROOT

from .conftest import DOCKER

pytestmark = [*DOCKER, pytest.mark.network]

RUN0 = ROOT / "tests" / "data" / "report" / "run0" / "results"
SETTINGS = "settings: {threads: 2, iterations: 1, repeat: 1, confirm: 0, job_timeout: 900}\n"


def _sdist(name: str, out: Path, forged: dict | None = None) -> Path:
    src = out / "src" / name
    shutil.copytree(FIXTURES / name, src)
    if forged is not None:
        (src / "src" / name / "forged.json").write_text(json.dumps(forged))
    r = subprocess.run([sys.executable, "-m", "build", "-q", "--sdist", "--outdir", str(out), str(src)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    (sd,) = out.glob(f"{name}-*.tar.gz")
    return sd


class _Index(http.server.SimpleHTTPRequestHandler):
    files: dict[str, Path] = {}  # project -> sdist (swapped between runs)

    def do_GET(self) -> None:  # noqa: N802
        parts = self.path.strip("/").split("/")
        if parts[0] == "simple" and len(parts) == 2 and parts[1] in self.files:
            sd = self.files[parts[1]]
            digest = hashlib.sha256(sd.read_bytes()).hexdigest()
            url = f"/files/{parts[1]}/{sd.name}"
            if "application/vnd.pypi.simple.v1+json" in self.headers.get("Accept", ""):
                ctype, body = "application/vnd.pypi.simple.v1+json", json.dumps(
                    {"meta": {"api-version": "1.1"}, "name": parts[1],
                     "files": [{"filename": sd.name, "url": url, "hashes": {"sha256": digest}}]})
            else:
                ctype, body = "text/html", f'<a href="{url}#sha256={digest}">{sd.name}</a>'
            data = body.encode()
        elif parts[0] == "files" and len(parts) == 3 and parts[1] in self.files:
            ctype, data = "application/octet-stream", self.files[parts[1]].read_bytes()
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a: object) -> None:
        pass


def _forged(spec: matrix.MatrixSpec, interp_key: str, victim_sha: str, marker: Path) -> dict:
    """What a package can know from the last published report.json: each job's id and key, the
    sdist's sha256 (the index says it): results that would pass every check but where they lie."""
    jobs = {j.package.name: j for j in plan.make_plan(spec)}
    from tests.unit.test_verdict import S
    from tests.unit.test_verdict import load as load_phases

    phases = tuple(load_phases("confirm-realloc"))
    d = decide(phases, settings=S)
    template = read_result(RUN0 / "cp313t--attrs.json")
    recipe = f"python3.13t -m venv ft\ntouch {marker}"
    out = {}
    for name, verdict in (("ft_noconfig", d.verdict), ("ft_plant", "compatible")):
        job = jobs[name]
        res = replace(template, job_id=job.job_id, key=job.key(interp_key), package=name, version="1.0.0",
                      interpreter=replace(template.interpreter, name="cpython3.13t", key=interp_key),
                      sdist_sha256=victim_sha if name == "ft_noconfig" else "0" * 64,
                      phases=phases if name == "ft_noconfig" else (), verdict=verdict,
                      findings=tuple(replace(f, recipe=recipe) for f in d.findings) if name == "ft_noconfig" else (),
                      finished="2099-01-01T00:00:00Z")
        out[f"{job.job_id}.json"] = res.to_dict()
    return {"results": out, "recipe": f"#!/bin/sh\ntouch {marker}\n"}


def _week(state: Path, run_id: str, m: Path, index: str) -> dict:
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "run_workflow.py"), "--state", str(state),
                        "--run-id", run_id, "--input", f"matrix={m}", "--input", "shards=2",
                        "--env", f"FT_HARNESS_INDEX_URL={index}"],
                       capture_output=True, text=True, timeout=5400)
    summary = json.loads((state / "runs" / run_id / "summary.json").read_text())
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    report = json.loads((state / "artifacts" / run_id / "report" / "report.json").read_text())
    merge = next(s for s in summary["steps"] if s.get("job") == "report" and s.get("name") == "Merge the shards")
    shard_logs = [Path(s["log"]).read_text() for s in summary["steps"]
                  if str(s.get("job", "")).startswith("run-") and s.get("name") == "Run the shard"]
    return {"verdicts": {p["job_id"]: p["verdict"] for p in report["packages"]},
            "reused": {p["job_id"]: p["reused_from"] for p in report["packages"]},
            "merge_log": Path(merge["log"]).read_text(), "shard_logs": "\n".join(shard_logs)}


def test_two_weekly_runs_of_the_workflow_with_a_hostile_package(tmp_path: Path) -> None:
    tarball = Path.home() / ".cache" / "ft-harness" / "apt" / "trixie" / "download" / "python3.13_3.13.5.orig.tar.xz"
    if not tarball.is_file():
        pytest.skip(f"no CPython 3.13.5 source at {tarball} (ft-harness build fetches it)")
    m = tmp_path / "matrix.yaml"  # the source as a tarball: the same key, the same image
    m.write_text(f'interpreters: [{{name: cpython3.13t, version: "3.13.5", source: "tarball:{tarball}"}}]\n'
                 + SETTINGS + "packages:\n"
                 '  - {name: ft_noconfig, version: "==1.0.0"}\n  - {name: ft_plant, version: "==1.0.0"}\n')
    spec = matrix.load(str(m))
    interp_key = interpreters.build_key(spec.interpreters[0], tarball)
    victim = _sdist("ft_noconfig", tmp_path / "victim")
    marker = tmp_path / "written-by-a-planted-recipe"
    hostile = _sdist("ft_plant", tmp_path / "hostile", _forged(
        spec, interp_key, hashlib.sha256(victim.read_bytes()).hexdigest(), marker))
    clean = _sdist("ft_plant", tmp_path / "clean")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    index = f"http://127.0.0.1:{server.server_port}/simple/"
    try:
        _Index.files = {"ft-noconfig": victim, "ft-plant": clean}
        baseline = _week(tmp_path / "clean-state", "1", m, index)
        _Index.files = {"ft-noconfig": victim, "ft-plant": hostile}
        state = tmp_path / "state"
        week1 = _week(state, "1", m, index)
        week2 = _week(state, "2", m, index)
    finally:
        server.shutdown()
    assert baseline["verdicts"] == {"cpython3.13t--ft_noconfig": "compatible",
                                    "cpython3.13t--ft_plant": "compatible"}
    assert week1["verdicts"] == baseline["verdicts"] == week2["verdicts"]
    planted = [p for p in (state / "artifacts" / "1").glob("shard-*/work/cpython3.13t--ft_plant/logs/planted.txt")]
    assert planted and "logs/results/cpython3.13t--ft_noconfig.json" in planted[0].read_text()
    for where in ("work/cpython3.13t--ft_plant/logs/results/cpython3.13t--ft_noconfig.json",
                  "work/cpython3.13t--ft_plant/logs/manifest.json",
                  "work/cpython3.13t--ft_plant/junit/results/cpython3.13t--ft_noconfig.json"):
        assert f"{where}: refused: not at DIR/results/*.json" in week1["merge_log"], where
    assert week1["reused"] == {"cpython3.13t--ft_noconfig": "", "cpython3.13t--ft_plant": ""}
    assert set(week2["reused"].values()) == {"previous-results"}  # both from week 1's kept results
    cached = json.loads(next((state / "caches").glob("ft-results-1/next-results/manifest.json")).read_text())
    assert sorted(cached["results"]) == ["cpython3.13t--ft_noconfig", "cpython3.13t--ft_plant"]
    assert not marker.exists()
