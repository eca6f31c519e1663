"""Fetch CPython source, build it with --disable-gil (and optionally TSan), cache it.

Layout of the cache (``--cache``, ``$FT_HARNESS_CACHE``, ``~/.cache/ft-harness``)::

    sources/<file>                 verified source tarballs
    apt/<suite>/...                the private apt config used for debian:trixie
    interpreters/<key>/            an installed interpreter; ``<key>/ft-harness.json`` marks it complete
    interpreters/<key>.build.log   the log of its build (kept)
    interpreters/<key>.lock        held while building, so two builds of one key are safe

A build happens in a staging directory and is renamed into place only after
the interpreter has been checked, so a failed build leaves no cache entry.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import tarfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import BuildError, ConfigError
from .matrix import Interpreter
from .model import InterpreterInfo

log = logging.getLogger(__name__)

# Debian packages a from-source build needs; the docker image installs the same list.
BUILD_DEPS = (
    "build-essential",
    "pkg-config",
    "libssl-dev",
    "zlib1g-dev",
    "libffi-dev",
    "libbz2-dev",
    "liblzma-dev",
    "libsqlite3-dev",
    "libreadline-dev",
    "uuid-dev",
    "xz-utils",
)

CHECK_SCRIPT = (
    "import json, sys, sysconfig; "
    "print(json.dumps({'version': '%d.%d.%d' % sys.version_info[:3], "
    "'gil_enabled': sys._is_gil_enabled(), "
    "'Py_GIL_DISABLED': sysconfig.get_config_var('Py_GIL_DISABLED'), "
    "'CFLAGS': sysconfig.get_config_var('CFLAGS') or '', "
    "'LDSHARED': sysconfig.get_config_var('LDSHARED') or ''}))"
)


def cache_root(cli_value: str | None = None) -> Path:
    value = cli_value or os.environ.get("FT_HARNESS_CACHE") or "~/.cache/ft-harness"
    return Path(value).expanduser().resolve()


@dataclass(frozen=True, kw_only=True)
class Built:
    """A checked, cached interpreter."""

    info: InterpreterInfo
    prefix: Path
    python: Path
    source_tarball: Path
    cache_hit: bool


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ------------------------------------------------------------------ fetching source


def _debian_mirror() -> str:
    """The system's Debian mirror URI (we reuse it, we never change the system's config)."""
    candidates = sorted(Path("/etc/apt/sources.list.d").glob("*.sources"))
    for f in candidates:
        with contextlib.suppress(OSError):
            m = re.search(r"^URIs:\s*(\S+/debian)/?\s*$", f.read_text(), re.M)
            if m:
                return m.group(1)
    with contextlib.suppress(OSError):
        m = re.search(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+/debian)/?\s", Path("/etc/apt/sources.list").read_text(), re.M)
        if m:
            return m.group(1)
    return "http://deb.debian.org/debian"


def _fetch_debian(suite: str, version: str, cache: Path) -> Path:
    """`apt-get source --download-only python3.X` through a private apt config."""
    series = ".".join(version.split(".")[:2])
    root = cache / "apt" / suite
    dl = root / "download"
    existing = sorted(dl.glob(f"python{series}_*.orig.tar.xz"))
    if existing:
        return existing[-1]
    for sub in ("lists/partial", "cache/archives/partial", "parts", "download"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
    (root / "sources.list").write_text(
        f"deb-src [signed-by={keyring}] {_debian_mirror()} {suite} main\n"
    )
    (root / "apt.conf").write_text(
        f'Dir::Etc::SourceList "{root}/sources.list";\n'
        f'Dir::Etc::SourceParts "{root}/parts";\n'
        f'Dir::State::Lists "{root}/lists";\n'
        f'Dir::Cache "{root}/cache";\n'
    )
    env = {**os.environ, "APT_CONFIG": str(root / "apt.conf")}
    for argv, cwd in (
        (["apt-get", "update", "-q"], root),
        (["apt-get", "source", "--download-only", "-q", f"python{series}"], dl),
    ):
        log.info("fetching CPython source: %s", " ".join(argv))
        try:
            r = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise BuildError(f"could not run {argv[0]}: {e}") from None
        if r.returncode != 0:
            tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["(no output)"]
            raise BuildError(f"{' '.join(argv)} failed: {tail[0]}")
    found = sorted(dl.glob(f"python{series}_*.orig.tar.xz"))
    if not found:
        raise BuildError(f"apt-get source python{series} from {suite} gave no .orig.tar.xz in {dl}")
    return found[-1]


def fetch_source(interp: Interpreter, cache: Path) -> Path:
    """Return a verified upstream source tarball for ``interp``."""
    src = interp.source
    if src.kind == "debian":
        return _fetch_debian(src.suite, interp.version, cache)
    if src.kind == "tarball":
        path = Path(src.path)
        if src.sha256 and _sha256(path) != src.sha256:
            raise ConfigError(f"{path}: sha256 does not match the one in the matrix")
        return path
    dest = cache / "sources" / f"{src.sha256[:16]}-{Path(src.url).name}"
    if dest.exists() and _sha256(dest) == src.sha256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(dest.suffix + ".part")
    log.info("downloading %s", src.url)
    try:
        with urllib.request.urlopen(src.url, timeout=60) as r, open(tmp, "wb") as f:
            shutil.copyfileobj(r, f)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise BuildError(f"could not download {src.url}: {e}") from None
    digest = _sha256(tmp)
    if digest != src.sha256:
        tmp.unlink(missing_ok=True)
        raise BuildError(f"{src.url}: sha256 is {digest}, the matrix says {src.sha256}")
    os.replace(tmp, dest)
    return dest


def build_key(interp: Interpreter, tarball: Path) -> str:
    """version + source digest + flags: a different key means a different interpreter."""
    flags = " ".join(interp.configure_flags)
    blob = f"{interp.version}\0{_sha256(tarball)}\0{flags}"
    digest = hashlib.sha256(blob.encode()).hexdigest()[:12]
    variant = "ft-tsan" if interp.sanitizer == "thread" else "ft"
    return f"cpython-{interp.version}-{variant}-{digest}"


def build_commands(src_dir: str, prefix: str, flags: tuple[str, ...], jobs: int) -> list[list[str]]:
    """The configure/make/install commands; the docker image runs the same ones."""
    return [
        ["./configure", f"--prefix={prefix}", *flags],
        ["make", f"-j{jobs}"],
        ["make", "install"],
    ]


def build_env(interp: Interpreter) -> dict[str, str]:
    """Extra environment for the build (TSan builds use gcc's -fsanitize=thread via configure).

    A TSan build runs its own ./python during make and `make install` (compileall);
    an interpreter race reported there would exit 66 and fail the build at random.
    """
    if interp.sanitizer == "thread":
        return {"TSAN_OPTIONS": TSAN_QUIET}
    return {}


# ------------------------------------------------------------------ building


@contextlib.contextmanager
def build_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive file lock (two builds of one key wait for each other)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("another build of %s is running; waiting for it", path.stem)
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def check_python(python: Path, interp: Interpreter) -> dict:
    """Run the built interpreter and check it is the free-threaded build we asked for."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHON_GIL"] = "0"
    env.update(build_env(interp))
    try:
        r = subprocess.run([str(python), "-c", CHECK_SCRIPT], env=env, capture_output=True, text=True, timeout=60)
        facts = json.loads(r.stdout)
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
        raise BuildError(f"{python} does not run: {e}") from None
    if facts["Py_GIL_DISABLED"] != 1 or facts["gil_enabled"]:
        raise BuildError(f"{python} is not a free-threaded build (Py_GIL_DISABLED={facts['Py_GIL_DISABLED']})")
    if facts["version"] != interp.version:
        raise BuildError(f"{python} is CPython {facts['version']}, the matrix asks for {interp.version}")
    if interp.sanitizer == "thread":
        for var in ("CFLAGS", "LDSHARED"):  # else pip builds extensions TSan cannot see into
            if "-fsanitize=thread" not in facts[var]:
                raise BuildError(f"{python} was asked for TSan but its {var} lacks -fsanitize=thread")
    return facts


