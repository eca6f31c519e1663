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
# `nox -s tests` installs the wheel it built (not editable) and sets FT_HARNESS_INSTALLED=1: then
# harness, in the tests and in every CLI they start, must be that installed copy.
INSTALLED = os.environ.get("FT_HARNESS_INSTALLED") == "1"
# How tests start the CLI: -P keeps the cwd (often the checkout) off sys.path; SOURCE_PATH puts the
# checkout on it, except when testing the installed copy.
HARNESS = (sys.executable, "-P", "-m", "harness")
SOURCE_PATH: dict[str, str] = {} if INSTALLED else {"PYTHONPATH": str(ROOT)}


def pytest_sessionstart(session: pytest.Session) -> None:
    import harness

    if INSTALLED and Path(harness.__file__).resolve().is_relative_to(ROOT / "harness"):
        raise pytest.UsageError(f"FT_HARNESS_INSTALLED=1 but harness was imported from the checkout "
                                f"({harness.__file__}); run pytest with --import-mode=append")


def cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
        timeout: float = 3600) -> subprocess.CompletedProcess:
    """Run the real CLI in a subprocess, as a user would."""
    full = {**os.environ, **SOURCE_PATH, "CI": "true", **(env or {})}
    return subprocess.run([*HARNESS, *args], cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=timeout, env=full)


@pytest.fixture(scope="session")
def dist(tmp_path_factory) -> dict[str, Path]:
    """The sdist and the wheel of this tree: the ones `nox -s tests` built, else `python -m build`."""
    if os.environ.get("FT_HARNESS_WHEEL"):
        return {"wheel": Path(os.environ["FT_HARNESS_WHEEL"]).resolve(),
                "sdist": Path(os.environ["FT_HARNESS_SDIST"]).resolve()}
    pytest.importorskip("build", reason="building the wheel needs `build` (the test extra)")
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (wheel,), (sdist,) = out.glob("*.whl"), out.glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


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


def run_fixture(tmp: Path, name: str, settings: str) -> dict:
    """``ft-harness run`` (local backend) of one fixture package into ``tmp/out``: its result."""
    m = fixture_matrix(tmp, [name], settings)
    r = cli("run", "--matrix", str(m), "--out", str(tmp / "out"), "--backend", "local")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (d,) = results(tmp / "out").values()
    return d
