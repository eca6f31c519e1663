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
its ``-VV`` line and flags come from the interpreter itself (``probe``), and
``check_facts`` is the one check of "is this the free-threaded build we asked
for", for a local build, an installed interpreter (``source: python:…``) and
the docker image alike.
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
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from .errors import BuildError
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

# Run by the interpreter under test (``python -c CHECK_SCRIPT [DIR]``), standard library only:
# DIR holds a ``packaging`` for sys_tags(); without it pip's vendored copy is tried (the
# docker image), and without either the tags are left out.  Prints one JSON object.
CHECK_SCRIPT = r"""
import json, os, platform, sys, sysconfig
cv = sysconfig.get_config_var
try:
    if sys.argv[1:]:
        sys.path.insert(0, sys.argv[1])
        from packaging import tags as _tags
    else:
        from pip._vendor.packaging import tags as _tags
    tags = [str(t) for t in _tags.sys_tags()]
except Exception:
    tags = None
exe = sys.executable
name = "python" + (cv("LDVERSION") or "%d.%d" % sys.version_info[:2]) + (cv("EXE") or "")
if not os.path.exists(os.path.join(os.path.dirname(exe), name)):
    name = os.path.basename(exe)
flags = {f: getattr(sys.flags, f) for f in ("thread_inherit_context", "context_aware_warnings")
         if hasattr(sys.flags, f)}
print(json.dumps({
    "version": "%d.%d.%d" % sys.version_info[:3],
    "full_version": platform.python_version(),
    "vv": "Python " + sys.version.replace("\n", " "),
    "gil_enabled": sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True,
    "Py_GIL_DISABLED": cv("Py_GIL_DISABLED"),
    "CFLAGS": cv("CFLAGS") or "",
    "LDSHARED": cv("LDSHARED") or "",
    "LDVERSION": cv("LDVERSION") or "",
    "SOABI": cv("SOABI") or "",
    "python_name": name,
    "executable": exe,
    "prefix": sys.prefix,
    "base_prefix": sys.base_prefix,
    "flags": flags,
    "tags": tags,
}))
"""


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
        raise interp.fail(f".source debian:{suite} ships {package} {ships}, not {version}: "
                          f"set version to what it ships or pick another suite")
    r = _apt(["apt-get", "source", "--download-only", "-q", f"{package}={match[0]}"], dl, env)
    if r.returncode != 0:
        raise BuildError(f"apt-get source {package}={match[0]} from debian:{suite} failed: "
                         f"{_last_line(r)}")
    if not want.exists():
        raise BuildError(f"apt-get source {package}={match[0]} gave no {want.name} in {dl}")
    return want


def fetch_source(interp: Interpreter, cache: Path) -> Path:
    """Return a verified upstream source tarball for ``interp``."""
    src = interp.source
    if src.kind == "python":
        raise interp.fail(
            f".source {src.describe()} is an interpreter installed on this machine, and there is "
            "no source to build an image from: the docker backend runs interpreters built into "
            "its image (use debian:SUITE, url: or tarball:), or run it with --backend local")
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


# ------------------------------------------------------------------ asking the interpreter


@contextlib.contextmanager
def _packaging_dir() -> Iterator[str]:
    """A directory holding only the harness's own ``packaging`` (a symlink), so the interpreter
    under test computes its sys_tags() with a packaging that knows abi3t, and imports nothing
    else of ours."""
    import packaging

    with tempfile.TemporaryDirectory(prefix="ft-harness-tags-") as d:
        os.symlink(Path(packaging.__file__).parent, Path(d) / "packaging")
        yield d


