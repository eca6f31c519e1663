"""Fetch CPython source, build it with --disable-gil (and optionally TSan), cache it.

Layout of the cache (``--cache``, ``$FT_HARNESS_CACHE``, ``~/.cache/ft-harness``)::

    sources/<file>                 verified source tarballs
    apt/<suite>/...                the private apt config used for debian:<suite>
    interpreters/<key>/            an installed interpreter; ``<key>/ft-harness.json`` marks it complete
    interpreters/<key>.build.log   the log of its build (kept)
    interpreters/<key>.lock        held while building, so two builds of one key are safe

A build happens in a staging directory and is renamed into place only after
the interpreter has been checked, so a failed build leaves no cache entry.

Nothing version-specific is written here: the executable's name, its wheel tags,
its ``-VV`` line and flags come from the interpreter itself (harness.interpreters.pycheck's
``probe``), and ``pycheck.check_facts`` is the one check of "is this the
free-threaded build we asked for", for a local build, an installed interpreter
(``source: python:…``) and the docker image alike.
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
from typing import Any

from ..core.errors import BuildError
from ..core.jobspec import Interpreter
from ..core.model import InterpreterInfo
from ..core.progress import Heartbeat, no_heartbeat
from .pycheck import (  # CHECK_SCRIPT: re-exported, harness.images reads interpreters.CHECK_SCRIPT
    CHECK_SCRIPT,  # noqa: F401
    check_facts,
    info_from_facts,
    probe,
    python_in,
)

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
# Commands test suites call that a CI runner has and a bare Debian image does not: ps
# (setproctitle 1.3's tests read the title back with `ps -x`), git, gpg, gpgsm and ssh-keygen
# (dulwich 1.2.21's signing tests: "No GPG vendor available" without them). The docker images
# install them in a layer of their own, after the interpreter's build.
TEST_TOOLS = ("procps", "git", "gnupg", "gpgsm", "openssh-client")


def cache_root(cli_value: str | None = None) -> Path:
    value = cli_value or os.environ.get("FT_HARNESS_CACHE") or "~/.cache/ft-harness"
    return Path(value).expanduser().resolve()


@dataclass(frozen=True, kw_only=True)
class Built:
    """A checked interpreter: built and cached, or found installed (``source: python:…``)."""

    info: InterpreterInfo
    prefix: Path
    python: Path
    source_tarball: Path | None  # None for an installed interpreter (no source here)
    cache_hit: bool
    installed: bool = False

    @property
    def state(self) -> str:
        """What ``ft-harness build``/``run`` print: 'installed', 'cache hit' or 'built'."""
        return "installed" if self.installed else "cache hit" if self.cache_hit else "built"


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


def _debian_upstream(debian_version: str) -> str:
    """``3.13.5-2+deb13u5`` -> ``3.13.5``; ``3.14.0~rc1-1`` -> ``3.14.0rc1`` (epoch, revision and
    Debian's ``~`` dropped)."""
    upstream = debian_version.split(":", 1)[-1].rsplit("-", 1)[0]
    return upstream.replace("~", "")


def shipped_versions(showsrc: str, package: str) -> list[str]:
    """The Debian versions of ``package`` in ``apt-cache showsrc`` output (every stanza)."""
    out, current = [], ""
    for line in showsrc.splitlines():
        if line.startswith("Package:"):
            current = line.split(":", 1)[1].strip()
        elif line.startswith("Version:") and current == package:
            v = line.split(":", 1)[1].strip()
            if v not in out:
                out.append(v)
    return out


def _apt(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    log.info("fetching CPython source: %s", " ".join(argv))
    try:
        return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BuildError(f"could not run {argv[0]}: {e}") from None


def _last_line(r: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in (r.stderr or r.stdout or "").strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else "(no output)"


def _fetch_debian(interp: Interpreter, cache: Path) -> Path:
    """`apt-get source --download-only python3.X=VERSION` through a private apt config.

    The suite must ship the version the matrix names: else a ConfigError at the matrix line,
    naming what the suite ships."""
    suite, version = interp.source.suite, interp.version
    package = "python" + ".".join(version.split(".")[:2])
    root = cache / "apt" / suite
    dl = root / "download"
    want = dl / f"{package}_{version}.orig.tar.xz"
    if want.exists():
        return want
    for sub in ("lists/partial", "cache/archives/partial", "parts", "download"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
    mirror = _debian_mirror()
    (root / "sources.list").write_text(f"deb-src [signed-by={keyring}] {mirror} {suite} main\n")
    (root / "apt.conf").write_text(
        f'Dir::Etc::SourceList "{root}/sources.list";\n'
        f'Dir::Etc::SourceParts "{root}/parts";\n'
        f'Dir::State::Lists "{root}/lists";\n'
        f'Dir::Cache "{root}/cache";\n'
    )
    env = {**os.environ, "APT_CONFIG": str(root / "apt.conf")}
    r = _apt(["apt-get", "update", "-q"], root, env)
    text = (r.stdout or "") + (r.stderr or "")
    if r.returncode != 0 or "does not have a Release file" in text:
        if "Release" in text and ("does not have" in text or "404" in text):
            raise interp.fail(f".source debian:{suite}: {mirror} serves no suite {suite!r}")
        raise BuildError(f"apt-get update for debian:{suite} failed: {_last_line(r)}")
    r = _apt(["apt-cache", "showsrc", package], root, env)
    shipped = shipped_versions(r.stdout or "", package) if r.returncode == 0 else []
    if not shipped:
        raise interp.fail(f".source debian:{suite} ships no {package} source package")
    match = [v for v in shipped if _debian_upstream(v) == version]
    if not match:
        ships = ", ".join(f"{_debian_upstream(v)} ({v})" for v in shipped)
        raise interp.fail(
            f".source debian:{suite} ships {package} {ships}, not {version}: "
            f"set version to what it ships or pick another suite"
        )
    r = _apt(["apt-get", "source", "--download-only", "-q", f"{package}={match[0]}"], dl, env)
    if r.returncode != 0:
        raise BuildError(f"apt-get source {package}={match[0]} from debian:{suite} failed: {_last_line(r)}")
    if not want.exists():
        raise BuildError(f"apt-get source {package}={match[0]} gave no {want.name} in {dl}")
    return want


def fetch_source(interp: Interpreter, cache: Path) -> Path:
    """Return a verified upstream source tarball for ``interp``."""
    src = interp.source
    if src.kind == "python":
        raise interp.fail(
            f".source {src.describe()} is an interpreter installed on this machine: there is no "
            "source to fetch or build (it is used as it is; the docker backend mounts it)"
        )
    if src.kind == "debian":
        return _fetch_debian(interp, cache)
    if src.kind == "tarball":
        path = Path(src.path)
        if src.sha256 and _sha256(path) != src.sha256:
            raise interp.fail(f".source {path}: sha256 does not match the one in the matrix")
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
    return [["./configure", f"--prefix={prefix}", *flags], ["make", f"-j{jobs}"], ["make", "install"]]


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


# ------------------------------------------------------------------ checking a build
# (probe, check_facts and the facts -> InterpreterInfo step are harness.interpreters.pycheck)


def check_python(python: Path, interp: Interpreter) -> dict[str, Any]:
    """Probe a built interpreter and check it; BuildError when it is not what was asked for."""
    facts = probe(python, env=build_env(interp))
    problem = check_facts(facts, interp, str(python))
    if problem:
        raise BuildError(problem)
    return facts


# ------------------------------------------------------------------ installed interpreters


def _resolve_installed(interp: Interpreter) -> Path:
    src = interp.source
    if src.path:
        return Path(src.path)
    found = shutil.which(src.name)
    if not found:
        raise interp.fail(f".source python:{src.name}: no {src.name!r} on PATH")
    return Path(found).absolute()


def installed_key(python: Path, facts: dict[str, Any]) -> str:
    """An installed interpreter's identity: its real path, -VV line and file; reinstalling it
    (another build at the same path) changes the key, so its jobs run again."""
    real = python.resolve()
    st = real.stat()
    blob = "\0".join([str(real), str(facts.get("vv")), str(facts.get("SOABI")), str(st.st_size), str(st.st_mtime_ns)])
    digest = hashlib.sha256(blob.encode()).hexdigest()[:12]
    return f"cpython-{facts.get('full_version') or facts.get('version')}-ft-installed-{digest}"


def use_installed(interp: Interpreter) -> Built:
    """An interpreter that is already installed (``source: python:PATH_OR_NAME``): found, probed
    and checked, never built.  Any problem is the matrix's: ConfigError at its line."""
    python = _resolve_installed(interp)
    what = f".source {interp.source.describe()}"
    try:
        facts = probe(python)
    except BuildError as e:
        raise interp.fail(f"{what}: {e}") from None
    problem = check_facts(facts, interp, f"{what} ({python})" if interp.source.name else what)
    if problem:
        raise interp.fail(problem)
    key = installed_key(python, facts)
    log.info("interpreter %s: installed %s (%s)", interp.name, python, facts.get("vv"))
    return Built(
        info=info_from_facts(interp, key=key, python=python, facts=facts, installed=True),
        prefix=Path(facts.get("prefix") or python.parent.parent),
        python=python,
        source_tarball=None,
        cache_hit=True,
        installed=True,
    )


# ------------------------------------------------------------------ the cache


def _cached(interp: Interpreter, key: str, prefix: Path, tarball: Path) -> Built:
    """A cache entry, probed again (cheap) so its facts are the interpreter's, not a record's."""
    facts = check_python(prefix / "bin" / "python3", interp)
    python = Path(python_in(prefix, facts))
    return Built(
        info=info_from_facts(interp, key=key, python=python, facts=facts),
        prefix=prefix,
        python=python,
        source_tarball=tarball,
        cache_hit=True,
    )


def ensure_built(
    interp: Interpreter, cache: Path, *, jobs: int | None = None, heartbeat: Heartbeat = no_heartbeat
) -> Built:
    """Return the interpreter for ``interp``: installed (``python:``), cached, or built now
    (said through ``heartbeat``: the CLI's prints the steps and the time)."""
    if not interp.source.builds:
        return use_installed(interp)
    tarball = fetch_source(interp, cache)
    key = build_key(interp, tarball)
    base = cache / "interpreters"
    prefix = base / key
    marker = prefix / "ft-harness.json"
    if marker.exists():
        log.info("interpreter %s: cache hit (%s)", interp.name, key)
        return _cached(interp, key, prefix, tarball)
    with build_lock(base / f"{key}.lock"):
        if marker.exists():  # built by whoever held the lock
            log.info("interpreter %s: cache hit (%s, built concurrently)", interp.name, key)
            return _cached(interp, key, prefix, tarball)
        _build(interp, tarball, prefix, base / f"{key}.build.log", jobs or os.cpu_count() or 2, heartbeat)
        try:  # bin/python3 is installed by every `make install`; the real name comes from it
            facts = check_python(prefix / "bin" / "python3", interp)
        except BuildError:
            shutil.rmtree(prefix, ignore_errors=True)
            raise
        marker.write_text(
            json.dumps(
                {"key": key, "source": str(tarball), "facts": facts, "configure": list(interp.configure_flags)},
                indent=1,
            )
        )
    log.info("interpreter %s: built %s", interp.name, key)
    python = Path(python_in(prefix, facts))
    return Built(
        info=info_from_facts(interp, key=key, python=python, facts=facts),
        prefix=prefix,
        python=python,
        source_tarball=tarball,
        cache_hit=False,
    )


def _build(
    interp: Interpreter, tarball: Path, prefix: Path, log_path: Path, jobs: int, heartbeat: Heartbeat = no_heartbeat
) -> None:
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
        what = f"building CPython {interp.version} for {interp.name} (log {log_path})"
        with open(log_path, "w") as logf, heartbeat(what) as hb:
            for argv in build_commands(str(src), str(prefix), interp.configure_flags, jobs):
                if argv[:2] == ["make", "install"]:
                    argv = [*argv, f"DESTDIR={work / 'dest'}"]
                hb.step(" ".join(argv[:2]) if argv[0] == "make" else "configure")
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
