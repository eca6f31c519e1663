"""harness.job.extract: an sdist lands in a directory the host made now, and nothing points out of it."""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from harness.job import extract


def sdist(path: Path, *, links: dict[str, str] | None = None, extra: dict[str, bytes] | None = None) -> Path:
    """A real .tar.gz: pkg-1.0/{pyproject.toml, tests/test_a.py} plus ``links`` (name -> target)."""
    files = {
        "pkg-1.0/pyproject.toml": b"[project]\nname='pkg'\n",
        "pkg-1.0/tests/test_a.py": b"def test(): pass\n",
        **(extra or {}),
    }
    with tarfile.open(path, "w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tf.addfile(info)
    return path


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A host directory outside the workspace, with a file that must stay as it is."""
    h = tmp_path / "host"
    h.mkdir()
    (h / "secret.txt").write_text("HOST-SECRET")
    return h


def test_a_planted_src_link_is_replaced_not_followed(tmp_path: Path, host: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "src").symlink_to(host)  # package code left src -> a host directory
    top, skipped = extract.extract(sdist(tmp_path / "pkg-1.0.tar.gz"), ws / "src")
    assert top == ws / "src" / "pkg-1.0" and skipped == []
    assert not (ws / "src").is_symlink() and (top / "tests" / "test_a.py").is_file()
    assert sorted(os.listdir(host)) == ["secret.txt"]  # nothing written through the link


def test_a_planted_tree_of_links_is_removed_first(tmp_path: Path, host: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "pkg-1.0").symlink_to(host)  # the members would be written through this
    top, _ = extract.extract(sdist(tmp_path / "pkg-1.0.tar.gz"), ws / "src")
    assert not top.is_symlink() and (top / "pyproject.toml").is_file()
    assert sorted(os.listdir(host)) == ["secret.txt"]
    assert (host / "secret.txt").read_text() == "HOST-SECRET"


def test_link_members_out_of_the_tree_are_skipped_and_named(tmp_path: Path, host: Path) -> None:
    links = {
        "pkg-1.0/abs": str(host / "secret.txt"),
        "pkg-1.0/up": "../../host/secret.txt",
        "pkg-1.0/inside": "pyproject.toml",
    }
    (tmp_path / "ws").mkdir()
    top, skipped = extract.extract(sdist(tmp_path / "pkg-1.0.tar.gz", links=links), tmp_path / "ws" / "src")
    assert sorted(skipped) == ["pkg-1.0/abs", "pkg-1.0/up"]
    assert not (top / "abs").exists() and not (top / "up").is_symlink()
    assert (top / "inside").is_symlink() and (top / "inside").read_text().startswith("[project]")


def test_a_member_outside_the_tree_refuses_the_archive(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    bad = sdist(tmp_path / "pkg-1.0.tar.gz", extra={"pkg-1.0/../../escaped.txt": b"x"})
    with pytest.raises(tarfile.TarError):
        extract.extract(bad, tmp_path / "ws" / "src")
    assert not (tmp_path / "escaped.txt").exists()
    zbad = tmp_path / "pkg-1.0.zip"
    with zipfile.ZipFile(zbad, "w") as zf:
        zf.writestr("pkg-1.0/../../escaped.txt", "x")
    with pytest.raises(ValueError, match="unsafe path"):
        extract.extract(zbad, tmp_path / "ws" / "src")
    assert not (tmp_path / "escaped.txt").exists()


def test_an_archive_or_sdist_dir_that_is_a_link_is_not_read(tmp_path: Path, host: Path) -> None:
    real = sdist(host / "other-2.0.tar.gz")
    d = tmp_path / "ws" / "sdist"
    d.mkdir(parents=True)
    (d / "pkg-1.0.tar.gz").symlink_to(real)  # a link to a host archive
    os.mkfifo(d / "pkg-1.1.tar.gz")  # and a FIFO: listing it must not block
    assert extract.archives(d) == []
    with pytest.raises(OSError):
        extract.extract(d / "pkg-1.0.tar.gz", tmp_path / "ws" / "src")
    (tmp_path / "ws" / "sdist2").symlink_to(host)  # the directory itself a link
    assert extract.archives(tmp_path / "ws" / "sdist2") == []
    sdist(d / "pkg-1.2.tar.gz")
    assert extract.archives(d) == [d / "pkg-1.2.tar.gz"]


def test_the_parent_being_a_link_is_refused(tmp_path: Path, host: Path) -> None:
    (tmp_path / "ws").symlink_to(host)
    with pytest.raises(ValueError, match="is a link"):
        extract.fresh_dir(tmp_path / "ws" / "src")
    assert sorted(os.listdir(host)) == ["secret.txt"]


def test_links_left_in_logs_and_junit_are_dropped(tmp_path: Path, host: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "logs" / "tsan").mkdir(parents=True)
    (ws / "logs" / "probe.log").write_text("real")
    (ws / "logs" / "plain.log").symlink_to(host / "secret.txt")
    (ws / "logs" / "tsan" / "x").symlink_to(host)
    (ws / "junit").symlink_to(host)
    (ws / "venv").mkdir()
    (ws / "venv" / "python").symlink_to("/usr/bin/python3")  # not swept: only logs/ and junit/
    assert extract.drop_links(ws, ("logs", "junit")) == 3
    assert sorted(os.listdir(ws / "logs")) == ["probe.log", "tsan"] and not (ws / "junit").exists()
    assert (ws / "venv" / "python").is_symlink()
    assert sorted(os.listdir(host)) == ["secret.txt"] and (host / "secret.txt").read_text() == "HOST-SECRET"
