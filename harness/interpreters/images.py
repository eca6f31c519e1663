"""Docker images for the docker backend, built from scratch (no image registry needed).

- base:        ``debootstrap --variant=minbase`` of Debian (containers/bootstrap-base.sh),
               streamed into ``docker import``; tagged ``ft-harness/base:<suite>-<digest>``
               where the digest covers the suite, the mirror, the package list and the script.
- interpreter: FROM the base, the same BUILD_DEPS, the same source tarball and the same
               configure/make/install commands as the local builder (harness.interpreters.interpreters),
               prefix /opt/python; plus the per-job runtime (user ``ft`` uid 1000, /work).
               Tagged ``ft-harness/interp:<interpreter key>-<digest>`` (the digest: its
               Dockerfile, build deps and test tools), labelled with its inputs.

Each image is built only when missing (or when the base it was built on changed).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.resources
import io
import json
import logging
import os
import shlex
import shutil
import subprocess
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import BuildError, InfraError
from ..core.jobspec import Interpreter
from ..core.model import InterpreterInfo
from ..core.progress import Heartbeat, no_heartbeat
from . import interpreters

log = logging.getLogger(__name__)


def _containers() -> Path:
    """containers/ as the wheel ships it (harness/containers, mapped by setup.py), or the
    checkout's top-level containers/ when harness runs from the source tree or an editable install."""
    shipped = Path(str(importlib.resources.files("harness") / "containers"))
    return shipped if shipped.is_dir() else Path(__file__).resolve().parent.parent.parent / "containers"


CONTAINERS = _containers()
BOOTSTRAP = CONTAINERS / "bootstrap-base.sh"
# what debootstrap checks the suite's signed Release file with (apt-get install debian-archive-keyring)
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
DOCKERFILE = CONTAINERS / "interpreter.Dockerfile"
BASE_REPO = "ft-harness/base"
INTERP_REPO = "ft-harness/interp"
BASE_SUITE = "trixie"
BASE_PACKAGES = ("ca-certificates", "python3")
PREFIX = "/opt/python"
# What the packages' own builds need, as a CI runner has it (issue #43): compilers for C, C++ and
# Fortran (gfortran: scipy, f2py/meson Fortran extensions), Debian's Rust toolchain of the image's
# suite (rustc, cargo: maturin and setuptools-rust projects; crates still come from crates.io),
# the build tools sdists call (cmake, ninja; meson comes from PyPI as a build requirement), and
# the development libraries the top compiled projects link against. One entry per line, a
# comment naming who needs it; installed in the images' last package layer (after the
# interpreter's build, so a change here does not rebuild CPython) and documented for
# ``--backend local`` hosts in docs/howto/build-environment.md (a unit test keeps the two equal).
# harness.parse.buildenv maps a missing header/library/tool back to these names.
PACKAGE_BUILD_DEPS = (
    "gfortran",  # Fortran: scipy, f2py / meson Fortran extensions
    "rustc",  # Rust: pydantic-core, rpds-py, cryptography, orjson, jiter, ...
    "cargo",
    "cmake",  # scikit-build(-core) and CMake-driven setup.py
    "ninja-build",
    "pkg-config",  # meson and setup.py's library lookups
    "patchelf",  # maturin's wheel repair of linked libraries
    "libyaml-dev",  # pyyaml (yaml._yaml)
    "libjpeg-dev",  # pillow (required), ...
    "libpng-dev",
    "zlib1g-dev",  # pillow (required), lxml, ...
    "libtiff-dev",  # pillow
    "libwebp-dev",  # pillow
    "libfreetype-dev",  # pillow, matplotlib
    "liblcms2-dev",  # pillow
    "libopenjp2-7-dev",  # pillow
    "libxml2-dev",  # lxml
    "libxslt1-dev",  # lxml
    "libopenblas-dev",  # numpy, scipy (BLAS/LAPACK)
    "liblapack-dev",
    "libgeos-dev",  # shapely
    "libsodium-dev",  # pynacl
    "libpq-dev",  # psycopg2, psycopg-c
    "libzstd-dev",  # zstandard, pyzstd
    "liblz4-dev",  # lz4
    "libsnappy-dev",  # python-snappy
    "libbrotli-dev",  # brotli, brotlicffi
    "libffi-dev",  # cffi
    "libssl-dev",  # cryptography, psycopg, ...
)
LABEL = "ft-harness"  # every image, container and volume of ours carries ft-harness.* labels


@dataclass(frozen=True, kw_only=True)
class ImageRef:
    tag: str
    reused: bool
    key: str = ""  # the interpreter key (interpreter images only)
    python: str = ""  # the free-threaded interpreter inside the image (named by itself)
    id: str = ""
    seconds: float = 0.0  # build time; 0 when reused
    info: InterpreterInfo | None = None  # what the image's interpreter said (interpreter images)


