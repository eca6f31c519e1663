"""tools/wheel-store: the Actions cache key of the wheel store is its entries (#43)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TOOL = ROOT / "tools" / "wheel-store"
SHA = "a" * 64


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TOOL), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )


def _store(root: Path) -> Path:
    d = root / "wheels" / "docker" / "cpython-3.13.5-ft-aa8650c37ad2"
    (d / SHA).mkdir(parents=True)
    (d / SHA / "numpy-2.5.5-cp313-cp313t-linux_x86_64.whl").write_bytes(b"w")
    (d / "tools" / ("b" * 64)).mkdir(parents=True)
    (d / "tools" / ("b" * 64) / "ft-harness-layer.json").write_text("{}")
    (d / "tools" / ("c" * 64)).mkdir()  # a layer still being built: no marker
    (d / ".scratch-x").mkdir()  # a build's scratch dir
    local = root / "wheels" / "local" / "cpython-3.13.5-ft-aa8650c37ad2" / ("d" * 64)  # a local run's (#46)
    local.mkdir(parents=True)
    (local / "six-1.0-py3-none-any.whl").write_bytes(b"l")
    return root / "wheels" / "docker"


def test_the_key_is_the_entries_and_changes_only_when_one_is_added(tmp_path: Path) -> None:
    store = _store(tmp_path)
    listed = _run("list", str(store))
    assert listed.returncode == 0
    assert listed.stdout.split() == [
        f"cpython-3.13.5-ft-aa8650c37ad2/{SHA}/numpy-2.5.5-cp313-cp313t-linux_x86_64.whl",
        f"cpython-3.13.5-ft-aa8650c37ad2/tools/{'b' * 64}",
    ]
    out = tmp_path / "gh-output"
    first = _run("key", str(store), env={"GITHUB_OUTPUT": str(out)})
    key = first.stdout.split()[0]
    assert key.startswith("ft-wheels-docker-") and out.read_text() == f"key={key}\n"
    (store / "cpython-3.13.5-ft-aa8650c37ad2" / "tools" / ("c" * 64) / "ft-harness-layer.json").write_text("{}")
    assert _run("key", str(store)).stdout.split()[0] != key
    # the docker store below FT_HARNESS_CACHE, as the workflow's steps find it: never the local one
    env = {"FT_HARNESS_CACHE": str(tmp_path), "FT_HARNESS_WHEEL_STORE": ""}
    assert _run("list", env=env).stdout.count("\n") == 3 and "six" not in _run("list", env=env).stdout
    assert _run("list", "--backend", "local", env=env).stdout.split() == [
        f"cpython-3.13.5-ft-aa8650c37ad2/{'d' * 64}/six-1.0-py3-none-any.whl"
    ]


def test_an_empty_or_missing_store_has_a_key_too(tmp_path: Path) -> None:
    r = _run("key", str(tmp_path / "none"))
    assert r.returncode == 0 and r.stdout.startswith("ft-wheels-") and "(0 entries" in r.stdout