def _info(interp: Interpreter, key: str, python: Path) -> InterpreterInfo:
    return InterpreterInfo(
        name=interp.name,
        version=interp.version,
        key=key,
        configure=interp.configure_flags,
        free_threaded=True,
        sanitizer=interp.sanitizer,
        python=str(python),
    )


def ensure_built(interp: Interpreter, cache: Path, *, jobs: int | None = None) -> Built:
    """Return the cached interpreter for ``interp``, building it first if needed."""
    tarball = fetch_source(interp, cache)
    key = build_key(interp, tarball)
    base = cache / "interpreters"
    prefix = base / key
    python = prefix / "bin" / f"python{'.'.join(interp.version.split('.')[:2])}t"
    marker = prefix / "ft-harness.json"
    if marker.exists():
        log.info("interpreter %s: cache hit (%s)", interp.name, key)
        return Built(info=_info(interp, key, python), prefix=prefix, python=python,
                     source_tarball=tarball, cache_hit=True)
    with build_lock(base / f"{key}.lock"):
        if marker.exists():  # built by whoever held the lock
            log.info("interpreter %s: cache hit (%s, built concurrently)", interp.name, key)
            return Built(info=_info(interp, key, python), prefix=prefix, python=python,
                         source_tarball=tarball, cache_hit=True)
        _build(interp, tarball, prefix, base / f"{key}.build.log", jobs or os.cpu_count() or 2)
        try:
            facts = check_python(python, interp)
        except BuildError:
            shutil.rmtree(prefix, ignore_errors=True)
            raise
        marker.write_text(json.dumps({"key": key, "source": str(tarball), "facts": facts,
                                      "configure": list(interp.configure_flags)}, indent=1))
    log.info("interpreter %s: built %s", interp.name, key)
    return Built(info=_info(interp, key, python), prefix=prefix, python=python,
                 source_tarball=tarball, cache_hit=False)