def daemon_error(e: BaseException) -> InfraError:
    """One line for the CLI: the engine refused something, or it does not answer at all.

    The one helper for every docker call of the harness (images here, containers in
    harness.backends.docker)."""
    try:
        import docker.errors

        if isinstance(e, docker.errors.APIError) and e.response is not None:
            return InfraError(f"docker engine error: {e.explanation or e}")
    except ImportError:
        pass
    text = str(e).strip().splitlines()
    return InfraError(f"docker daemon is not answering: {text[0] if text else type(e).__name__}")


def docker_client(timeout: int = 60):  # a docker.DockerClient (the SDK is imported lazily)
    """The one way the harness reaches the local engine: a client that answered a ping, or
    InfraError in one line (also when the docker SDK is not installed)."""
    try:
        import docker
    except ImportError:
        raise InfraError("the docker SDK for Python is not installed (pip install docker)") from None
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
        return client
    except Exception as e:  # any failure to reach the daemon is the same to the user
        raise daemon_error(e) from None


def _find(client, tag: str):
    import docker.errors

    try:
        return client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    except Exception as e:  # DockerException, OSError, requests' ConnectionError and friends
        raise daemon_error(e) from None


# ------------------------------------------------------------------ base image


def base_inputs(suite: str = BASE_SUITE, mirror: str | None = None) -> dict[str, str]:
    """Everything the base image depends on; its tag is a digest of this."""
    return {
        "suite": suite,
        "mirror": mirror or interpreters._debian_mirror(),
        "packages": ",".join(BASE_PACKAGES),
        "script": hashlib.sha256(BOOTSTRAP.read_bytes()).hexdigest(),
    }


def base_tag(inputs: dict[str, str]) -> str:
    blob = json.dumps(inputs, sort_keys=True).encode()
    return f"{BASE_REPO}:{inputs['suite']}-{hashlib.sha256(blob).hexdigest()[:12]}"


def ensure_base(
    client, cache: Path, *, suite: str = BASE_SUITE, mirror: str | None = None, heartbeat: Heartbeat = no_heartbeat
) -> ImageRef:
    """The base image for ``suite``; debootstrapped and imported only when missing."""
    inputs = base_inputs(suite, mirror)
    tag = base_tag(inputs)
    img = _find(client, tag)
    if img is not None:
        log.info("reused image %s", tag)
        return ImageRef(tag=tag, reused=True, id=img.id)
    images = cache / "images"
    with interpreters.build_lock(images / f"{tag.replace('/', '_').replace(':', '_')}.lock"):
        img = _find(client, tag)
        if img is not None:
            log.info("reused image %s (built concurrently)", tag)
            return ImageRef(tag=tag, reused=True, id=img.id)
        started = time.monotonic()
        image_id = _bootstrap_and_import(client, tag, inputs, images, heartbeat)
        took = time.monotonic() - started
    log.info("built image %s in %.0f s", tag, took)
    return ImageRef(tag=tag, reused=False, id=image_id, seconds=took)


