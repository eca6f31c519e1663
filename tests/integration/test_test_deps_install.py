"""The inferred test dependencies installed together, else one at a time (harness.job.stages._deps_sh),
with a real venv and pip against the real package index; what did not install is recorded in a
file beside the log, which harness.parse.testdeps reads onto the phase."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.model import Phase
from harness.job.stages import _deps_sh
from harness.parse.testdeps import read_not_installed
from harness.verdict.setupfind import deps_finding

pytestmark = pytest.mark.network


def test_a_test_dep_that_cannot_install_leaves_the_others_installed(tmp_path: Path) -> None:
    # a real venv and pip against the real index: one requirement that no release satisfies
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "v")], check=True)
    vpy = str(tmp_path / "v" / "bin" / "python")
    (tmp_path / "logs").mkdir()
    r = subprocess.run(
        ["sh", "-c", _deps_sh(vpy, ["six", "idna>=999"], missing=str(tmp_path / "logs" / "test-deps.not-installed"))],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    assert subprocess.run([vpy, "-c", "import six"]).returncode == 0  # installed alone
    log = r.stdout + r.stderr
    assert "ft-harness: together they did not install; one at a time:" in log
    phase = Phase(name="test-deps", kind="setup", exit_code=1, log="logs/test-deps.log", excerpt=log[-4000:])
    f = deps_finding(dataclasses.replace(phase, setup=read_not_installed(phase, tmp_path)))
    assert f.kind == "setup-error" and f.evidence == "setup"
    assert f.message.startswith(
        "setup: the inferred test dependencies did not install: not installed: idna (the others are); "
    ), f.message


def test_a_test_dep_pinned_against_the_harness_tools_does_not_replace_them(tmp_path: Path) -> None:
    # itsdangerous 2.2.0's test requirements pin pluggy==1.4.0: installed after pytest 8.4.2, it
    # replaced pluggy and pytest no longer started. Asked for with the tools, it is not installed.
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "v")], check=True)
    vpy = str(tmp_path / "v" / "bin" / "python")
    subprocess.run([vpy, "-m", "pip", "install", "-q", "pytest==8.4.2"], check=True, timeout=600)
    (tmp_path / "logs").mkdir()
    r = subprocess.run(
        [
            "sh",
            "-c",
            _deps_sh(
                vpy,
                ["pluggy==1.4.0", "six"],
                ["pytest==8.4.2"],
                missing=str(tmp_path / "logs" / "test-deps.not-installed"),
            ),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    assert subprocess.run([vpy, "-m", "pytest", "--version"], capture_output=True).returncode == 0
    assert subprocess.run([vpy, "-c", "import six"]).returncode == 0
    phase = Phase(
        name="test-deps", kind="setup", exit_code=1, log="logs/test-deps.log", excerpt=(r.stdout + r.stderr)[-4000:]
    )
    f = deps_finding(dataclasses.replace(phase, setup=read_not_installed(phase, tmp_path)))
    assert f.message.startswith(
        "setup: the inferred test dependencies did not install: not installed: pluggy (the others are); "
    ), f.message