def probe(python: str | Path, *, env: dict[str, str] | None = None, timeout: float = 60) -> dict[str, Any]:
    """Run CHECK_SCRIPT with ``python`` under PYTHON_GIL=0 and return what it printed.

    BuildError (one line) when it does not run or prints no JSON."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    clean["PYTHON_GIL"] = "0"
    clean.update(env or {})
    with _packaging_dir() as tags_dir:
        try:
            r = subprocess.run([str(python), "-c", CHECK_SCRIPT, tags_dir], env=clean,
                               capture_output=True, text=True, timeout=timeout)
            return json.loads(r.stdout)
        except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
            first = (str(e).splitlines() or [type(e).__name__])[0]
            raise BuildError(f"{python} does not run the interpreter check: {first}") from None


VV_RE = re.compile(r"^Python (?P<version>\S+) (?P<experimental>experimental )?free-threading build \(")


def vv_build(vv: str) -> str:
    """What a ``python -VV`` line says of the build: 'free-threading' (3.14+, PEP 779),
    'experimental free-threading' (3.13) or '' (a GIL build, or not a -VV line)."""
    m = VV_RE.match(vv or "")
    if not m:
        return ""
    return "experimental free-threading" if m.group("experimental") else "free-threading"


def _version_matches(facts: dict[str, Any], wanted: str) -> bool:
    """``3.14`` matches any 3.14.x; a full version (``3.13.5``, ``3.15.0rc1``) only itself."""
    try:
        want = Version(wanted)
        got = Version(facts.get("full_version") or facts["version"])
    except (InvalidVersion, KeyError):
        return False
    if len(want.release) < 3 and want.pre is None and want.dev is None:
        return got.release[: len(want.release)] == want.release
    return got == want


def check_facts(facts: dict[str, Any], interp: Interpreter, what: str) -> str:
    """'' when ``facts`` (from CHECK_SCRIPT) describe the free-threaded interpreter ``interp``
    asks for, else the problem in one line.  The one check of an interpreter: the local
    builder, an installed interpreter and the docker image all use it.

    ``Py_GIL_DISABLED`` must be the int 1 (a string "0" is true in Python, so it is compared,
    never tested for truth); the GIL must stay off under PYTHON_GIL=0; the version must be the
    matrix's; a TSan build must carry -fsanitize=thread in CFLAGS and LDSHARED (else pip builds
    extensions TSan cannot see into)."""
    flag = facts.get("Py_GIL_DISABLED")
    said = str(facts.get("vv") or facts.get("version") or "").replace("\n", " ")
    if isinstance(flag, bool) or flag != 1:
        return f"{what} is not a free-threaded build (Py_GIL_DISABLED={flag!r}; {said})"
    if facts.get("gil_enabled"):
        return f"{what} kept the GIL enabled under PYTHON_GIL=0 ({said})"
    if facts.get("vv") and not vv_build(facts["vv"]):
        return f"{what} has Py_GIL_DISABLED=1 but its -VV line says no free-threading build ({said})"
    if interp.version and not _version_matches(facts, interp.version):
        got = facts.get("full_version") or facts.get("version")
        return f"{what} is CPython {got}, the matrix asks for {interp.version}"
    if interp.sanitizer == "thread":
        for var in ("CFLAGS", "LDSHARED"):
            if "-fsanitize=thread" not in str(facts.get(var, "")):
                return f"{what} was asked for TSan but its {var} lacks -fsanitize=thread"
    return ""


def check_python(python: Path, interp: Interpreter) -> dict[str, Any]:
    """Probe a built interpreter and check it; BuildError when it is not what was asked for."""
    facts = probe(python, env=build_env(interp))
    problem = check_facts(facts, interp, str(python))
    if problem:
        raise BuildError(problem)
    return facts


def compact_tags(tags: list[str] | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """sys_tags() as (interpreter-abi pairs, platforms), each in first-seen (priority) order."""
    pairs: dict[str, None] = {}
    platforms: dict[str, None] = {}
    for tag in tags or ():
        interp_, abi, platform_ = tag.split("-", 2)
        pairs.setdefault(f"{interp_}-{abi}", None)
        if platform_ != "any":
            platforms.setdefault(platform_, None)
    return tuple(pairs), tuple(platforms)


def python_in(prefix: str | Path, facts: dict[str, Any]) -> str:
    """The executable under ``prefix`` named by the interpreter itself (``PREFIX/bin/python3.14t``):
    for the docker image, whose check runs ``PREFIX/bin/python3`` first."""
    return f"{str(prefix).rstrip('/')}/bin/{facts['python_name']}"


def info_from_facts(interp: Interpreter, *, key: str, python: str | Path, facts: dict[str, Any],
                    installed: bool = False) -> InterpreterInfo:
    """The InterpreterInfo of a checked interpreter: every version-specific value from ``facts``."""
    pairs, platforms = compact_tags(facts.get("tags"))
    return InterpreterInfo(
        name=interp.name,
        version=facts.get("version") or interp.version,
        key=key,
        configure=() if installed else interp.configure_flags,
        free_threaded=facts.get("Py_GIL_DISABLED") == 1,
        sanitizer=interp.sanitizer,
        python=str(python),
        source=interp.source.describe(),
        installed=installed,
        full_version=facts.get("full_version", ""),
        vv=str(facts.get("vv", "")).replace("\n", " "),
        python_name=facts.get("python_name", ""),
        soabi=facts.get("SOABI", ""),
        tag_pairs=pairs,
        platforms=platforms,
        flags={k: int(v) for k, v in (facts.get("flags") or {}).items()},
    )


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
    blob = "\0".join([str(real), str(facts.get("vv")), str(facts.get("SOABI")),
                      str(st.st_size), str(st.st_mtime_ns)])
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
    return Built(info=info_from_facts(interp, key=key, python=python, facts=facts, installed=True),
                 prefix=Path(facts.get("prefix") or python.parent.parent), python=python,
                 source_tarball=None, cache_hit=True, installed=True)


# ------------------------------------------------------------------ the cache


def _cached(interp: Interpreter, key: str, prefix: Path, tarball: Path) -> Built:
    """A cache entry, probed again (cheap) so its facts are the interpreter's, not a record's."""
    facts = check_python(prefix / "bin" / "python3", interp)
    python = Path(python_in(prefix, facts))
    return Built(info=info_from_facts(interp, key=key, python=python, facts=facts), prefix=prefix,
                 python=python, source_tarball=tarball, cache_hit=True)


def ensure_built(interp: Interpreter, cache: Path, *, jobs: int | None = None) -> Built:
    """Return the interpreter for ``interp``: installed (``python:``), cached, or built now."""
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
        _build(interp, tarball, prefix, base / f"{key}.build.log", jobs or os.cpu_count() or 2)
        try:  # bin/python3 is installed by every `make install`; the real name comes from it
            facts = check_python(prefix / "bin" / "python3", interp)
        except BuildError:
            shutil.rmtree(prefix, ignore_errors=True)
            raise
        marker.write_text(json.dumps({"key": key, "source": str(tarball), "facts": facts,
                                      "configure": list(interp.configure_flags)}, indent=1))
    log.info("interpreter %s: built %s", interp.name, key)
    python = Path(python_in(prefix, facts))
    return Built(info=info_from_facts(interp, key=key, python=python, facts=facts), prefix=prefix,
                 python=python, source_tarball=tarball, cache_hit=False)


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
