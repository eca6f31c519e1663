"""Docker backend: every command of a job runs in its own hardened container.

The job's host directory (OUT/work/<job_id>) is bind-mounted at /work, so the venv,
logs and JUnit files written inside are plain files on the host, parsed there by the
same code as the local backend.  The backend only runs commands and returns Exec.

What each container is (its user, limits, mounts, network and pip cache) is
harness.backends.dockerconfig's; here, a job's workspace opened, each command's container
created, watched to its end (the deadline, a stalled log, a full workspace) and removed, and
every container of a job or of the run removed when it is closed or cancelled.

The shared wheel store (``harness.store.wheelstore``; docker's own, ``<cache>/wheels/docker``:
never what a local run stored) is mounted read-only at /cache/wheels in every container of
every job; only ``run_isolated`` (one sdist's build: no workspace, no pip cache, its output dir
the one writable mount) makes what goes into it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO

from ..core import logcap
from ..core.errors import InfraError
from ..core.model import Exec
from ..core.stored import IN_CONTAINER as STORE_IN_CONTAINER
from ..core.wsfs import JobDir
from ..interpreters.images import clean, daemon_error, docker_client
from .base import (
    STACKS_GAP,
    STACKS_MAX,
    STACKS_SIGNAL,
    STACKS_WAIT,
    Quiet,
    Workspace,
    asked_note,
    file_limit,
    job_dir,
    killed_note,
)
from .diskuse import DiskWatch
from .dockerconfig import LABEL, ROOT, ContainerConfig
from .pipcache import PIP_CACHE, bound_pip_cache, clean_caches, pip_cache_volume

__all__ = ["DockerBackend", "clean_caches", "docker_available", "pip_cache_volume"]

log = logging.getLogger(__name__)

SOURCE_RO = "/source"
ISOLATED_OUT = "/out"  # run_isolated's one writable mount
# TMPDIR of every command, on the host's disk below its writable mount, not the 1 GiB tmpfs /tmp
# (RAM, inside the memory cap): grpcio 1.85.4's C++ build filled /tmp ("No space left on device")
# where a CI runner's /tmp is its disk (#43). Below the workspace it counts to workspace_bytes.
TMP = ".tmp"
# in a stalled container: each process but the init (1) and the shell itself, in turn, at most
# STACKS_MAX (the shell's glob sorts them as text: by pid only while they have as many digits)
ASK_STACKS = (
    'n=0; for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = 1 ] || [ "$p" = $$ ] || '
    '{ [ $n -lt %d ] || break; n=$((n+1)); kill -%d "$p" 2>/dev/null; sleep %s; }; done'
)
POLL = 5.0  # seconds between checks of a running container (also bounds close() latency)
STOP_PROBE = 10.0  # after an outside SIGTERM/SIGKILL: how long to watch for a daemon going away


def docker_available() -> tuple[bool, str]:
    """(True, engine version) when a docker engine answers, else (False, the reason)."""
    try:
        client = docker_client(timeout=5)
        version = client.version().get("Version", "?")
        client.close()
        return True, f"docker engine {version}"
    except InfraError as e:
        return False, str(e)


class DockerBackend(ContainerConfig):
    """Runs each command of a job in a container of its own (harness.backends.dockerconfig: its
    settings, given to the constructor, and what each container is made of)."""

    name = "docker"
    base_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # Debian's, the base image's

    # ---------------------------------------------------------------- setup

    def open(self, job_id: str, host_root: Path, python: str, source: str) -> Workspace:
        """``python`` is the interpreter's path inside the job's image (``job_images``)."""
        host_root = Path(host_root).resolve()
        host_root.mkdir(parents=True, exist_ok=True)
        with JobDir(host_root) as fs:  # before any package code ran
            self._own(fs)
        mounts = {**self.job_mounts.get(job_id, {}), str(host_root): {"bind": ROOT, "mode": "rw"}}
        if self.wheel_store is not None:  # made by the host, so docker never makes it as root
            self.wheel_store.mkdir(parents=True, exist_ok=True)
            mounts[str(self.wheel_store)] = {"bind": STORE_IN_CONTAINER, "mode": "ro"}
        seen_source = ""
        if source:
            src = Path(source).resolve()
            if src == host_root or host_root in src.parents:
                seen_source = f"{ROOT}/{src.relative_to(host_root)}".rstrip("/.")
            else:
                mounts[str(src)] = {"bind": SOURCE_RO, "mode": "ro"}
                seen_source = SOURCE_RO
        with self._lock:
            self._live.setdefault(job_id, set())
            self._closed.discard(job_id)
            self._mounts[job_id] = mounts
            self._jobs[str(host_root)] = job_id
        return Workspace(
            host_root=host_root,
            root=ROOT,
            python=python,
            source=seen_source,
            pip_cache=PIP_CACHE,
            image=self.job_images.get(job_id, self.image),
            wheel_store=STORE_IN_CONTAINER if self.wheel_store else "",
            wheel_host=self.wheel_store,
        )

    # ---------------------------------------------------------------- running

    def run(
        self,
        ws: Workspace,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: str,
        timeout: float,
        log: Path,
        network: bool,
        idle: float = 0,
    ) -> Exec:
        job_id = self._job_id(ws)
        with self._lock:
            if job_id in self._closed or self._cancelled:
                return Exec(exit_code=None, infra="job was closed (interrupted)")
        log = Path(log)
        log_in = self._in_container(ws, log)
        with job_dir(ws) as fs:
            try:  # the host's own handle on the log (job._run made it): read for its size,
                # appended to below; never reached by its name again
                rel = fs.rel(log)
                if "/" in rel:
                    fs.makedirs(rel.rsplit("/", 1)[0])
                log_fd = fs.open_append(rel)
                fs.makedirs(TMP)
            except (OSError, ValueError) as e:
                return Exec(exit_code=None, infra=f"cannot open the log {log.name}: {e}")
            self._own(fs)  # the log and its directory too: the container's user appends to it
        with os.fdopen(log_fd, "ab") as log_file:
            return self._run(
                ws,
                job_id,
                argv,
                env=env,
                cwd=cwd,
                timeout=timeout,
                log_in=log_in,
                log_file=log_file,
                network=network,
                idle=idle,
                tmpdir=f"{ROOT}/{TMP}",
            )

    def isolated_out(self, out: Path) -> str:
        return ISOLATED_OUT

    def run_isolated(
        self, ws: Workspace, argv: list[str], *, env: dict[str, str], timeout: float, log: Path, out: Path
    ) -> Exec:
        """A container of its own: the interpreter's read-only mounts and ``out`` at /out, the only
        writable place besides its tmpfs /tmp; no workspace, no pip cache, no wheel store; the
        network on. Its output reaches ``log`` through docker's log stream."""
        job_id = self._job_id(ws)
        with self._lock:
            if job_id in self._closed or self._cancelled:
                return Exec(exit_code=None, infra="job was closed (interrupted)")
        try:
            with job_dir(ws) as fs:
                log_fd = fs.open_append(fs.rel(Path(log)))
            (Path(out) / TMP).mkdir(exist_ok=True)  # a fresh scratch dir: no package code ran in it yet
            if os.geteuid() == 0:
                os.chown(out, self.uid, self.gid)
                os.chown(Path(out) / TMP, self.uid, self.gid)
        except (OSError, ValueError) as e:
            return Exec(exit_code=None, infra=f"cannot open the log {Path(log).name}: {e}")
        only = {**self.job_mounts.get(job_id, {}), str(out): {"bind": ISOLATED_OUT, "mode": "rw"}}
        with os.fdopen(log_fd, "ab") as log_file:
            return self._run(
                ws,
                job_id,
                argv,
                env=env,
                cwd=ISOLATED_OUT,
                timeout=timeout,
                log_in=None,
                log_file=log_file,
                network=True,
                idle=0,
                only=only,
                tmpdir=f"{ISOLATED_OUT}/{TMP}",
                watch=Path(out),
            )

    def _run(
        self,
        ws: Workspace,
        job_id: str,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: str,
        timeout: float,
        log_in: str | None,
        log_file: BinaryIO,
        network: bool,
        idle: float,
        only: dict[str, dict[str, str]] | None = None,
        tmpdir: str = "/tmp",
        watch: Path | None = None,
    ) -> Exec:
        config = self._config(ws, argv, env, cwd, log_in, network, only, tmpdir)
        started = time.monotonic()
        try:
            container = self.client.containers.create(**config)
        except Exception as e:
            raise self._create_failed(e, ws.image or self.image) from None
        with self._lock:
            closed = job_id in self._closed or self._cancelled
            self._live.setdefault(job_id, set()).add(container.id)
        try:
            if closed:
                return Exec(exit_code=None, infra="job was closed (interrupted)")
            container.start()
            # the log grows on the host only when the container writes it through the mount
            quiet = Quiet(log_file.fileno(), idle if log_in is not None else 0)
            disk = DiskWatch(ws.host_root if only is None else watch)  # run_isolated: its own out dir
            timed_out = self._wait(container, started + timeout, quiet, disk)
            duration = time.monotonic() - started
            full = disk.over()
            timed_out = timed_out and not full
            stalled = timed_out and duration < timeout  # ended before its deadline: the log stalled
            if stalled:  # its stacks first, from outside: the process cannot help
                self._ask_stacks(container, log_file, idle)
            if timed_out or full:
                with contextlib.suppress(Exception):
                    container.kill()
                self._wait(container, time.monotonic() + 30)
            with self._lock:
                closed = job_id in self._closed or self._cancelled
            if closed:  # close()/cancel() removed it under us: not the command's outcome
                return Exec(
                    exit_code=None,
                    duration=time.monotonic() - started,
                    infra="job was closed (interrupted) while running",
                )
            state = self._state(container)
            if not timed_out:
                self._check_external_stop(state)
            self._collect_logs(container, log_file)
            if timed_out:  # the same note as the local backend
                log_file.write(killed_note(duration, timeout, idle if stalled else 0))
            if full:
                log_file.write(f"\n[ft-harness] killed: limit {disk.note()}\n".encode())
        except InfraError:
            raise
        except Exception as e:
            if self._gone(container):
                return Exec(
                    exit_code=None,
                    duration=time.monotonic() - started,
                    infra="container was removed while running (job closed)",
                )
            raise daemon_error(e) from None
        finally:
            self._remove(job_id, container)
        ex = self._outcome(state, timed_out, duration)
        return replace(ex, limit=disk.note() if full else file_limit(log_file.fileno(), ex.signal))

    @staticmethod
    def _ask_stacks(container, log_file: BinaryIO, idle: float) -> None:
        """Every process of the container but its init asked for its stacks (``STACKS_SIGNAL``),
        one at a time, by a shell ``docker exec`` starts in it as the container's user; the
        dumps reach the log through the mount. docker's own ``kill --signal`` reaches only the
        init, which passes it to its one child: an xdist worker, where a test hangs, never."""
        log_file.write(asked_note(idle))
        log_file.flush()
        with contextlib.suppress(Exception):
            container.exec_run(
                ["/bin/sh", "-c", ASK_STACKS % (STACKS_MAX, STACKS_SIGNAL, STACKS_GAP)], stdout=False, stderr=False
            )
        time.sleep(STACKS_WAIT)

    @staticmethod
    def _create_failed(e: Exception, image: str) -> InfraError:
        import docker.errors

        if isinstance(e, docker.errors.ImageNotFound):
            return InfraError(f"docker image {image} is missing (run `ft-harness image`)")
        return daemon_error(e)

    def _check_external_stop(self, state: dict) -> None:
        """A SIGTERM/SIGKILL we did not send may be the daemon shutting down (it stops every
        container first, then exits): then it is InfraError, not the package's signal."""
        code = state.get("ExitCode")
        if state.get("OOMKilled") or code not in (128 + 9, 128 + 15):
            return
        deadline = time.monotonic() + STOP_PROBE
        while time.monotonic() < deadline:
            try:
                self.client.ping()
            except Exception as e:
                raise daemon_error(e) from None
            time.sleep(0.25)

    def _wait(self, container, deadline: float, quiet: Quiet | None = None, disk: DiskWatch | None = None) -> bool:
        """Wait for the container to stop; True when the deadline passed first, its log
        stalled (``quiet``) or its workspace went past ``workspace_bytes`` (``disk``)."""
        watch = (quiet is not None and quiet.seconds) or (disk is not None and disk.root is not None)
        step = 1.0 if watch else POLL  # a log or a workspace to watch: look often
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or (quiet is not None and quiet.stalled()) or (disk is not None and disk.over()):
                return True
            try:
                container.wait(timeout=max(0.25, min(step, left, disk.due() if disk is not None else step)))
                return False
            except Exception:
                # A read timeout (still running) or a daemon that went away: ask again.
                state = self._state(container)
                if state.get("Status") not in ("running", "created", "restarting"):
                    return False

    def _state(self, container) -> dict:
        import docker.errors

        try:
            return self.client.api.inspect_container(container.id)["State"]
        except docker.errors.NotFound:
            raise _Removed() from None
        except Exception as e:
            raise daemon_error(e) from None

    def _gone(self, container) -> bool:
        try:
            self._state(container)
            return False
        except _Removed:
            return True
        except InfraError:
            return False

    def _collect_logs(self, container, log_file: BinaryIO) -> None:
        """Whatever reached docker's log (the command's output, or the shell's own error)."""
        try:  # a stream, read up to log_bytes: package code can flood PID 1's stdout
            stream = container.logs(stdout=True, stderr=True, stream=True, follow=False)
            try:
                data = logcap.capped(stream)
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
        except Exception:
            data = b""
        if data:
            log_file.write(data)

    @staticmethod
    def _outcome(state: dict, timed_out: bool, duration: float) -> Exec:
        code = state.get("ExitCode")
        oom = bool(state.get("OOMKilled"))
        if timed_out:
            return Exec(exit_code=None, timed_out=True, oom_killed=oom, duration=duration)
        signal = code - 128 if isinstance(code, int) and 128 < code < 128 + 65 else None
        return Exec(exit_code=code, signal=signal, oom_killed=oom, duration=duration, infra=state.get("Error") or "")

    def _remove(self, job_id: str, container) -> None:
        with contextlib.suppress(Exception):
            container.remove(force=True)
        with self._lock:
            self._live.get(job_id, set()).discard(container.id)

    # ---------------------------------------------------------------- closing

    def close(self, ws: Workspace) -> None:
        """Remove every container of the job (also ones a run() is waiting on). Idempotent."""
        job_id = self._job_id(ws)
        with self._lock:
            self._closed.add(job_id)
            ids = set(self._live.get(job_id, set()))
        flt = {"label": [f"{LABEL}.run={self.run_id}", f"{LABEL}.job={job_id}"]}
        try:
            ids |= {c.id for c in self.client.containers.list(all=True, filters=flt)}
        except Exception as e:
            log.warning("listing containers of %s: %s", job_id, e)
        for cid in ids:
            with contextlib.suppress(Exception):
                self.client.api.remove_container(cid, force=True)
        with self._lock:
            self._live.pop(job_id, None)
            self._mounts.pop(job_id, None)
            cancelled = self._cancelled
        if ws.release and not cancelled:  # its pip cache kept only within pip_cache_bytes (#56)
            name = pip_cache_volume(job_id, ws.release)
            said = bound_pip_cache(self.client, name, ws.image or self.image, f"{self.uid}:{self.gid}", self._pip_kept)
            if said:
                log.warning("%s: %s", job_id, said)

    def close_all(self) -> list[str]:
        """Remove every container and volume of this run (for SIGINT/exit); idempotent."""
        with self._lock:
            self._closed.update(self._live)
        return clean(self.client, self.run_id)

    def cancel(self) -> None:
        """SIGINT/SIGTERM of the harness: no new commands, every running container removed.

        A run() waiting on a removed container returns Exec(infra=...) within POLL seconds.
        """
        with self._lock:
            self._cancelled = True
        try:
            self.close_all()
        except InfraError as e:
            log.warning("cleaning up after cancel: %s", e)

    def healthy(self) -> bool:
        """False once the daemon stops answering (the runner then stops the run)."""
        try:
            self.client.ping()
            return True
        except Exception:
            return False


class _Removed(Exception):
    """The container disappeared (close() removed it)."""
