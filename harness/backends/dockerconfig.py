"""The docker backend's settings, and the container they make of each command of a job.

Every container: user non-root, cap_drop ALL, no-new-privileges, pids/memory/CPU
limits, read-only root with a tmpfs /tmp, a docker-init PID 1, labels
``ft-harness.run`` / ``ft-harness.job``.  ``network=True`` (install) adds the default
bridge, the host's CA bundle read-only and the pip cache volume of the job's release;
``network=False`` is ``network_mode="none"``.

The pip cache is a volume per job and release (harness.backends.pipcache): a package's build
can plant wheels only where later installs of the same release look (#46).  A step before the
host knows the release (pip's fallback fetch of an unpinned spec) gets no pip cache at all.

The same container said twice: as docker-py's create() arguments (``_config``, for the
backend's own run), and as the ``docker run`` line a person reproduces a step with
(``reproduce_command``).  Running the containers and removing them is harness.backends.docker's.
"""

from __future__ import annotations

import os
import re
import shlex
import threading
from collections.abc import Mapping
from pathlib import Path

from ..core import limits
from ..core.errors import ConfigError
from ..core.wsfs import JobDir
from ..interpreters.images import docker_client
from .base import Workspace
from .pipcache import PIP_CACHE, ensure_pip_cache, pip_cache_volume

LABEL = "ft-harness"
CA_IN_CONTAINER = "/etc/ssl/certs/ft-harness-host-ca.crt"
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
CA_ENV = "FT_HARNESS_CA_BUNDLE"  # another CA bundle for the containers' HTTPS (a proxy's, a mirror's)
# the docker network of the steps with the network (default: docker's bridge): one of the user's
# own, where a mirror or proxy container answers by name (docker's DNS on user-defined networks)
NETWORK_ENV = "FT_HARNESS_DOCKER_NETWORK"
NETWORK_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def install_network() -> str:
    """The network of the install steps: $FT_HARNESS_DOCKER_NETWORK (a plain docker network
    name; "none" and "host" are not one) or "bridge"; ConfigError for anything else."""
    name = os.environ.get(NETWORK_ENV, "") or "bridge"
    if not NETWORK_RE.fullmatch(name) or name in ("none", "host") or name.startswith("container"):
        raise ConfigError(
            f"{NETWORK_ENV}={name!r}: not a docker network's name for the install steps "
            "(a user-defined network, or unset for docker's bridge)"
        )
    return name


ROOT = "/work"
RUNTIME_UID = 1000
DOCKER_LOG = {"max-size": "16m", "max-file": "1"}  # docker's json-file log of a container's stdout


def docker_bytes(n: int) -> str:
    """``n`` bytes as docker's --memory reads it: 6442450944 -> "6g", 536870912 -> "512m"."""
    for unit, size in (("g", 1 << 30), ("m", 1 << 20), ("k", 1 << 10)):
        if n % size == 0:
            return f"{n // size}{unit}"
    return f"{n}b"