def _bootstrap_and_import(
    client, tag: str, inputs: dict[str, str], images: Path, heartbeat: Heartbeat = no_heartbeat
) -> str:
    if shutil.which("debootstrap") is None:
        raise BuildError("building the base image needs debootstrap (apt-get install debootstrap)")
    if not KEYRING.is_file():
        raise BuildError(
            f"building the base image needs the Debian archive keyring at {KEYRING}, which "
            "debootstrap checks the mirror's packages with (apt-get install debian-archive-keyring)"
        )
    root = images / f".root-{os.getpid()}"
    log_path = images / f"{tag.split(':')[1]}.bootstrap.log"
    shutil.rmtree(root, ignore_errors=True)
    images.mkdir(parents=True, exist_ok=True)
    try:
        argv = ["sh", str(BOOTSTRAP), str(root), inputs["suite"], inputs["mirror"], inputs["packages"], str(KEYRING)]
        log.info("bootstrapping %s: %s", tag, " ".join(argv))
        what = f"building the base image {tag} (debootstrap {inputs['suite']}; log {log_path})"
        with open(log_path, "w") as logf, heartbeat(what):
            r = subprocess.run(argv, stdout=logf, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            raise BuildError(f"debootstrap of {inputs['suite']} exited {r.returncode}; see {log_path}")
        repo, _, version = tag.partition(":")
        changes = [
            "ENV LANG=C.UTF-8",
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            'CMD ["/bin/sh"]',
            f"LABEL {LABEL}.kind=base",
            *(f"LABEL {LABEL}.{k}={v}" for k, v in inputs.items()),
        ]
        tar = subprocess.Popen(["tar", "--numeric-owner", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        try:
            answer = client.api.import_image_from_stream(tar.stdout, repository=repo, tag=version, changes=changes)
        except Exception as e:
            tar.kill()
            raise daemon_error(e) from None
        finally:
            tar.wait()
        if tar.returncode != 0:
            raise BuildError(f"tar of the bootstrapped root exited {tar.returncode}")
        img = _find(client, tag)
        if img is None:
            raise BuildError(f"docker import did not produce {tag}: {answer!r}")
        return img.id
    finally:
        shutil.rmtree(root, ignore_errors=True)


# ------------------------------------------------------------------ interpreter image


def interpreter_tag(key: str) -> str:
    """The interpreter's build key, then what else makes the image: its Dockerfile and the
    Debian packages it installs (a changed one is a new image, never a stale cached one)."""
    blob = json.dumps(
        {
            "dockerfile": hashlib.sha256(DOCKERFILE.read_bytes()).hexdigest(),
            "deps": interpreters.BUILD_DEPS,
            "tools": interpreters.TEST_TOOLS,
            "package_deps": PACKAGE_BUILD_DEPS,
        }
    )
    return f"{INTERP_REPO}:{key}-{hashlib.sha256(blob.encode()).hexdigest()[:8]}"


def build_args(base: str) -> dict[str, str]:
    """The Dockerfiles' ARGs (interpreter.Dockerfile and runtime.Dockerfile declare the same)."""
    return {
        "BASE": base,
        "BUILD_DEPS": " ".join(interpreters.BUILD_DEPS),
        "TEST_TOOLS": " ".join(interpreters.TEST_TOOLS),
        "PACKAGE_BUILD_DEPS": " ".join(PACKAGE_BUILD_DEPS),
    }


def build_script(interp: Interpreter, jobs: int) -> str:
    """build.sh: extract the tarball, then exactly the local builder's commands."""
    src = "/tmp/ft-build/src"
    lines = [
        "set -eu",
        f"mkdir -p {src}",
        f"tar -xf /tmp/ft-build/source.tar -C {src} --strip-components=1",
        f"cd {src}",
    ]
    for key, value in interpreters.build_env(interp).items():
        lines.append(f"export {key}={shlex.quote(value)}")
    for argv in interpreters.build_commands(src, PREFIX, interp.configure_flags, jobs):
        lines.append(shlex.join(argv))
    return "\n".join(lines) + "\n"


def _context(interp: Interpreter, tarball: Path, jobs: int) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        tf.add(DOCKERFILE, arcname="Dockerfile")
        tf.add(tarball, arcname="source.tar")
        script = build_script(interp, jobs).encode()
        info = tarfile.TarInfo("build.sh")
        info.size = len(script)
        info.mode = 0o755
        tf.addfile(info, io.BytesIO(script))
    buf.seek(0)
    return buf


def ensure_interpreter_image(
    client, interp: Interpreter, cache: Path, *, jobs: int | None = None, heartbeat: Heartbeat = no_heartbeat
) -> ImageRef:
    """The interpreter image for ``interp``; built only when missing or its base changed."""
    base = ensure_base(client, cache, suite=BASE_SUITE, heartbeat=heartbeat)
    tarball = interpreters.fetch_source(interp, cache)
    key = interpreters.build_key(interp, tarball)
    tag = interpreter_tag(key)

    def current():
        img = _find(client, tag)
        if img is not None and img.labels.get(f"{LABEL}.base") == base.tag:
            return img
        if img is not None:
            log.info("image %s was built on another base; rebuilding", tag)
        return None

    img, took, facts = current(), 0.0, None
    if img is None:
        with interpreters.build_lock(cache / "images" / f"{key}.lock"):
            img = current()
            if img is None:
                started = time.monotonic()
                facts = _build_interpreter(
                    client,
                    interp,
                    tarball,
                    key,
                    tag,
                    base.tag,
                    cache / "images" / f"{key}.build.log",
                    jobs or os.cpu_count() or 2,
                    heartbeat,
                )
                took = time.monotonic() - started
                log.info("built image %s in %.0f s", tag, took)
                img = _find(client, tag)
    if facts is None:  # reused: asked again (one container, ~1 s), the image's facts, not a label's
        log.info("reused image %s", tag)
        facts = check_image(client, tag, interp)
    python = interpreters.python_in(PREFIX, facts)
    return ImageRef(
        tag=tag,
        reused=took == 0.0,
        key=key,
        python=python,
        id=img.id if img is not None else "",
        seconds=took,
        info=interpreters.info_from_facts(interp, key=key, python=python, facts=facts),
    )


def _build_interpreter(
    client,
    interp: Interpreter,
    tarball: Path,
    key: str,
    tag: str,
    base: str,
    log_path: Path,
    jobs: int,
    heartbeat: Heartbeat = no_heartbeat,
) -> dict:
    """Build the image and check its interpreter; the facts of the check (BuildError, and no
    image left behind, when it fails)."""
    labels = {
        f"{LABEL}.kind": "interpreter",
        f"{LABEL}.key": key,
        f"{LABEL}.version": interp.version,
        f"{LABEL}.source": interp.source.describe(),
        f"{LABEL}.source-sha256": interpreters._sha256(tarball),
        f"{LABEL}.configure": " ".join(interp.configure_flags),
        f"{LABEL}.base": base,
    }
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log.info("building image %s (CPython %s from %s; log %s)", tag, interp.version, tarball.name, log_path)
    error = ""
    try:
        stream = client.api.build(
            fileobj=_context(interp, tarball, jobs),
            custom_context=True,
            tag=tag,
            labels=labels,
            rm=True,
            forcerm=True,
            decode=True,
            pull=False,
            buildargs=build_args(base),
        )
        what = f"building image {tag} (CPython {interp.version}; log {log_path})"
        with open(log_path, "w") as logf, heartbeat(what) as hb:
            for chunk in stream:
                if "stream" in chunk:
                    logf.write(chunk["stream"])
                    if chunk["stream"].startswith("Step "):  # "Step 4/9 : RUN ..."
                        hb.step(chunk["stream"].split(" :", 1)[0])
                elif "error" in chunk:
                    error = chunk["error"].strip()
                    logf.write(f"ERROR: {error}\n")
    except BuildError:
        raise
    except Exception as e:
        raise daemon_error(e) from None
    if error:
        raise BuildError(f"building image {tag}: {error.splitlines()[-1]}; see {log_path}")
    try:
        facts = check_image(client, tag, interp)
    except BuildError:
        with contextlib.suppress(Exception):
            client.images.remove(tag, force=True)
        raise
    with open(log_path, "a") as logf:
        logf.write(f"check: {json.dumps(facts)}\n")
    return facts


def check_image(client, tag: str, interp: Interpreter) -> dict:
    """Run CHECK_SCRIPT with the image's ``bin/python3`` (every ``make install`` has it; the
    interpreter names its real executable itself) under PYTHON_GIL=0, and check what it says
    with ``interpreters.check_facts``, the one check of an interpreter. BuildError if it fails."""
    try:
        out = client.containers.run(
            tag,
            [f"{PREFIX}/bin/python3", "-c", interpreters.CHECK_SCRIPT],
            environment={"PYTHON_GIL": "0"},
            network_mode="none",
            remove=True,
            labels={f"{LABEL}.kind": "check"},
        )
        facts = json.loads(out)
    except json.JSONDecodeError as e:
        raise BuildError(f"the interpreter in {tag} does not run: {e}") from None
    except Exception as e:
        import docker.errors

        if isinstance(e, docker.errors.ContainerError):
            raise BuildError(f"the interpreter in {tag} does not run: {e}") from None
        raise daemon_error(e) from None
    problem = interpreters.check_facts(facts, interp, tag)
    if problem:
        raise BuildError(problem)
    return facts


# ------------------------------------------------------------------ cleaning


def clean(client, run_label: str | None = None) -> list[str]:
    """Remove containers and volumes of one run (or of every run when ``run_label`` is None).

    Images stay (a cache); the per-job pip cache volumes are not labelled with a run and stay
    here too: ``ft-harness clean`` removes them (``backends.docker.clean_caches``).
    """
    flt = [f"{LABEL}.run={run_label}"] if run_label else [f"{LABEL}.run"]
    removed: list[str] = []
    try:
        for c in client.containers.list(all=True, filters={"label": flt}):
            with contextlib.suppress(Exception):
                c.remove(force=True)
                removed.append(f"container {c.name} ({c.labels.get(f'{LABEL}.job', '?')})")
        for kind in ("check",) if run_label is None else ():  # of an interrupted image build
            for c in client.containers.list(all=True, filters={"label": f"{LABEL}.kind={kind}"}):
                with contextlib.suppress(Exception):
                    c.remove(force=True)
                    removed.append(f"container {c.name} ({kind})")
    except Exception as e:
        raise daemon_error(e) from None
    removed += remove_volumes(client, flt)
    for line in removed:
        log.info("removed %s", line)
    return removed


def remove_volumes(client, labels: list[str]) -> list[str]:
    """Remove every volume with all of ``labels``; what was removed, as ``volume NAME`` lines."""
    removed: list[str] = []
    try:
        for v in client.volumes.list(filters={"label": labels}):
            with contextlib.suppress(Exception):
                v.remove(force=True)
                removed.append(f"volume {v.name}")
    except Exception as e:
        raise daemon_error(e) from None
    return removed
