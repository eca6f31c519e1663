"""A job's workspace after its result (#56): logs/ and junit/ sealed (no link left, however deep
the tree package code made), venv/, src/, sdist/ and .tmp freed, and the next run of the job
starts from a workspace the last one left 2,000 levels deep.  The job chain is run_job with the
fake backend of test_job_stages (its commands' effects plant the trees); the walks are real."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.core.artifactcopy import copy_artifacts
from harness.core.wsfs import remove_tree

from ..core.test_fdwalk import NAME, deep_tree
from .test_job_stages import NORMAL, PACKAGES, clean_backend, go, make_job

SECRET = b"HOST-SECRET-c0ffee\n"


@pytest.fixture(autouse=True)
def _no_deep_tree_left(tmp_path: Path) -> Iterator[None]:
    """pytest removes old temp dirs with shutil.rmtree, which a deep tree breaks on 3.11."""
    yield
    for p in tmp_path.iterdir():
        remove_tree(p)


def odd_files(root: Path) -> list[str]:
    """Anything below ``root`` that is neither a regular file nor a directory (GNU find)."""
    r = subprocess.run(
        ["find", ".", "-not", "-type", "f", "-not", "-type", "d"], cwd=root, capture_output=True, text=True, check=True
    )
    return r.stdout.split()


def test_a_job_that_plants_a_deep_tree_of_links_gets_its_verdict_and_leaves_only_its_logs(tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret.txt").write_bytes(SECRET)

    def build(root: Path) -> None:  # what a hostile build leaves: a venv, links in logs/
        deep_tree(root / "venv" / "lib", host, depth=500)
        (root / "logs" / "env.log").symlink_to("/proc/self/environ")
        (root / ".tmp").mkdir(exist_ok=True)
        (root / ".tmp" / "big").write_bytes(b"x" * 1000)

    def tests(root: Path) -> None:  # and its tests: the 2,000-deep tree, links at the bottom and after
        deep_tree(root / "logs" / "a-deep", host)
        (root / "logs" / "zz").mkdir()
        (root / "logs" / "zz" / "passwd").symlink_to("/etc/passwd")
        (root / "junit" / "secret.xml").symlink_to(host / "secret.txt")

    job = make_job(PACKAGES / "ft_clean")
    out = tmp_path / "out"
    for run in (1, 2):  # the second starts where the first left its 2,000-deep logs/
        backend = clean_backend(effects={"install": build, "plain-gil0": tests})
        res, _ = go(job, backend, out)
        assert backend.ran == NORMAL, run
        assert res.verdict == "compatible", (run, [f.message for f in res.findings])
        work = out / "work" / res.job_id
        assert sorted(os.listdir(work)) == ["junit", "logs"], os.listdir(work)
        assert odd_files(work) == []
        assert (work / "logs" / "install.log").is_file()
        bottom = subprocess.run(["find", ".", "-name", "bottom.log"], cwd=work, capture_output=True, text=True)
        assert bottom.stdout.count(NAME) == 2_000  # a regular file at the bottom: kept
    dst = tmp_path / "upload"
    copy_artifacts(out, dst)
    for f in subprocess.run(["find", ".", "-type", "f"], cwd=dst, capture_output=True, text=True).stdout.split():
        data = (dst / f).read_bytes()
        assert SECRET not in data and data != Path("/etc/passwd").read_bytes(), f
    assert (host / "secret.txt").read_bytes() == SECRET
