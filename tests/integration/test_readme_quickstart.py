"""The README's quick start, as a newcomer types it (#37): every shell command of its console
blocks that needs no network and builds nothing runs in a fresh venv holding the harness as a
user installs it, from a directory with nothing but the default matrix (and, for `report`, a
run's results), and exits 0.

A command that needs the network or builds interpreters is listed in NEEDS with the reason; a
command the README gains that is in neither list runs, so an offline command cannot go
untested and a new online one fails here until it is listed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import ROOT

RUN1 = ROOT / "tests" / "data" / "report" / "run1"

# prefixes of quick-start commands that are not run here, and why
NEEDS = {
    "pip install": "the package index",
    "nox": "the package index and interpreter builds (nox -s matrix / tests)",
    "ft-harness run": "the package index and an interpreter build",
    "ft-harness build": "an interpreter build",
    "ft-harness image": "a docker engine",
}


def quick_start_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```console\n(.*?)```", section, re.S)
    commands = []
    for block in blocks:
        for line in block.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()  # the comment after the command
            if line:
                commands.extend(c.strip() for c in line.split("&&"))
    return commands


def offline(command: str) -> bool:
    return not any(command == p or command.startswith(p + " ") for p in NEEDS)


def test_the_quick_start_has_commands_of_both_kinds() -> None:
    commands = quick_start_commands()
    assert "nox -s matrix" in commands and "nox -s tests" in commands, commands
    assert [c for c in commands if offline(c)], commands


@pytest.fixture(scope="module")
def venv(dist: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the harness installed from this checkout's wheel (the one `nox -s
    tests` built, else `python -m build`), offline: its dependencies are those of the running
    environment (a .pth file), never the index's."""
    root = tmp_path_factory.mktemp("quickstart") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=300)
    (site,) = (root / "lib").glob("python3*/site-packages")
    (site / "zz_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # --force-reinstall: under `nox -s tests` the .pth's environment already has ft-harness, and
    # pip would call it satisfied and write no console script into this venv
    r = subprocess.run(
        [
            str(root / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--force-reinstall",
            "--no-index",
            str(dist["wheel"]),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return root


@pytest.mark.slow  # a wheel (unless `nox -s tests` built it) and a venv: ~30 s idle, more loaded
@pytest.mark.parametrize("command", [c for c in quick_start_commands() if offline(c)])
def test_each_offline_quick_start_command_runs(venv: Path, tmp_path: Path, command: str) -> None:
    shutil.copy(ROOT / "matrix.yaml", tmp_path / "matrix.yaml")  # a clone's top level, as used
    shutil.copytree(RUN1 / "results", tmp_path / "out" / "results")  # what `run` would leave
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "FT_HARNESS_INSTALLED")
    }
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", CI="true", FT_HARNESS_CACHE=str(tmp_path / "cache")
    )
    r = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"{command}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    assert shutil.which("ft-harness", path=env["PATH"]) == str(venv / "bin" / "ft-harness")
    assert "Traceback" not in r.stderr
