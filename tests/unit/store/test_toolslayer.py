"""The test tools' layer in the wheel store (harness.store.toolslayer, harness/_inner/venv_layer.py):
a layer built by its real build command, published read-only, seeding venvs whose files are their
own. Real venvs and pip (this interpreter's; the job's own is tests/integration/test_wheel_store.py)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from harness.store import toolslayer

KEY = "cpython-3.13.5-ft-aa8650c37ad2"
SEEDER = Path(toolslayer.__file__).parent.parent / "_inner" / "venv_layer.py"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real build's output (``pip``: already in the fresh venv, so it needs no network)."""
    out = tmp_path_factory.mktemp("build")
    subprocess.run(toolslayer.build_argv(sys.executable, str(out), ["pip"]), check=True, capture_output=True)
    return out


def _build(built: Path, store: Path) -> Path:
    """A scratch dir of the store holding what the build left (a copy of the one real build)."""
    out = toolslayer.scratch(store, KEY)
    shutil.copytree(built / "layer", out / "layer", symlinks=True)
    return out


def test_digest_is_per_interpreter_and_pins() -> None:
    d = toolslayer.digest(KEY, ["pytest==8.4.2"])
    assert d == toolslayer.digest(KEY, ["pytest==8.4.2"])
    assert d != toolslayer.digest(KEY, ["pytest==9.2.0"]) and d != toolslayer.digest("other", ["pytest==8.4.2"])
    with pytest.raises(ValueError):
        toolslayer.where("/s", "../x", d)


def test_a_layer_is_published_read_only_and_the_first_of_two_is_kept(tmp_path: Path, built: Path) -> None:
    store = tmp_path / "store"
    dig = toolslayer.digest(KEY, ["pip"])
    assert not toolslayer.ready(store, KEY, dig)
    first = _build(built, store)
    assert toolslayer.publish(first, store, KEY, dig) == ""
    layer = Path(toolslayer.where(store, KEY, dig))
    assert toolslayer.ready(store, KEY, dig)
    modes = [os.lstat(os.path.join(r, n)).st_mode for r, ds, fs in os.walk(layer) for n in ds + fs]
    assert modes and not any(m & 0o222 for m in modes if not stat.S_ISLNK(m))
    mark_before = (layer / toolslayer.MARK).stat().st_mtime_ns
    second = _build(built, store)
    assert toolslayer.publish(second, store, KEY, dig) == ""  # another job's got there first: kept
    assert (layer / toolslayer.MARK).stat().st_mtime_ns == mark_before
    toolslayer.remove(first)
    toolslayer.remove(second)
    assert not first.exists() and not second.exists()


def test_a_build_that_left_no_mark_is_not_published(tmp_path: Path) -> None:
    store = tmp_path / "store"
    out = toolslayer.scratch(store, KEY)
    (out / "layer").mkdir()
    assert "no complete layer" in toolslayer.publish(out, store, KEY, toolslayer.digest(KEY, ["pip"]))
    assert not toolslayer.ready(store, KEY, toolslayer.digest(KEY, ["pip"]))


def test_a_venv_seeded_from_the_read_only_layer_is_the_job_s_own(tmp_path: Path, built: Path) -> None:
    store = tmp_path / "store"
    dig = toolslayer.digest(KEY, ["pip"])
    assert toolslayer.publish(_build(built, store), store, KEY, dig) == ""
    layer = toolslayer.where(store, KEY, dig)
    venv = tmp_path / "job" / "venv"
    sh = toolslayer.seed_sh(sys.executable, str(venv), str(SEEDER), layer)
    done = subprocess.run(["sh", "-c", sh], capture_output=True, text=True, check=True)
    assert f"venv_layer: seeded {venv} from {layer}" in done.stderr
    assert (
        f"from {venv}/lib/"
        in subprocess.run([str(venv / "bin" / "pip"), "--version"], capture_output=True, text=True, check=True).stdout
    )
    # pip can change the venv (its files are writable copies), and the layer stays as it was
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "uninstall", "-y", "pip"], check=True, capture_output=True
    )
    assert toolslayer.ready(store, KEY, dig) and list(Path(layer).glob("lib/python*/site-packages/pip"))


def test_no_layer_there_gives_the_ordinary_venv(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    sh = toolslayer.seed_sh(sys.executable, str(venv), str(SEEDER), str(tmp_path / "nothing"))
    done = subprocess.run(["sh", "-c", sh], capture_output=True, text=True, check=True)
    assert "venv_layer: FileNotFoundError: no layer at" in done.stderr
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "--version"], check=True, capture_output=True)
