"""What `python -m build` makes: the wheel carries every file harness reads at run time (modules,
templates, static assets, the schema, the inner scripts and containers/), and under `nox -s tests`
the tests import that installed copy, not the checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import harness
from harness.interpreters import images
from tests.conftest import INSTALLED, ROOT, SOURCE_PATH

# named here so that an empty file listing cannot pass the comparison below
RUNTIME_FILES = [
    "harness/containers/bootstrap-base.sh",
    "harness/containers/interpreter.Dockerfile",
    "harness/containers/runtime.Dockerfile",
    "harness/render/templates/index.html",
    "harness/render/templates/package.html",
    "harness/render/static/site.css",
    "harness/schema/report.schema.json",
    "harness/_inner/probe.py",
    "harness/_inner/tsan_marker.py",
    "harness/py.typed",
]


def _source_files(top: str) -> list[str]:
    """The files of ``top`` in the checkout: git's list when there is one, else a walk."""
    r = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--", top], capture_output=True, text=True)
    if r.returncode == 0 and r.stdout.strip():
        return [f for f in r.stdout.splitlines() if (ROOT / f).is_file()]
    return [
        str(p.relative_to(ROOT))
        for p in (ROOT / top).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and not p.name.startswith(".")
    ]


def test_the_wheel_carries_every_runtime_file(dist):
    names = set(zipfile.ZipFile(dist["wheel"]).namelist())
    missing = [f for f in RUNTIME_FILES if f not in names]
    assert missing == [], f"{dist['wheel'].name} lacks {missing}"
    # containers/ is read and edited at the top of the repository; the wheel has it inside harness/
    expected = _source_files("harness") + ["harness/" + f for f in _source_files("containers")]
    assert len(expected) > len(RUNTIME_FILES)
    assert sorted(set(expected) - names) == []
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_the_sdist_can_rebuild_the_wheel(dist):
    """`python -m build` makes the wheel from the sdist, so the sdist needs containers/ and setup.py."""
    with tarfile.open(dist["sdist"]) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    assert {
        "setup.py",
        "pyproject.toml",
        "containers/bootstrap-base.sh",
        "containers/interpreter.Dockerfile",
        "harness/schema/report.schema.json",
    } <= names


def test_containers_are_read_from_the_installed_package():
    pkg = Path(harness.__file__).resolve().parent
    if pkg == ROOT / "harness":  # a checkout or an editable install: the top-level containers/
        assert images.CONTAINERS.resolve() == ROOT / "containers"
    else:
        assert pkg / "containers" == images.CONTAINERS
    # the same bytes as the checkout's, so the image tags (digests of their inputs) are the same
    for f in ("bootstrap-base.sh", "interpreter.Dockerfile", "runtime.Dockerfile"):
        assert (images.CONTAINERS / f).read_bytes() == (ROOT / "containers" / f).read_bytes()


@pytest.mark.skipif(not INSTALLED, reason="only under `nox -s tests` (FT_HARNESS_INSTALLED=1)")
def test_tests_and_their_cli_children_use_the_installed_copy():
    assert not Path(harness.__file__).resolve().is_relative_to(ROOT / "harness"), harness.__file__
    r = subprocess.run(
        [sys.executable, "-P", "-c", "import harness; print(harness.__file__)"],
        cwd=ROOT,
        env={**os.environ, **SOURCE_PATH},
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()).resolve() == Path(harness.__file__).resolve()
