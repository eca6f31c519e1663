"""Backends run commands for a job and return raw outcomes; nothing else.

A backend is chosen per run.  ``job.py`` builds every command with paths under
``Workspace.root`` (as the backend sees it) and asks the backend to run them;
logs and JUnit files land under ``Workspace.host_root`` so the host parses
them with the same code whatever the backend.

``open_backend(name, jobs, ...)`` is the one way to get a backend: the opener
registered under ``name`` in ``BACKENDS`` builds or reuses what each of the jobs'
interpreters needs there (a cached build for ``local``, an image for ``docker``)
and returns the backend with one ``Prepared`` per interpreter.  Several
interpreters per run work on both: on docker each job runs in its interpreter's
image (the backend is told which, per job id: two 3.13 builds have the same
``/opt/python/bin/python3.13t``, so the python path cannot tell them apart).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..core.errors import ConfigError
from ..core.progress import Heartbeat, no_heartbeat
from ..core.stored import store_root
from .base import Backend, Opened, Prepared, Say, Workspace

if TYPE_CHECKING:
    from ..config.plan import Job
    from ..core.jobspec import Interpreter

__all__ = ["BACKENDS", "Backend", "Opened", "Prepared", "Workspace", "choose", "open_backend"]

log = logging.getLogger(__name__)


class Opener(Protocol):
    def __call__(
        self, jobs: Sequence[Job], *, cache: Path, run_id: str, workers: int, say: Say, heartbeat: Heartbeat
    ) -> Opened: ...


def _needed(jobs: Sequence[Job]) -> dict[str, Interpreter]:
    """The jobs' interpreters by name, in plan order, each once."""
    return {j.interpreter.name: j.interpreter for j in jobs}


def open_local(
    jobs: Sequence[Job], *, cache: Path, run_id: str, workers: int, say: Say, heartbeat: Heartbeat
) -> Opened:
    """A venv per job on this machine, with interpreters built (or reused) under ``cache``."""
    from ..interpreters import interpreters
    from .local import LocalBackend

    needed = _needed(jobs)
    tsan = any(i.sanitizer for i in needed.values())
    backend = LocalBackend(  # mem_limit -1: the limit memory_bytes; none for TSan, it maps terabytes
        mem_limit=None if tsan else "memory_bytes", pip_cache=cache / "pip", wheel_store=store_root(cache, "local")
    )
    prepared = {}
    for name, interp in needed.items():
        built = interpreters.ensure_built(interp, cache, heartbeat=heartbeat)
        say(f"interpreter {name}: {built.state} ({built.info.key})")
        prepared[name] = Prepared(
            info=built.info,
            python=str(built.python),
            cache_hit=built.cache_hit,
            source_tarball=str(built.source_tarball or ""),
        )
    return Opened(backend=backend, prepared=prepared)


def open_docker(
    jobs: Sequence[Job], *, cache: Path, run_id: str, workers: int, say: Say, heartbeat: Heartbeat
) -> Opened:
    """A container per command, each job's from its interpreter's image (built or reused here);
    the CPUs are split between the ``workers`` jobs that run at once."""
    from ..interpreters import images, interpreters
    from .docker import DockerBackend

    client = images.docker_client()
    prepared: dict[str, Prepared] = {}
    mounts: dict[str, dict[str, dict[str, str]]] = {}  # interpreter name -> its prefix's mount
    env: dict[str, dict[str, str]] = {}
    for name, interp in _needed(jobs).items():
        if not interp.source.builds:  # installed: its prefix mounted read-only into the runtime image
            from ..interpreters.dockerpython import mount_installed

            m = mount_installed(client, interp, cache, heartbeat=heartbeat)
            say(f"interpreter {name}: installed, mounted read-only from {next(iter(m.mounts))} in image {m.image}")
            prepared[name] = Prepared(info=m.info, python=m.python, cache_hit=True, image=m.image)
            mounts[name], env[name] = m.mounts, m.env
            continue
        ref = images.ensure_interpreter_image(client, interp, cache, heartbeat=heartbeat)
        say(f"image {ref.tag}: {'reused' if ref.reused else 'built'}")
        assert ref.info is not None  # interpreter images always carry the facts of their check
        prepared[name] = Prepared(
            info=ref.info,
            python=ref.python,
            cache_hit=ref.reused,
            source_tarball=str(interpreters.fetch_source(interp, cache)),
            image=ref.tag,
        )
    job_images = {j.job_id: prepared[j.interpreter.name].image for j in jobs}
    job_mounts = {j.job_id: mounts[j.interpreter.name] for j in jobs if j.interpreter.name in mounts}
    job_env = {j.job_id: env[j.interpreter.name] for j in jobs if env.get(j.interpreter.name)}
    cpus = max(1.0, (os.cpu_count() or 2) / max(1, workers))
    default = next(iter(prepared.values())).image if prepared else ""  # none: an empty shard
    return Opened(
        backend=DockerBackend(
            image=default,
            job_images=job_images,
            run_id=run_id,
            cpus=cpus,
            client=client,
            job_mounts=job_mounts,
            job_env=job_env,
            wheel_store=store_root(cache, "docker"),
        ),
        prepared=prepared,
    )


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


def open_backend(
    name: str,
    jobs: Sequence[Job],
    *,
    cache: Path,
    run_id: str,
    workers: int = 1,
    say: Say = log.info,
    heartbeat: Heartbeat = no_heartbeat,
) -> Opened:
    """Open the backend called ``name`` for ``jobs``, with every interpreter they name: ``say``
    tells what each one is, ``heartbeat`` how a build of one goes (both the CLI's to print)."""
    try:
        opener = BACKENDS[name]
    except KeyError:
        raise ConfigError(f"unknown backend {name!r} (one of {', '.join(BACKENDS)})") from None
    return opener(jobs, cache=cache, run_id=run_id, workers=workers, say=say, heartbeat=heartbeat)
