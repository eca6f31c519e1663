"""Installed interpreters (``source: python:PATH``) on the docker backend.

Nothing is built: the interpreter's prefix (the directory above its real executable's ``bin/``)
is bind-mounted read-only at ``MOUNT`` in the runtime image (containers/runtime.Dockerfile: the
base, the build dependencies and the per-job user, no CPython), the same for every job of it.
At a fixed path, not the host's: a prefix under a home directory the container user cannot
traverse (``/root``) is reachable there, and nothing else of the host's tree is named.

It is checked twice: on the host (``interpreters.use_installed``: found, free-threaded, the
version asked for, and its key) and in the runtime image with its mount, by the same
``pycheck.check_facts``, plus "the same build as the host's" (version and ``-VV`` line).  When
it cannot start there, the error is one line naming the missing shared library.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import re
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import BuildError
from ..core.jobspec import Interpreter
from ..core.model import InterpreterInfo
from ..core.progress import Heartbeat, no_heartbeat
from . import interpreters
from .images import CONTAINERS, LABEL, PACKAGE_BUILD_DEPS, ImageRef, _find, build_args, daemon_error, ensure_base

log = logging.getLogger(__name__)

RUNTIME_DOCKERFILE = CONTAINERS / "runtime.Dockerfile"
RUNTIME_REPO = "ft-harness/runtime"
MOUNT = "/opt/ft-installed"
# What the image's own directories are: a prefix there would hide them (or the host's system).
SYSTEM_DIRS = frozenset({"/", "/usr", "/bin", "/lib", "/etc", "/var", "/opt", "/home", "/root", "/tmp"})
MISSING_LIB = re.compile(r"error while loading shared libraries: ([^:\s]+): (.+)")


@dataclass(frozen=True, kw_only=True)
class Mounted:
    """An installed interpreter as the docker backend runs it."""

    info: InterpreterInfo  # python: the path in the container
    python: str  # MOUNT/bin/<its own name>
    image: str  # the runtime image
    mounts: dict[str, dict[str, str]]  # host prefix -> {"bind": MOUNT, "mode": "ro"}
    env: dict[str, str]  # LD_LIBRARY_PATH for a --enable-shared build, else nothing


def runtime_tag(base: str) -> str:
    blob = json.dumps(
        {
            "base": base,
            "deps": interpreters.BUILD_DEPS,
            "tools": interpreters.TEST_TOOLS,
            "package_deps": PACKAGE_BUILD_DEPS,
            "dockerfile": hashlib.sha256(RUNTIME_DOCKERFILE.read_bytes()).hexdigest(),
        }
    )
    return f"{RUNTIME_REPO}:{hashlib.sha256(blob.encode()).hexdigest()[:12]}"


def ensure_runtime_image(client, cache: Path, *, heartbeat: Heartbeat = no_heartbeat) -> ImageRef:
    """The runtime image on the current base; built only when missing."""
    base = ensure_base(client, cache, heartbeat=heartbeat)
    tag = runtime_tag(base.tag)
    img = _find(client, tag)
    if img is not None:
        return ImageRef(tag=tag, reused=True, id=img.id)
    log_path = cache / "images" / f"runtime-{tag.split(':')[1]}.build.log"
    with interpreters.build_lock(cache / "images" / f"runtime-{tag.split(':')[1]}.lock"):
        img = _find(client, tag)
        if img is not None:
            return ImageRef(tag=tag, reused=True, id=img.id)
        started = time.monotonic()
        _build(client, tag, base.tag, log_path, heartbeat)
        img = _find(client, tag)
    if img is None:
        raise BuildError(f"building image {tag} gave no image; see {log_path}")
    return ImageRef(tag=tag, reused=False, id=img.id, seconds=time.monotonic() - started)


def _build(client, tag: str, base: str, log_path: Path, heartbeat: Heartbeat = no_heartbeat) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        tf.add(RUNTIME_DOCKERFILE, arcname="Dockerfile")
    buf.seek(0)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    error = ""
    try:
        stream = client.api.build(
            fileobj=buf,
            custom_context=True,
            tag=tag,
            rm=True,
            forcerm=True,
            decode=True,
            pull=False,
            labels={f"{LABEL}.kind": "runtime", f"{LABEL}.base": base},
            buildargs=build_args(base),
        )
        with open(log_path, "w") as logf, heartbeat(f"building image {tag} (log {log_path})"):
            for chunk in stream:
                if "stream" in chunk:
                    logf.write(chunk["stream"])
                elif "error" in chunk:
                    error = chunk["error"].strip()
                    logf.write(f"ERROR: {error}\n")
    except Exception as e:
        raise daemon_error(e) from None
    if error:
        raise BuildError(f"building image {tag}: {error.splitlines()[-1]}; see {log_path}")


def prefix_of(python: Path) -> Path:
    """The installation an executable belongs to: above the ``bin/`` of its real file (a venv's
    ``bin/python`` and a ``python3`` link lead to the installation itself)."""
    real = Path(python).resolve()
    return real.parent.parent


def why_not_started(output: str) -> str:
    """What the dynamic loader or the interpreter said when it did not start, in a few words."""
    m = MISSING_LIB.search(output)
    if m:
        return f"the shared library {m.group(1)} is missing there ({m.group(2).strip()})"
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


def mount_installed(client, interp: Interpreter, cache: Path, *, heartbeat: Heartbeat = no_heartbeat) -> Mounted:
    """Check ``interp`` (a ``python:`` source) on the host and in the runtime image; what the
    backend mounts.  ConfigError at the matrix line for anything wrong with the interpreter."""
    built = interpreters.use_installed(interp)  # found, free-threaded, the version asked for
    what = f".source {interp.source.describe()}"
    prefix = prefix_of(built.python)
    if str(prefix) in SYSTEM_DIRS:
        raise interp.fail(
            f"{what}: its prefix is {prefix}, a system directory, which the docker "
            "backend does not mount over the image's; use a self-contained install "
            "(setup-python's, uv's, a build with --prefix) or --backend local"
        )
    if not (prefix / "bin" / built.info.python_name).exists():
        raise interp.fail(
            f"{what}: {prefix}/bin has no {built.info.python_name}, so the installation cannot be mounted as a whole"
        )
    runtime = ensure_runtime_image(client, cache, heartbeat=heartbeat)
    mounts = {str(prefix): {"bind": MOUNT, "mode": "ro"}}
    env = {"LD_LIBRARY_PATH": f"{MOUNT}/lib"} if any((prefix / "lib").glob("libpython3*.so*")) else {}
    python = f"{MOUNT}/bin/{built.info.python_name}"
    facts = _check_inside(client, runtime.tag, python, mounts, env, interp, what)
    host = built.info
    if (facts.get("full_version"), str(facts.get("vv", "")).replace("\n", " ")) != (host.full_version, host.vv):
        raise interp.fail(f"{what} says {facts.get('vv')!r} in the docker image, {host.vv!r} here")
    info = interpreters.info_from_facts(interp, key=host.key, python=python, facts=facts, installed=True)
    if not info.tag_pairs:  # no pip inside to compute tags with: the host's (same build)
        from dataclasses import replace

        info = replace(info, tag_pairs=host.tag_pairs, platforms=host.platforms)
    log.info("interpreter %s: installed %s, mounted at %s in %s", interp.name, prefix, MOUNT, runtime.tag)
    return Mounted(info=info, python=python, image=runtime.tag, mounts=mounts, env=env)


def _check_inside(
    client, image: str, python: str, mounts: dict, env: dict[str, str], interp: Interpreter, what: str
) -> dict:
    import docker.errors

    try:
        container = client.containers.create(
            image,
            [python, "-c", interpreters.CHECK_SCRIPT],
            environment={"PYTHON_GIL": "0", **env},
            volumes=mounts,
            network_mode="none",
            user="1000:1000",
            read_only=True,
            tmpfs={"/tmp": "rw,size=64m"},
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            labels={f"{LABEL}.kind": "check"},
        )
    except docker.errors.ImageNotFound:
        raise BuildError(f"docker image {image} is missing (run `ft-harness image`)") from None
    except Exception as e:
        raise daemon_error(e) from None
    try:
        container.start()
        code = container.wait(timeout=120).get("StatusCode")
        out = container.logs(stdout=True, stderr=False).decode(errors="replace")
        err = container.logs(stdout=False, stderr=True).decode(errors="replace")
    except Exception as e:
        raise daemon_error(e) from None
    finally:
        try:
            container.remove(force=True)
        except Exception as e:  # noqa: BLE001 - a leftover check container is `clean`'s
            log.debug("removing the check container: %s", e)
    if code != 0:
        raise interp.fail(
            f"{what} does not start in the docker image {image} (exit {code}): {why_not_started(err or out)}"
        )
    try:
        facts = json.loads(out)
    except json.JSONDecodeError:
        raise interp.fail(
            f"{what} printed no interpreter facts in the docker image {image}: {why_not_started(err or out)}"
        ) from None
    problem = interpreters.check_facts(facts, interp, f"{what} (in the docker image)")
    if problem:
        raise interp.fail(problem)
    if facts.get("base_prefix") != MOUNT:
        raise interp.fail(
            f"{what} takes its prefix to be {facts.get('base_prefix')!r} in the "
            f"docker image, not {MOUNT}: it is not relocatable; use --backend local"
        )
    return facts
