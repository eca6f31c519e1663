"""Why an install phase failed: the package's build, or our infrastructure.

A compiler's ``file.c:3:2: error: ...`` (or a missing Rust/Cython toolchain)
is the package's problem (``build-failure``); pip's network and disk errors
and a timed-out install are ours (``infra-error``).
"""

from __future__ import annotations

import re

COMPILER_RE = re.compile(
    r"^\s*(?P<line>\S+\.(?:c|cc|cpp|cxx|h|hh|hpp|pyx|pxd|f|f90|rs|m|mm)[:(]\d+[^\n]*?"
    r"\b(?:fatal )?error\b[^\n]*)$",
    re.M,
)
OTHER_ERROR_RE = re.compile(r"^\s*(?P<line>(?:error\[E\d+\]|fatal error:|Error compiling Cython)[^\n]*)$", re.M)
INFRA_PATTERNS = (  # most specific first: the first that matches names the cause
    "No space left on device",
    "Disk quota exceeded",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Could not resolve host",  # cargo: crates.io (or a git dependency) unreachable
    "Failed to establish a new connection",
    "Could not fetch URL",
    "Read timed out",
    "Connection reset by peer",
    "Network is unreachable",
    "SSLError",
    "CERTIFICATE_VERIFY_FAILED",
    "ProxyError",
    "No matching distribution found",
)
BUILD_PATTERNS = (
    "Failed building wheel",
    "Failed to build",
    "subprocess-exited-with-error",
    "metadata-generation-failed",
    "can't find Rust compiler",
    "Microsoft Visual C++",
)
PIP_ERROR_RE = re.compile(r"^ERROR: (?P<line>.*)$", re.M)
# the exception a build backend (setup.py, a hook) died of, inside pip's "[output]" block
RAISED_RE = re.compile(r"^\s*(?P<line>(?:[A-Za-z_][\w.]*)?(?:Error|Exception): \S[^\n]*)$", re.M)


def classify_install(text: str, *, timed_out: bool, infra: str = "") -> tuple[str, str, str]:
    """(kind, evidence, excerpt): kind is "build-failure" or "infra-error"."""
    if infra:
        return "infra-error", "log", infra
    m = COMPILER_RE.search(text) or OTHER_ERROR_RE.search(text)
    if m:
        return "build-failure", "compiler", m.group("line").strip()
    if timed_out:
        return "infra-error", "timeout", "the install timed out"
    for pat in INFRA_PATTERNS:
        if pat in text:
            line = next(ln.strip() for ln in text.splitlines() if pat in ln)
            return "infra-error", "log", line
    for pat in BUILD_PATTERNS:
        if pat in text:
            raised = RAISED_RE.search(text)  # what the build said, before pip's summary
            line = next(ln.strip() for ln in text.splitlines() if pat in ln)
            return "build-failure", "log", raised.group("line").strip() if raised else line
    pm = PIP_ERROR_RE.search(text)
    if pm:
        return "build-failure", "log", pm.group(0).strip()
    tail = "\n".join(text.strip().splitlines()[-5:])
    return "infra-error", "log", tail or "install failed with no output"


# pip: "ERROR: No matching distribution found for Cython>=3.3.2", after "Could not find a version
# that satisfies the requirement Cython>=3.3.2 (from versions: …, 3.3.0, 3.3.1)"
_NO_DIST_RE = re.compile(r"No matching distribution found for (?P<req>\S+)")
_VERSIONS_RE = re.compile(
    r"Could not find a version that satisfies the requirement (?P<req>\S+) \(from versions: (?P<versions>[^)]*)\)"
)


def index_lacks(text: str) -> str | None:
    """The message for an install that pip could not start because the package index had no
    release of a requirement (lxml 6.2.0's build requirement ``Cython>=3.3.2`` on an index whose
    newest is 3.3.1): a fact of the index the install used, not of the package. None otherwise, and
    when the index listed no version at all (an index not reached says the same)."""
    m = _NO_DIST_RE.search(text)
    if m is None:
        return None
    req = m.group("req")
    newest = ""
    for v in _VERSIONS_RE.finditer(text):
        versions = [x.strip() for x in v.group("versions").split(",") if x.strip() not in ("", "none")]
        if v.group("req") == req and versions:
            newest = versions[-1]
    if not newest:  # "(from versions: none)": an index not reached looks the same; say no more
        return None
    role = "a build requirement" if "build dependencies" in text else "a requirement"
    return (
        f"the package index has no release of {req} ({role}; its newest there is {newest}): the "
        "install could not start; a fact of the index this install used, not a problem of the package"
    )
