"""The docker backend's pip cache volumes: one per job and release (#46), kept across runs.

A package's build runs with its pip cache mounted read-write, so whatever it leaves there (a
planted wheel) is seen by every later install that mounts the same volume.  One volume per job
(``ft-harness-pip-<job_id>``: a package on an interpreter) let one release's build poison the
cache another release of the package installs from; one per job and release
(``ft-harness-pip-<job_id>--<version>``, ``Workspace.release``) keeps each release's to itself.
``ft-harness clean`` removes them all (``clean_caches``).
"""

from __future__ import annotations

import re

from ..interpreters.images import LABEL, daemon_error, remove_volumes

PIP_CACHE_PREFIX = "ft-harness-pip-"  # + job id + release: one volume per job and release
CACHE_LABEL = f"{LABEL}.cache"
PIP_CACHE = "/cache/pip"  # where it is mounted


def pip_cache_volume(job_id: str, release: str) -> str:
    """The pip cache volume of one release on one job: ``ft-harness-pip-<job_id>--<release>``.
    Job ids are file-name safe ([A-Za-z0-9_.-]); a release's other characters ("+" of a local
    version, "!" of an epoch) are written as ``_<hex>`` (a normalized version has no "_")."""
    safe = re.sub(r"[^A-Za-z0-9.-]", lambda m: f"_{ord(m.group()):x}", release)
    return f"{PIP_CACHE_PREFIX}{job_id}--{safe}"


def ensure_pip_cache(client, job_id: str, release: str) -> str:
    """The pip cache volume of the job's release, made with its labels on first use."""
    import docker.errors

    name = pip_cache_volume(job_id, release)
    try:
        try:
            client.volumes.get(name)
        except docker.errors.NotFound:
            client.volumes.create(
                name, labels={CACHE_LABEL: "pip", f"{CACHE_LABEL}.job": job_id, f"{CACHE_LABEL}.release": release}
            )
    except Exception as e:
        raise daemon_error(e) from None
    return name


def clean_caches(client, job_id: str | None = None) -> list[str]:
    """Remove every pip cache volume (each job's and release's, and the one shared volume of
    older versions), or only ``job_id``'s (of every release)."""
    return remove_volumes(client, [f"{CACHE_LABEL}=pip", *((f"{CACHE_LABEL}.job={job_id}",) if job_id else ())])