def _build(interp: Interpreter, tarball: Path, prefix: Path, log_path: Path, jobs: int) -> None:
    """Configure, make, install into a staging dir (DESTDIR), check, then rename into place."""
    work = prefix.parent / f".{prefix.name}.work-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(prefix, ignore_errors=True)  # a leftover without marker is not a cache entry
    work.mkdir(parents=True)
    started = time.monotonic()
    try:
        with tarfile.open(tarball) as tf:
            tf.extractall(work / "src", filter="data")
        tops = [p for p in (work / "src").iterdir() if p.is_dir()]
        if len(tops) != 1 or not (tops[0] / "configure").exists():
            raise BuildError(f"{tarball} does not look like a CPython source tarball")
        src = tops[0]
        env = {**os.environ, **build_env(interp)}
        with open(log_path, "w") as logf:
            for argv in build_commands(str(src), str(prefix), interp.configure_flags, jobs):
                if argv[:2] == ["make", "install"]:
                    argv = [*argv, f"DESTDIR={work / 'dest'}"]
                log.info("build %s: %s", prefix.name, " ".join(argv))
                logf.write(f"$ {' '.join(argv)}\n")
                logf.flush()
                r = subprocess.run(argv, cwd=src, env=env, stdout=logf, stderr=subprocess.STDOUT)
                if r.returncode != 0:
                    raise BuildError(
                        f"building {interp.name}: `{' '.join(argv)}` exited {r.returncode}; see {log_path}"
                    )
        staged = work / "dest" / str(prefix).lstrip("/")
        os.replace(staged, prefix)
        log.info("build %s took %.0f s", prefix.name, time.monotonic() - started)
    except BaseException:
        shutil.rmtree(prefix, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ------------------------------------------------------------------ TSan helpers

# TSAN_OPTIONS for running the TSan interpreter where its reports are not wanted (the
# build, the check): never change an exit code, print nothing.
TSAN_QUIET = "exitcode=0 report_bugs=0"
