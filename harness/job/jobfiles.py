"""The job's own files in its workspace: what the host copies in before any package code runs,
and what it reads back after, all through the workspace's handle (``harness.core.wsfs``).
"""

from __future__ import annotations

import stat
from dataclasses import replace
from pathlib import Path

from ..core.evidence import TsanReport
from ..core.wsfs import JobDir
from ..parse.tsan import LOG_PREFIX as TSAN_LOG_PREFIX
from ..parse.tsan import parse_tsan
from .watchdog import install as install_watchdog

INNER = Path(__file__).parent.parent / "_inner"


def copy_own_files(fs: JobDir, *, tsan: bool) -> None:
    """The harness's own files the job's steps run, copied in while the workspace holds nothing
    of the package's: the probe, the watchdog plugin, the venv helper and, under TSan, the marker
    plugin. No step copies them again once package code has run."""
    fs.copy_in(INNER / "probe.py", "probe.py")
    fs.copy_in(INNER / "venv_layer.py", "inner/venv_layer.py")  # a venv from the tools layer
    install_watchdog(fs)
    if tsan:
        fs.copy_in(INNER / "tsan_marker.py", "inner/tsan_marker.py")


def tsan_reports(fs: JobDir, tsan_dir: str) -> list[TsanReport]:
    """Every process's TSan log in ``tsan_dir`` (below the workspace), read through ``fs``."""
    reports: list[TsanReport] = []
    names = [n for n, mode in fs.listdir(tsan_dir) if n.startswith(TSAN_LOG_PREFIX + ".") and stat.S_ISREG(mode)]
    for n in sorted(names, key=lambda n: (len(n), n)):  # oldest pid first
        raw = fs.read(f"{tsan_dir}/{n}", 64 * 1024 * 1024)
        if raw is not None:
            reports += [replace(r, log=n) for r in parse_tsan(raw.decode("utf-8", errors="replace"))]
    return reports


def site_packages(fs: JobDir, rel: str = "") -> tuple[str, str] | None:
    """(site-packages below the workspace, ``rel``) when the install put the tests' directory
    ``rel`` there (harness.testsetup.where.tests_in_package; "": the venv's site-packages itself), reached
    through no link (the install ran package code); None otherwise."""
    for name, mode in fs.listdir("venv/lib"):
        sp = f"venv/lib/{name}/site-packages"
        if name.startswith("python") and stat.S_ISDIR(mode) and fs.is_dir(f"{sp}/{rel}" if rel else sp):
            return sp, rel
    return None
