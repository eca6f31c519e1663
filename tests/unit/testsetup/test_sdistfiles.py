"""harness.testsetup.sdistfiles: the sdist's config files read once per job (#45).

The count is taken from the interpreter's own ``open`` audit events (sys.addaudithook), so a
reader that went round SdistFiles -- a ``Path.read_text``, an ``os.open`` -- is counted too.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from harness.testsetup.sdistfiles import SdistFiles
from tests.unit.job.test_job_stages import PACKAGES, clean_backend, fake_fetch, go, pypi_job

CONFIG = {"pyproject.toml", "setup.cfg", "tox.ini", "pytest.ini", ".pytest.ini", "setup.py", "PKG-INFO"}
_opened: list[str] | None = None  # recording while a list
_hooked = False
_WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" or _opened is None or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    mode, flags = args[1], args[2]
    if (mode is not None and any(c in str(mode) for c in "wax+")) or (mode is None and flags & _WRITES):
        return  # a write (the sdist's extraction), not a read
    _opened.append(os.fsdecode(args[0]))


def _recording() -> list[str]:
    """The files opened for reading from now on (an audit hook cannot be removed: one, idle
    between tests)."""
    global _opened, _hooked
    if not _hooked:
        sys.addaudithook(_hook)
        _hooked = True
    _opened = []
    return _opened


def _stop() -> None:
    global _opened
    _opened = None


def _sdist(tmp_path: Path) -> Path:
    """ft_clean with every config file its readers look at: pyproject.toml (extension modules,
    pytest's ini options), setup.cfg (an extra), tox.ini (test deps), PKG-INFO (metadata 2.1:
    the store reads pyproject's dependencies too)."""
    tree = Path(shutil.copytree(PACKAGES / "ft_clean", tmp_path / "ft_clean-1.0"))
    (tree / "setup.cfg").write_text("[metadata]\nname = ft_clean\n[options.extras_require]\ndocs = sphinx\n")
    (tree / "tox.ini").write_text("[tox]\nenvlist = py\n[testenv]\ndeps = six\n")
    (tree / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: ft_clean\nVersion: 1.0\n")
    return tree


def test_one_job_reads_each_config_file_of_its_sdist_once(tmp_path: Path, monkeypatch) -> None:
    """A released package's job (fetch faked, the index's file list on the faked fetch, a fake backend): the
    suite setup (infer, the recipe registry, the pytest config, pytest 9's check, the compiled
    check) and the wheel store's static requirements read each file of the sdist once."""
    tree = _sdist(tmp_path)

    fake_fetch(monkeypatch, tree, files=("ft_clean-1.0-cp313-cp313-manylinux_2_17_x86_64.whl",))
    out = tmp_path / "out"
    opened = _recording()
    try:
        res, _ = go(pypi_job("ft_clean", "==1.0"), clean_backend(), out)
    finally:
        _stop()
    src = out.resolve() / "work" / res.job_id / "src"
    reads = Counter(
        str(Path(p).relative_to(src)) for p in opened if Path(p).name in CONFIG and Path(p).is_relative_to(src)
    )
    # each once: the four the sdist has, and one try of each it lacks (pytest.ini, setup.py ...)
    assert reads == {f"ft_clean-1.0/{name}": 1 for name in CONFIG}, reads
    assert res.phase("install") is not None and res.phase("probe") is not None  # the stages after it ran


def test_a_file_is_read_and_parsed_once_and_its_notes_told_to_every_reader(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "pyproject.toml").write_text("not [ toml")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "pytest.ini").write_text("[pytest]\n")
    read: list[str] = []
    from harness.testsetup import sdistfiles

    real = sdistfiles._read
    monkeypatch.setattr(sdistfiles, "_read", lambda p: read.append(p.name) or real(p))
    files = SdistFiles.read(tmp_path)
    assert sorted(read) == sorted(sdistfiles.TOP_FILES)  # the top ones, when the value is made
    first: list[str] = []
    second: list[str] = []
    assert files.toml("pyproject.toml", first) == {} == files.toml("pyproject.toml", second)
    assert first == second and first[0].startswith("pyproject.toml not read: ")
    assert files.ini("tests/pytest.ini", []) is files.ini("tests/pytest.ini", [])  # one parse, shared
    assert files.text("setup.cfg") is None  # not in the tree
    assert sorted(read) == sorted([*sdistfiles.TOP_FILES, "pytest.ini"])  # a deeper one: when first asked
    (tmp_path / "link.toml").symlink_to(tmp_path / "pyproject.toml")
    assert files.raw("link.toml") is None  # never through a link
