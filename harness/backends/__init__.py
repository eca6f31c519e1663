"""Backends run commands for a job and return raw outcomes; nothing else.

A backend is chosen per run.  ``job.py`` builds every command with paths under
``Workspace.root`` (as the backend sees it) and asks the backend to run them;
logs and JUnit files land under ``Workspace.host_root`` so the host parses
them with the same code whatever the backend.

``open_backend(name, interpreters, ...)`` is the one way to get a backend: the
opener registered under ``name`` in ``BACKENDS`` builds or reuses what each
interpreter needs there (a cached build for ``local``, an image for ``docker``)
and returns the backend with one ``Prepared`` per interpreter.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import ConfigError
from .base import Backend, Opened, Prepared, Say, Workspace

if TYPE_CHECKING:
    from ..matrix import Interpreter

__all__ = ["BACKENDS", "Backend", "Opened", "Prepared", "Workspace", "choose", "open_backend"]

log = logging.getLogger(__name__)
LOCAL_MEM_LIMIT = 4 << 30  # RLIMIT_DATA of every local command (none for TSan: it maps terabytes)


class Opener(Protocol):
    def __call__(self, interps: Sequence[Interpreter], *, cache: Path, run_id: str, workers: int,
                 say: Say) -> Opened: ...


def _needed(interps: Sequence[Interpreter]) -> dict[str, Interpreter]:
    return {i.name: i for i in interps}


def open_local(interps: Sequence[Interpreter], *, cache: Path, run_id: str, workers: int,
               say: Say) -> Opened:
    """A venv per job on this machine, with interpreters built (or reused) under ``cache``."""
    from .. import interpreters
    from .local import LocalBackend

    needed = _needed(interps)
    tsan = any(i.sanitizer for i in needed.values())
    backend = LocalBackend(mem_limit=None if tsan else LOCAL_MEM_LIMIT, pip_cache=cache / "pip")
    prepared = {}
    for name, interp in needed.items():
        built = interpreters.ensure_built(interp, cache)
        say(f"interpreter {name}: {'cache hit' if built.cache_hit else 'built'} ({built.info.key})")
        prepared[name] = Prepared(info=built.info, python=str(built.python),
                                  cache_hit=built.cache_hit,
                                  source_tarball=str(built.source_tarball))
    return Opened(backend=backend, prepared=prepared)


def open_docker(interps: Sequence[Interpreter], *, cache: Path, run_id: str, workers: int,
                say: Say) -> Opened:
    """A container per command, from an interpreter image built (or reused) for each interpreter;
    the CPUs are split between the ``workers`` jobs that run at once."""
    from .. import images, interpreters
    from ..model import InterpreterInfo
    from .docker import DockerBackend

    client = images.docker_client()
    tags, prepared = set(), {}
    for name, interp in _needed(interps).items():
        ref = images.ensure_interpreter_image(client, interp, cache)
        say(f"image {ref.tag}: {'reused' if ref.reused else 'built'}")
        tags.add(ref.tag)
        info = InterpreterInfo(
            name=interp.name, version=interp.version, key=ref.key,
            configure=interp.configure_flags, free_threaded=True, sanitizer=interp.sanitizer,
            python=ref.python)
        prepared[name] = Prepared(info=info, python=ref.python, cache_hit=ref.reused,
                                  source_tarball=str(interpreters.fetch_source(interp, cache)))
    if len(tags) > 1:
        raise ConfigError("the docker backend runs one interpreter per run for now; "
                          "use --interpreter NAME")
    cpus = max(1.0, (os.cpu_count() or 2) / max(1, workers))
    image = tags.pop() if tags else ""  # no jobs (an empty shard): nothing will run
    return Opened(backend=DockerBackend(image=image, run_id=run_id, cpus=cpus, client=client),
                  prepared=prepared)


BACKENDS: dict[str, Opener] = {"local": open_local, "docker": open_docker}


def choose(name: str) -> tuple[str, str]:
    """The backend ``--backend NAME`` means, and a note when ``auto`` had to fall back.

    ``auto`` is docker when an engine answers, else local."""
    if name != "auto":
        return name, ""
    from .docker import docker_available

    ok, why = docker_available()
    if ok:
        return "docker", ""
    return "local", f"no docker engine answers ({why}); using --backend local"


def open_backend(name: str, interps: Sequence[Interpreter], *, cache: Path, run_id: str,
                 workers: int = 1, say: Say = log.info) -> Opened:
    """Open the backend called ``name`` for jobs on ``interps`` (duplicates are fine)."""
    try:
        opener = BACKENDS[name]
    except KeyError:
        raise ConfigError(f"unknown backend {name!r} (one of {', '.join(BACKENDS)})") from None
    return opener(interps, cache=cache, run_id=run_id, workers=workers, say=say)
