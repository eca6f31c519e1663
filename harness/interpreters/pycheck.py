"""Asking an interpreter what it is: CHECK_SCRIPT, run by the interpreter under test, prints
its facts (version, ``-VV`` line, Py_GIL_DISABLED, CFLAGS, wheel tags, flags) as JSON; ``probe``
runs it; ``check_facts`` is the one check of "is this the free-threaded build we asked for", for
a local build, an installed interpreter (``source: python:…``) and the docker image alike; and
``info_from_facts`` turns the facts into the InterpreterInfo every result carries.

Nothing version-specific is written here: the executable's name, its wheel tags, its ``-VV``
line and flags come from the interpreter itself.  Building and caching are harness.interpreters.interpreters.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from ..core.errors import BuildError
from ..core.jobspec import Interpreter
from ..core.model import InterpreterInfo

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
            r = subprocess.run(
                [str(python), "-c", CHECK_SCRIPT, tags_dir], env=clean, capture_output=True, text=True, timeout=timeout
            )
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


def info_from_facts(
    interp: Interpreter, *, key: str, python: str | Path, facts: dict[str, Any], installed: bool = False
) -> InterpreterInfo:
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
