"""Shared fixtures: the real free-threaded interpreter (built once, cached) and a CLI runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "packages"
INTERP_YAML = 'interpreters: [{name: cpython3.13t, version: "3.13.5", source: "debian:trixie"}]\n'


def cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
        timeout: float = 3600) -> subprocess.CompletedProcess:
    """Run the real CLI in a subprocess, as a user would."""
    full = {**os.environ, "PYTHONPATH": str(ROOT), "CI": "true", **(env or {})}
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=timeout, env=full)


@pytest.fixture(scope="session")
def ft_interpreter():
    """The real free-threaded CPython 3.13.5, built from Debian trixie's source (or the cache)."""
    from harness import interpreters, matrix

    spec = matrix.loads(INTERP_YAML + "packages: [{name: six}]\n")
    return interpreters.ensure_built(spec.interpreters[0], interpreters.cache_root())


def fixture_matrix(tmp: Path, names: list[str], settings: str = "") -> Path:
    lines = [INTERP_YAML.rstrip(), settings.rstrip(), "packages:"]
    for n in names:
        lines.append(f"  - {{name: {n}, path: {FIXTURES / n}}}")
    path = tmp / "matrix.yaml"
    path.write_text("\n".join(x for x in lines if x) + "\n")
    return path


def results(out: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((out / "results").glob("*.json"))}
