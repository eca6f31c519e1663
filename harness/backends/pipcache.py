"""The docker backend's pip cache volumes: one per job and release (#46), kept across runs.

A package's build runs with its pip cache mounted read-write, so whatever it leaves there (a
planted wheel) is seen by every later install that mounts the same volume.  One volume per job
(``ft-harness-pip-<job_id>``: a package on an interpreter) let one release's build poison the
cache another release of the package installs from; one per job and release
(``ft-harness-pip-<job_id>--<version>``, ``Workspace.release``) keeps each release's to itself.
``ft-harness clean`` removes them all (``clean_caches``).

Their disk is bounded by ``pip_cache_bytes`` (#56; ``bound_pip_cache``): when a job ends its
volume is measured, and kept only while the volumes this run kept hold no more than that
together; else it is removed.  While one install runs its writes to the volume are bounded only
by its time (``install_timeout``): the host cannot read a volume's files as the workspace's.
"""

from __future__ import annotations

import contextlib
import re

from ..core import limits
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


MEASURE_TIMEOUT = 120  # seconds for du over one volume; longer and it is not kept


def volume_bytes(client, name: str, image: str, user: str) -> int | None:
    """The bytes volume ``name`` holds on the host's disk (``du -sk`` in a container of ``image``,
    the volume read-only, no network, no capability, as ``user``); None when it cannot be told (du
    could not read all of it, or took over MEASURE_TIMEOUT): such a volume is not kept either."""
    container = None
    try:
        container = client.containers.create(
            image,
            ["du", "-sk", "/c"],
            volumes={name: {"bind": "/c", "mode": "ro"}},
            network_mode="none",
            user=user,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            read_only=True,
            labels={f"{LABEL}.kind": "pip-cache-measure"},
        )
        container.start()
        if container.wait(timeout=MEASURE_TIMEOUT).get("StatusCode") != 0:
            return None
        return int(container.logs(stdout=True, stderr=False).split()[0]) * 1024
    except Exception:  # noqa: BLE001 - unmeasured: dropped, never kept on trust
        return None
    finally:
        if container is not None:
            with contextlib.suppress(Exception):
                container.remove(force=True)


def bound_pip_cache(client, name: str, image: str, user: str, kept: dict[str, int]) -> str:
    """Keep volume ``name`` (a job's just ended) only while this run's pip caches (``kept``: the
    volumes kept so far and their bytes) hold at most ``pip_cache_bytes`` together with it; else
    remove it (its next install downloads again).  Returns a line for the log, "" if kept. A job
    whose steps never made the volume has none: nothing is measured, so nothing is made (a
    container mounting a missing named volume would make one without its labels)."""
    try:
        client.volumes.get(name)
    except Exception:  # noqa: BLE001 - NotFound (or the daemon gone): nothing of this job's to bound
        return ""
    size = volume_bytes(client, name, image, user)
    others = sum(v for k, v in kept.items() if k != name)
    if size is not None and others + size <= limits.value("pip_cache_bytes"):
        kept[name] = size
        return ""
    kept.pop(name, None)
    try:
        client.volumes.get(name).remove(force=True)
    except Exception as e:  # noqa: BLE001 - in use or gone: the next job's close tries again
        return f"pip cache {name}: over pip_cache_bytes but not removed: {e}"
    held = "could not be measured" if size is None else f"holds {size} bytes, {others} in the others kept"
    return f"pip cache {name} removed: it {held} (limit pip_cache_bytes {limits.value('pip_cache_bytes')})"
