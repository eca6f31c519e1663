"""The host's disk is bounded (#46, acceptance 4): a package whose tests flood their log, or
write files until the disk is full, is stopped at a named limit; the verdict names it; the run
goes on (ft_clean in the same run is tested as usual); what the job wrote is removed but its logs.

Real runs of the fixture ft_diskfill (tests/fixtures/packages) on the real free-threaded
interpreter, local backend (and docker with --docker), with the limits lowered by their
FT_HARNESS_LIMIT_* variables.  A sampler measures the out dir's disk use while the run goes:
its peak must stay under the stated bound (workspace_bytes plus what one interval of writing
adds: the watch looks every quarter second; file_bytes for any one file, the log included)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from harness.backends.base import disk_use
from tests.conftest import FIXTURES, INTERP_YAML, cli

from .conftest import DOCKER_OK, DOCKER_WHY

pytestmark = [pytest.mark.integration]

MIB = 1 << 20
SETTINGS = "settings: {threads: 2, iterations: 1, repeat: 1, confirm: 0, job_timeout: 600}\n"
WORKSPACE = 400 * MIB  # above a job's venv and source (~150 MiB here)
FILE = 32 * MIB
SLACK = 2048 * MIB  # what one watch interval (0.25 s) and the kill let through at this disk's speed,
#                     and the other job's workspace: on an idle machine ft_diskfill writes ~2 GB/s, and
#                     the docker job's peak was 1.7 GB (CI run of 2026-12-06, after the 0.25-s watch)


def _matrix(tmp: Path, what: str) -> Path:
    path = tmp / "matrix.yaml"
    path.write_text(
        INTERP_YAML + SETTINGS + "packages:\n"
        f"  - {{name: ft_diskfill, path: {FIXTURES / 'ft_diskfill'}, "
        f"env: {{FT_DISKFILL: {what}}}}}\n"
        f"  - {{name: ft_clean, path: {FIXTURES / 'ft_clean'}}}\n"
    )
    return path


class _Peak(threading.Thread):
    def __init__(self, root: Path) -> None:
        super().__init__(daemon=True)
        self.root, self.peak, self.done = root, 0, threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.2):
            self.peak = max(self.peak, disk_use(self.root) if self.root.exists() else 0)


@pytest.mark.parametrize(
    "backend",
    [
        "local",
        pytest.param(
            "docker",
            marks=[pytest.mark.docker, pytest.mark.skipif(not DOCKER_OK, reason=f"no docker engine: {DOCKER_WHY}")],
        ),
    ],
)
@pytest.mark.parametrize(("what", "limit"), [("log", "file_bytes"), ("files", "workspace_bytes")])
def test_a_package_filling_the_disk_is_stopped_at_a_named_limit(tmp_path, ft_interpreter, backend, what, limit):
    out = tmp_path / "out"
    peak = _Peak(out)
    peak.start()
    r = cli(
        "run",
        "--matrix",
        str(_matrix(tmp_path, what)),
        "--out",
        str(out),
        "--backend",
        backend,
        env={"FT_HARNESS_LIMIT_WORKSPACE_BYTES": str(WORKSPACE), "FT_HARNESS_LIMIT_FILE_BYTES": str(FILE)},
        timeout=1800,
    )
    peak.done.set()
    peak.join()
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    fill = json.loads((out / "results" / "cpython3.13t--ft_diskfill.json").read_text())
    clean = json.loads((out / "results" / "cpython3.13t--ft_clean.json").read_text())
    assert clean["verdict"] == "compatible"  # the run went on
    assert fill["verdict"] == "infra-error"
    message = fill["findings"][0]["message"]
    assert f"limit {limit} (" in message and f"FT_HARNESS_LIMIT_{limit.upper()} raises it" in message
    assert peak.peak < WORKSPACE + SLACK, (peak.peak, message)
    work = out / "work" / "cpython3.13t--ft_diskfill"
    assert sorted(p.name for p in work.iterdir()) == ["junit", "logs"]  # its files removed
    logs = sorted((work / "logs").iterdir())
    assert all(p.stat().st_size <= FILE for p in logs)