class ContainerConfig:
    """A docker backend's settings (its constructor's arguments, and the jobs it opened) and
    the containers they make; harness.backends.docker.DockerBackend runs and removes them."""

    def __init__(
        self,
        *,
        image: str,
        run_id: str,
        cpus: float,
        mem_limit: str | None = None,
        pids_limit: int = 512,
        ca_bundle: Path | None = None,
        client=None,
        tmpfs_size: str = "1g",
        job_images: Mapping[str, str] | None = None,
        job_mounts: Mapping[str, Mapping[str, dict[str, str]]] | None = None,
        job_env: Mapping[str, Mapping[str, str]] | None = None,
        wheel_store: Path | None = None,
    ):
        self.image = image  # for a job not in job_images
        self.job_images = dict(job_images or {})  # job_id -> the image of its interpreter
        # job_id -> read-only mounts and environment of its interpreter (an installed one's
        # prefix, harness.interpreters.dockerpython), in every container of the job and in its recipes
        self.job_mounts = {k: dict(v) for k, v in (job_mounts or {}).items()}
        self.job_env = {k: dict(v) for k, v in (job_env or {}).items()}
        self.wheel_store = wheel_store  # mounted read-only in every container of every job (IN_CONTAINER)
        self.run_id = run_id
        self.cpus = cpus
        self.mem_limit = mem_limit or docker_bytes(limits.value("memory_bytes"))  # "6g"
        self.pids_limit = pids_limit
        self.tmpfs_size = tmpfs_size
        if ca_bundle is None and os.environ.get(CA_ENV):
            ca_bundle = Path(os.environ[CA_ENV])
        if ca_bundle is None and HOST_CA.exists():
            ca_bundle = HOST_CA
        self.ca_bundle = ca_bundle
        self.network = install_network()
        self.client = client or docker_client()
        # Containers run as 1000:1000 when we are root (and chown the workspace to it);
        # otherwise as the calling user, so files stay ours on the host.  Never uid 0.
        if os.geteuid() == 0:
            self.uid, self.gid = RUNTIME_UID, RUNTIME_UID
        else:
            self.uid, self.gid = os.geteuid(), os.getegid()
        # the jobs opened and their containers still around (DockerBackend's bookkeeping)
        self._lock = threading.Lock()
        self._live: dict[str, set[str]] = {}  # job_id -> container ids still around
        self._closed: set[str] = set()
        self._mounts: dict[str, dict[str, dict[str, str]]] = {}
        self._jobs: dict[str, str] = {}  # host_root -> job_id
        self._pip_kept: dict[str, int] = {}  # pip cache volumes this run kept -> bytes (pip_cache_bytes)
        self._cancelled = False

    # ---------------------------------------------------------------- setup

    def _own(self, fs: JobDir) -> None:
        """Make the workspace writable for the container user (only needed as root); through
        the workspace's handle, links changed themselves, never followed (``harness.core.wsfs``)."""
        if os.geteuid() != 0:
            return
        fs.chown_all(self.uid, self.gid)

    # ---------------------------------------------------------------- the containers

    def _job_id(self, ws: Workspace) -> str:
        with self._lock:
            return self._jobs.get(str(ws.host_root), ws.host_root.name)

    def _in_container(self, ws: Workspace, path: Path) -> str | None:
        """``path`` (a host path under the workspace) as the container sees it; no link resolved."""
        try:
            return f"{ROOT}/{Path(path).relative_to(ws.host_root).as_posix()}"
        except ValueError:
            return None

    def _config(
        self,
        ws: Workspace,
        argv: list[str],
        env: dict[str, str],
        cwd: str,
        log_in: str | None,
        network: bool,
        only: dict[str, dict[str, str]] | None = None,
        tmpdir: str = "/tmp",
    ) -> dict:
        """``only``: these mounts instead of the job's (run_isolated: no workspace, no pip cache);
        ``tmpdir``: the commands' TMPDIR (harness.backends.docker.TMP: on the host's disk)."""
        from docker.types import LogConfig, Ulimit

        job_id = self._job_id(ws)
        environment = {"HOME": "/tmp", "TMPDIR": tmpdir, **self.job_env.get(job_id, {}), **env}
        volumes = (
            dict(only)
            if only is not None
            else dict(
                self._mounts.get(job_id)
                or {**self.job_mounts.get(job_id, {}), str(ws.host_root): {"bind": ROOT, "mode": "rw"}}
            )
        )
        if network and only is None and ws.release:  # this job's and release's alone
            volumes[ensure_pip_cache(self.client, job_id, ws.release)] = {"bind": PIP_CACHE, "mode": "rw"}
            environment.setdefault("PIP_CACHE_DIR", PIP_CACHE)
        elif network and only is None:  # the release not known yet: no cache to share with any
            environment["PIP_NO_CACHE_DIR"] = "1"
        if network and self.ca_bundle:
            volumes[str(self.ca_bundle)] = {"bind": CA_IN_CONTAINER, "mode": "ro"}
            for var in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
                environment[var] = CA_IN_CONTAINER
        if log_in is not None:  # noqa: SIM108
            # The shell opens the log on the mount and execs the command: stdout and stderr
            # share one file descriptor, so their interleaving is exact, as in the local backend.
            command = ["/bin/sh", "-c", 'exec "$@" >>"$0" 2>&1', log_in, *argv]
        else:
            command = list(argv)
        return dict(
            image=ws.image or self.image,
            command=command,
            environment=environment,
            working_dir=cwd or ROOT,
            user=f"{self.uid}:{self.gid}",
            labels={f"{LABEL}.run": self.run_id, f"{LABEL}.job": job_id, f"{LABEL}.kind": "job"},
            volumes=volumes,
            network_mode=self.network if network else "none",
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            pids_limit=self.pids_limit,
            mem_limit=self.mem_limit,
            memswap_limit=self.mem_limit,
            nano_cpus=int(self.cpus * 1e9),
            read_only=True,
            tmpfs={"/tmp": f"rw,exec,nosuid,size={self.tmpfs_size}"},
            init=True,
            detach=True,
            # the disk a container can fill (#46): any one file (its log on the mount too) refused
            # past file_bytes by the kernel; docker's own log of its stdout capped
            ulimits=[Ulimit(name="fsize", soft=limits.value("file_bytes"), hard=limits.value("file_bytes"))],
            log_config=LogConfig(type="json-file", config=DOCKER_LOG),
        )

    def reproduce_command(self, ws: Workspace, command: str, *, network: bool) -> str:
        """Inside the same image, with the job's isolation (user, no capabilities, no new
        privileges, limits, read-only root, tmpfs /tmp, init): a fetch/install step with the
        network, the pip cache volume of the job's release and the host's CA bundle, as the job
        had them; a test step without the network."""
        argv = [
            "docker",
            "run",
            "--rm",
            *(("--network", self.network) if network and self.network != "bridge" else ()),
            *(() if network else ("--network", "none")),
            "--user",
            f"{self.uid}:{self.gid}",
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges",
            "--pids-limit",
            str(self.pids_limit),
            "--memory",
            self.mem_limit,
            "--memory-swap",
            self.mem_limit,
            "--cpus",
            f"{self.cpus:g}",
            "--read-only",
            "--tmpfs",
            f"/tmp:rw,exec,nosuid,size={self.tmpfs_size}",
            "--init",
            "--ulimit",
            f"fsize={limits.value('file_bytes')}",
            "--log-driver",
            "json-file",
            *(f"--log-opt={k}={v}" for k, v in DOCKER_LOG.items()),
            "-v",
            f"{ws.host_root}:{ws.root}",
        ]
        job_id = self._job_id(ws)
        for host, m in self.job_mounts.get(job_id, {}).items():
            argv += ["-v", f"{host}:{m['bind']}:{m.get('mode', 'rw')}"]
        for k, v in self.job_env.get(job_id, {}).items():
            argv += ["-e", f"{k}={v}"]
        if network:
            argv += (
                ["-v", f"{pip_cache_volume(job_id, ws.release)}:{PIP_CACHE}"]
                if ws.release
                else ["-e", "PIP_NO_CACHE_DIR=1"]
            )
            if self.ca_bundle:
                argv += [
                    "-v",
                    f"{self.ca_bundle}:{CA_IN_CONTAINER}:ro",
                    "-e",
                    f"PIP_CERT={CA_IN_CONTAINER}",
                    "-e",
                    f"SSL_CERT_FILE={CA_IN_CONTAINER}",
                ]
        return shlex.join([*argv, ws.image or self.image, "sh", "-c", command])
