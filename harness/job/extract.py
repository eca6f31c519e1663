"""An sdist unpacked into a directory the host has just made, with nothing that points out.

When the fetch ran in the backend (pip, which may build), package code has had the job's
workspace before the host extracts: it could have left ``src`` as a link to a host directory,
or a tree of links for the members to be written through, and ``sdist/`` as a link to a host
file or directory.  So the host removes whatever is at the target (never following it), makes
the directory anew, reads the archive only as a regular file it opened without following a
link, and extracts with tarfile's ``data`` filter; a member that is a link out of the tree is
skipped (and named), any other member the filter refuses (an absolute path, ``..``, a device)
refuses the archive.

What an archive unpacks to is bounded while it is extracted (``harness.core.limits``): members
(``extract_members``) and bytes (``extract_bytes``, each member's size counted before it is
written, so a 500-byte bz2 bomb stops at the limit, not at the end of the disk).  Past one,
``LimitExceeded`` names it.
"""

from __future__ import annotations

import lzma
import os
import shutil
import stat
import tarfile
import zipfile
import zlib
from pathlib import Path
from typing import BinaryIO

from ..core.limits import LimitExceeded, value

# what an archive that cannot be extracted safely raises (besides LimitExceeded): a package's
# broken or hostile sdist, told in its result, never a harness bug
UNSAFE = (
    OSError,
    ValueError,
    EOFError,
    tarfile.TarError,
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    NotImplementedError,
    RuntimeError,
)


def fresh_dir(path: Path) -> Path:
    """``path`` as a new empty directory made now: a link, file or tree left there is removed,
    never followed; ValueError when its parent is a link."""
    if path.parent.is_symlink():
        raise ValueError(f"{path.parent.name}/ is a link")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        pass
    else:
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(path)  # removes links inside as links
        else:
            path.unlink()
    path.mkdir(mode=0o755)  # fails if anything appeared meanwhile
    return path


def archives(sdist_dir: Path) -> list[Path]:
    """The regular files in ``sdist_dir`` (a real directory, not a link), sorted by name."""
    if sdist_dir.is_symlink() or not sdist_dir.is_dir():
        return []
    return sorted(p for p in sdist_dir.iterdir() if stat.S_ISREG(os.lstat(p).st_mode))


def _open_regular(path: Path) -> BinaryIO:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ValueError(f"{path.name} is not a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def extract(archive: Path, dest: Path) -> tuple[Path, list[str]]:
    """Extract an sdist into ``dest`` (made fresh): its top directory and the link members
    skipped because they point out of the tree.  ValueError/OSError/TarError/BadZipFile when
    the archive cannot be extracted safely (``UNSAFE``); LimitExceeded past a limit."""
    fresh_dir(dest)
    skipped: list[str] = []
    budget = _Budget(archive.name)
    with _open_regular(archive) as f:
        if archive.suffix == ".zip":
            with zipfile.ZipFile(f) as zf:  # zipfile writes a link member as a plain file
                for info in zf.infolist():
                    member = info.filename
                    if member.startswith("/") or ".." in Path(member).parts:
                        raise ValueError(f"unsafe path in {archive.name}: {member}")
                    budget.add(member, info.file_size)  # ZipExtFile reads no more than file_size
                zf.extractall(dest)
        else:

            def keep(member: tarfile.TarInfo, where: str) -> tarfile.TarInfo | None:
                budget.add(member.name, member.size if member.isreg() else 0)  # before it is written
                try:
                    return tarfile.data_filter(member, where)
                except tarfile.LinkOutsideDestinationError:
                    skipped.append(member.name)
                    return None
                except tarfile.AbsoluteLinkError:
                    skipped.append(member.name)
                    return None

            with tarfile.open(fileobj=f) as tf:
                tf.extractall(dest, filter=keep)
    tops = [p for p in dest.iterdir() if not p.is_symlink() and p.is_dir()]
    return (tops[0] if len(tops) == 1 else dest), skipped


class _Budget:
    """Members and bytes extracted so far, against ``extract_members`` and ``extract_bytes``."""

    def __init__(self, name: str) -> None:
        self.name, self.members, self.bytes = name, 0, 0
        self.max_members, self.max_bytes = value("extract_members"), value("extract_bytes")

    def add(self, member: str, size: int) -> None:
        self.members += 1
        self.bytes += max(0, size)
        if self.members > self.max_members:
            raise LimitExceeded("extract_members", f"{self.name} has more than {self.max_members} members")
        if self.bytes > self.max_bytes:
            raise LimitExceeded(
                "extract_bytes", f"{self.name} unpacks to more than {self.max_bytes >> 20} MiB (at {member[:200]})"
            )


def drop_links(root: Path, dirs: tuple[str, ...]) -> int:
    """Remove every symlink under ``root/<dir>`` (never following one): what a job leaves there
    is later copied (merged reports), uploaded and served; returns how many were removed."""
    n = 0
    for d in dirs:
        top = root / d
        if top.is_symlink():
            top.unlink()
            n += 1
            continue
        for dirpath, dirnames, filenames in os.walk(top):  # os.walk does not descend into links
            for name in dirnames + filenames:
                p = Path(dirpath, name)
                if p.is_symlink():
                    p.unlink()
                    n += 1
    return n
