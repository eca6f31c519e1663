"""The test tools' layer in the wheel store (#34): pip and the harness's pinned test tools,
installed once per interpreter build and copied into every later job's venv.

Each job used to pay for ``python -m venv`` (ensurepip unpacks and compiles pip) and for pip
installing pytest, its plugins and their dependencies, the same files every time. Now the first
job of an interpreter build that finds no layer builds one in a step of its own, where nothing
but a scratch directory is writable (``Backend.run_isolated``, as a stored wheel's build): a
venv, then ``pip install`` of the pins alone -- no package code runs there. The host makes it
read-only and renames it into ``<store>/<interpreter key>/tools/<digest>``; every job then makes
its venv ``--without-pip`` and copies the layer's site-packages and console scripts into it
(``harness/_inner/venv_layer.py --from``), reading the store through its read-only mount. The
venv's files are the job's own copy, so nothing the job does reaches the layer; the package and
its dependencies are installed by the job's pip as before (the pins named again: satisfied).

The digest covers the interpreter build's key, the pins and this layout's version: a new pin
is a new layer. A job whose layer cannot be built or copied makes its venv the ordinary way.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shlex
import shutil
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

from .wheelstore import KEY_RE, SHA256_RE, lock, scratch  # noqa: F401  (scratch: the build's dir, as a wheel's)

FORMAT = 1  # of the layer's layout; a new one is a new digest
MARK = "ft-harness-layer.json"  # written last by the build: a layer without it is incomplete
SUBDIR = "tools"
PHASE = "tools-layer"  # the build's phase (kind "wheels": no verdict reads it)


def digest(key: str, tools: Sequence[str]) -> str:
    return hashlib.sha256(json.dumps([FORMAT, key, list(tools)]).encode()).hexdigest()


def where(store: Path | str, key: str, dig: str) -> str:
    """The layer's dir below ``store`` (host path or as the backend sees it)."""
    if not KEY_RE.fullmatch(key) or not SHA256_RE.fullmatch(dig):
        raise ValueError(f"not a layer: {key!r}/{dig!r}")
    return f"{store}/{key}/{SUBDIR}/{dig}"


def ready(store: Path, key: str, dig: str) -> bool:
    """A complete layer: a real dir holding the build's mark."""
    path = Path(where(store, key, dig))
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode) and stat.S_ISREG(os.lstat(path / MARK).st_mode)
    except OSError:
        return False


def build_argv(python: str, out: str, tools: Sequence[str]) -> list[str]:
    """The build, in ``out`` (the isolated step's only writable dir): ``out/layer``, a venv with
    the pins installed, no cache; the mark last."""
    layer = f"{out}/layer"
    mark = json.dumps({"format": FORMAT, "tools": list(tools)})
    sh = " && ".join(
        [
            shlex.join([python, "-m", "venv", layer]),
            shlex.join(
                [f"{layer}/bin/python", "-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check", *tools]
            ),
            f"printf '%s\\n' {shlex.quote(mark)} > {shlex.quote(f'{layer}/{MARK}')}",
        ]
    )
    return ["sh", "-c", sh]


def publish(out: Path, store: Path, key: str, dig: str, room: Callable[[Path], str] = lambda layer: "") -> str:
    """Move the build's ``out/layer`` into the store, read-only. "" when done (or another job's
    layer got there first), else why not: ``room`` (called with the layer right before the
    rename: harness.store.storecap) says why the store takes no more."""
    src = out / "layer"
    try:
        if not stat.S_ISDIR(os.lstat(src).st_mode) or not stat.S_ISREG(os.lstat(src / MARK).st_mode):
            return "the build left no complete layer"
    except OSError:
        return "the build left no complete layer"
    if ready(store, key, dig):  # another job's: kept, nothing added
        return ""
    full = room(src)
    if full:
        return full
    target = Path(where(store, key, dig))
    target.parent.mkdir(parents=True, exist_ok=True)
    _read_only(src)
    try:
        os.rename(src, target)
    except OSError as e:
        if e.errno not in (errno.ENOTEMPTY, errno.EEXIST) or not ready(store, key, dig):
            return f"cannot move it into the store: {e}"
    return ""


def _read_only(top: Path) -> None:
    for root, dirs, files in os.walk(top, topdown=False):
        for f in files:
            p = os.path.join(root, f)
            if not os.path.islink(p):
                os.chmod(p, os.lstat(p).st_mode & 0o555)
        for d in dirs:
            p = os.path.join(root, d)
            if not os.path.islink(p):
                os.chmod(p, 0o555)
    os.chmod(top, 0o555)


def remove(path: Path) -> None:
    """A scratch dir, read-only parts and all."""
    with contextlib.suppress(OSError):
        for root, dirs, _ in os.walk(path):
            for d in dirs:
                p = os.path.join(root, d)
                if not os.path.islink(p):
                    os.chmod(p, 0o755)
    shutil.rmtree(path, ignore_errors=True)


def locked(store: Path, key: str, dig: str) -> contextlib.AbstractContextManager[None]:
    """Held while one layer is looked up and built: a second job waits, then finds it."""
    return lock(store, key, dig)


def seed_sh(python: str, venv: str, seeder: str, layer: str) -> str:
    """Shell that makes the venv from ``layer`` (as the backend sees it), else the ordinary way."""
    q = shlex.quote
    return (
        f"{{ {q(python)} -m venv --without-pip {q(venv)} && {shlex.join([python, seeder, '--from', layer, venv])}; }}"
        f" || {q(python)} -m venv --clear {q(venv)}"
    )
