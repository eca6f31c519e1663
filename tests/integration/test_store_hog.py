"""A store hog (#56, acceptance 3): packages whose dependencies make the store step slow or big
cost only the store's stated limits, and the other packages' entries survive.

A package index on the loopback interface (PEP 691 pages and the files) serves sdists of our
own; the store step (`ft-harness store`, local backend, the real interpreter) plans four local
packages in this order:

- ft_hogsleep: its dependency's metadata hook sleeps (an hour): the dry run is stopped at
  ``store_seconds_per_job``;
- ft_hogslow: six dependencies whose builds sleep 6 s each (and their metadata takes its time):
  a build is stopped at what is left of ``store_seconds_per_job``, and the rest are not started
  (how many are built before depends on the machine's load; never all six);
- ft_hogbig: three dependencies of 1.5 MB wheels: one is stored, the second would pass
  ``store_bytes_per_job``;
- ft_ok: one small dependency, stored the week before.

The step ends within ``store_seconds_per_run``; ft_ok's entry and the tools layer are still in
the store (``store_bytes`` leaves room for them only while no hog passes its own bytes); the
step's record and each hog's plan log name the limit; and a later `run` of ft_hogslow names it
in its result (``store.limits``).
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import time
from pathlib import Path

import pytest

from harness.store import storecap, wheelstore
from tests.conftest import INTERP_YAML, cli
from tests.unit.store.loopindex import LoopIndex

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PER_JOB, PER_RUN = 20, 120
SETTINGS = "settings: {threads: 2, iterations: 1, repeat: 1, confirm: 0, gil_modes: [0], test_timeout: 60}\n"


def _sdist(name: str, setup: str, files: dict[str, bytes] | None = None) -> bytes:
    base = f"{name}-1.0"
    members = {
        f"{base}/setup.py": setup.encode(),
        f"{base}/PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode(),
        f"{base}/{name}/__init__.py": b"VALUE = 1\n",
        **{f"{base}/{name}/{k}": v for k, v in (files or {}).items()},
    }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path, data in members.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o644, 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _setup(name: str, *, prelude: str = "", data: bool = False) -> str:
    extra = f", package_data={{'{name}': ['blob.bin']}}" if data else ""
    return f"import sys, time\n{prelude}\nfrom setuptools import setup\nsetup(name='{name}', version='1.0', packages=['{name}']{extra})\n"


SLEEP_IN_METADATA = "if any(a in sys.argv for a in ('egg_info', 'dist_info')): time.sleep(3600)"
SLOW_BUILD = "if 'bdist_wheel' in sys.argv: time.sleep(6)"


def _files() -> dict[str, bytes]:
    out = {"sleepdep": _sdist("sleepdep", _setup("sleepdep", prelude=SLEEP_IN_METADATA))}
    for i in range(6):
        out[f"slowdep{i}"] = _sdist(f"slowdep{i}", _setup(f"slowdep{i}", prelude=SLOW_BUILD))
    for i in range(3):
        out[f"bigdep{i}"] = _sdist(f"bigdep{i}", _setup(f"bigdep{i}", data=True), {"blob.bin": os.urandom(1_500_000)})
    out["okdep"] = _sdist("okdep", _setup("okdep"))
    return out


def _package(root: Path, name: str, deps: list[str]) -> Path:
    pkg = root / name
    (pkg / "src" / name).mkdir(parents=True)
    (pkg / "tests").mkdir()
    (pkg / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=74"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{name}"\nversion = "1.0.0"\nrequires-python = ">=3.13"\n'
        f"dependencies = {json.dumps(deps)}\n\n"
        '[tool.setuptools.packages.find]\nwhere = ["src"]\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
    )
    (pkg / "src" / name / "__init__.py").write_text("VALUE = 1\n")
    (pkg / "tests" / "test_value.py").write_text(
        f"import {name}\n\n\ndef test_value():\n    assert {name}.VALUE == 1\n"
    )
    return pkg


def _matrix(path: Path, pkgs: list[Path]) -> Path:
    path.write_text(
        INTERP_YAML + SETTINGS + "packages:\n" + "".join(f"  - {{name: {p.name}, path: {p}}}\n" for p in pkgs)
    )
    return path


def test_a_store_hog_costs_only_the_store_s_limits(tmp_path: Path, ft_interpreter) -> None:
    index = LoopIndex()
    for name, data in _files().items():
        index.serve(name, f"{name}-1.0.tar.gz", data)
    src = tmp_path / "src"
    hogsleep = _package(src, "ft_hogsleep", ["sleepdep"])
    hogslow = _package(src, "ft_hogslow", [f"slowdep{i}" for i in range(6)])
    hogbig = _package(src, "ft_hogbig", [f"bigdep{i}" for i in range(3)])
    ok = _package(src, "ft_ok", ["okdep"])
    store = tmp_path / "wheels"
    env = {"FT_HARNESS_INDEX_URL": index.url, "FT_HARNESS_WHEEL_STORE": str(store)}
    try:
        # the week before: ft_ok's dependency and the tools layer, stored and then not used for a week
        first = cli("store", "--matrix", str(_matrix(tmp_path / "ok.yaml", [ok])), "--out", str(tmp_path / "o1"),
                    "--backend", "local", env=env, timeout=900)  # fmt: skip
        assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
        before = {e.rel: e.size for e in storecap.entries(store / "local")}
        assert len(before) == 2, before  # okdep's wheel and the tools layer
        week_ago = time.time() - 7 * 86400
        for rel in before:
            os.utime(store / "local" / rel, (week_ago, week_ago))
        limits = {
            "FT_HARNESS_LIMIT_STORE_SECONDS_PER_JOB": str(PER_JOB),
            "FT_HARNESS_LIMIT_STORE_SECONDS_PER_RUN": str(PER_RUN),
            "FT_HARNESS_LIMIT_STORE_BYTES_PER_JOB": str(2_000_000),
            # room for what is stored and one hog's own bytes, not for three 1.5 MB wheels
            "FT_HARNESS_LIMIT_STORE_BYTES": str(sum(before.values()) + 2_500_000),
        }
        m = _matrix(tmp_path / "hogs.yaml", [hogsleep, hogslow, hogbig, ok])
        started = time.monotonic()
        step = cli("store", "--matrix", str(m), "--out", str(tmp_path / "o2"), "--backend", "local",
                   env={**env, **limits}, timeout=1800)  # fmt: skip
        took = time.monotonic() - started
        assert step.returncode == 0, step.stdout[-3000:] + step.stderr[-3000:]
        # the step ended within the run's store seconds (plus what is not the store's: fetches, setup reads)
        assert took < PER_RUN + 60, took
        record = json.loads((tmp_path / "o2" / "store.json").read_text())
        said = "\n".join(record["limits"])
        assert f"cpython3.13t--ft_hogsleep: limit store_seconds_per_job ({PER_JOB}) exceeded" in said, said
        assert f"cpython3.13t--ft_hogslow: limit store_seconds_per_job ({PER_JOB}) exceeded" in said, said
        assert "cpython3.13t--ft_hogbig: limit store_bytes_per_job (2000000) exceeded" in said, said
        built = sorted(w["name"] for w in record["built"])
        assert built[:1] == ["bigdep0"] and "bigdep1" not in built and "bigdep2" not in built, built
        assert sum(n.startswith("slowdep") for n in built) < 6, built
        assert any(
            f.startswith("cpython3.13t--ft_hogslow: slowdep") and "store_seconds_per_job" in f
            for f in record["failed"] + record["refused"]
        )
        # the other packages' entries survive: nothing was evicted
        after = {e.rel for e in storecap.entries(store / "local")}
        assert set(before) <= after and record["evicted"] == [], (before, after, record["evicted"])
        logs = tmp_path / "o2" / "store" / "work"
        assert (
            "the dry run did not end, stopped at the"
            in (logs / "cpython3.13t--ft_hogsleep" / "logs" / "wheel-plan.log").read_text()
        )
        assert (
            "not stored: limit store_bytes_per_job"
            in (logs / "cpython3.13t--ft_hogbig" / "logs" / "wheel-plan.log").read_text()
        )
        # a run of the slow hog: its result names the limit it reached (the store's time, not its budget)
        run = cli("run", "--matrix", str(m), "--out", str(tmp_path / "o3"), "--backend", "local",
                  "--package", "ft_hogslow", env={**env, **limits}, timeout=1800)  # fmt: skip
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        res = json.loads((tmp_path / "o3" / "results" / "cpython3.13t--ft_hogslow.json").read_text())
        assert any(n.startswith(f"limit store_seconds_per_job ({PER_JOB}) exceeded") for n in res["store"]["limits"]), (
            res["store"]
        )
        assert wheelstore.KEY_RE.fullmatch(next(iter(before)).split("/")[0])
    finally:
        index.close()
