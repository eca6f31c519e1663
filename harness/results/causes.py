"""Root causes across packages: the groups report.json's ``causes`` lists (issue #33).

One cause often decides many rows: in the top-30 run "cffi refuses free-threaded 3.13" decided
cffi, cryptography (which builds against it), urllib3 and anyio (their test dependency trustme
needs cryptography); crates.io being unreachable decided five Rust builds.  A reader acts on the
cause, once, not on each row.  ``build_causes`` reads the results (pure: no file, no process) and
groups the jobs whose verdict is not about themselves:

- an install that failed inside a dependency's build: pip's last ``Collecting NAME`` before the
  error names the package at the root; the error line says why ("RuntimeError: CFFI does not
  support the free-threaded build of CPython 3.13");
- test dependencies that did not install (``not installed: trustme``), read the same way, the
  missing one kept as ``via``;
- the build machine (issue #43): a build that lacked a header, a library, a toolchain or a host
  (harness.parse.buildenv), grouped by what was missing across packages: "Rust toolchain
  (Debian: rustc cargo)" with every package whose build (or a dependency's) needed cargo;
- the harness's infrastructure (a host not reachable, an install past its timeout);
- (no tests in the sdist is a fact about the package itself: in no group, issue #44);
- the GIL re-enabled by a module of another distribution, when more than one package shares it.

A package whose own build fails is in no group unless it is the root of others (cffi is in the
group of cffi's refusal, with cryptography); a verdict about the package's tests is in none.

The root is read from log text the package's own build writes (a ``Collecting NAME`` line, the
module in a GIL warning), so it is named only when it is a job of the same report that itself
failed there (#46): cffi's own job did not install on that Python, the GIL warning names the
module of a job that re-enabled the GIL itself.  Otherwise the job is in no group: its verdict
is said as its own, and no log can make "Blocked by" blame a project that is not in the report.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from packaging.utils import canonicalize_name as _norm

from ..core.evidence import NOT_INSTALLED_KIND
from ..core.model import Finding, JobResult, Phase
from ..parse.buildenv import missing_piece
from ..parse.install import classify_install

CAUSE_KINDS = ("dependency", "test-dependency", "infrastructure", "no-tests", "gil-dependency", "build-environment")
# what pip was working on: a requirement it collects, a wheel it builds (after the runtime
# dependencies it collected: the package's own build fails below ``Collecting pluggy``)
_WORKING_ON = re.compile(
    r"^\s*(?:Collecting|Building wheel for|Running setup\.py install for) "
    r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)",
    re.M,
)
_ADDR = re.compile(r"0x[0-9a-f]+|/tmp/\S+|pip-[a-z-]+-[a-z0-9_]{6,}", re.I)
INFRA_TEXT = {  # a pattern of harness.parse.install's INFRA_PATTERNS -> what a reader acts on
    "Could not resolve host": "a download during the build failed: its host was not reachable",
    "Temporary failure in name resolution": "the package index or a download host was not reachable",
    "Name or service not known": "the package index or a download host was not reachable",
    "Failed to establish a new connection": "the package index or a download host was not reachable",
    "No matching distribution found": "a requirement is not on the package index",
    "Could not fetch URL": "the package index or a download host was not reachable",
    "Read timed out": "the package index or a download host was not reachable",
    "Connection reset by peer": "the package index or a download host was not reachable",
    "Network is unreachable": "the package index or a download host was not reachable",
    "SSLError": "a TLS connection to the package index failed",
    "CERTIFICATE_VERIFY_FAILED": "a TLS connection to the package index failed",
    "ProxyError": "the package index or a download host was not reachable",
    "No space left on device": "the runner ran out of disk",
    "Disk quota exceeded": "the runner ran out of disk",
}


@dataclass(frozen=True, kw_only=True)
class CauseMember:
    """A job a cause decided: its package, interpreter and, for a test dependency, which one."""

    package: str
    version: str = ""
    interpreter: str = ""
    job_id: str = ""
    via: str = ""  # the test dependency that did not install because of the root ("trustme")

    def to_dict(self) -> dict[str, Any]:
        return {
            "package": self.package,
            "version": self.version,
            "interpreter": self.interpreter,
            "job_id": self.job_id,
            "via": self.via,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CauseMember:
        return cls(**{k: str(d.get(k) or "") for k in ("package", "version", "interpreter", "job_id", "via")})


@dataclass(frozen=True, kw_only=True)
class Cause:
    """A root cause and the jobs it decided (report.json ``causes``)."""

    kind: str  # one of CAUSE_KINDS
    text: str  # what a maintainer or reader can act on
    root: str = ""  # the package at the root, where it is one ("cffi")
    root_version: str = ""
    detail: str = ""  # the error line it was read from
    members: tuple[CauseMember, ...] = ()

    @property
    def packages(self) -> list[str]:
        """The packages it decided, each once, in report order."""
        return list(dict.fromkeys(m.package for m in self.members))

    @property
    def count(self) -> int:
        return len(self.packages)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "text": self.text,
            "root": self.root,
            "root_version": self.root_version,
            "detail": self.detail,
            "count": self.count,
            "packages": self.packages,
            "members": [m.to_dict() for m in self.members],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Cause:
        members = d.get("members")
        return cls(
            kind=str(d.get("kind") or ""),
            text=str(d.get("text") or ""),
            root=str(d.get("root") or ""),
            root_version=str(d.get("root_version") or ""),
            detail=str(d.get("detail") or ""),
            members=tuple(CauseMember.from_dict(m) for m in members if isinstance(m, dict))
            if isinstance(members, list)
            else (),
        )


@dataclass(frozen=True)
class _Seen:
    key: tuple[str, ...]
    kind: str
    text: str
    root: str = ""
    root_version: str = ""
    detail: str = ""
    via: str = ""
    minor: str = ""  # the interpreter's X.Y


def _root(excerpt: str, at: str) -> tuple[str, str]:
    """(name, version) of the distribution pip was working on when ``at`` (an error line) was
    printed: the last ``Collecting NAME`` or ``Building wheel for NAME`` before it; ("", "")
    when the excerpt does not say."""
    end = excerpt.find(at) if at else -1
    found = list(_WORKING_ON.finditer(excerpt, 0, end if end >= 0 else len(excerpt)))
    if not found:
        return "", ""
    m = found[-1]
    name = m.group("name")
    got = re.search(
        rf"(?:Downloading|Using cached) {re.escape(name)}-(\d[\w.+!]*?)"
        r"(?:\.tar\.gz|\.zip|-py|-cp)",
        excerpt[m.end() :],
        re.I,
    )
    return name, got.group(1) if got else ""


_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")


def _filled(texts: Sequence[str]) -> str:
    """One text for jobs grouped under the same words whose numbers differ, every number said:
    "job_timeout 1200 s" for one value, "job_timeout 600 or 1200 s" for two (issue #57: "Blocked
    by" printed a literal "job_timeout N s")."""
    first = texts[0]
    values: list[list[str]] = []
    for t in texts:
        for i, m in enumerate(_NUMBER.findall(t)):
            if i == len(values):
                values.append([])
            if m not in values[i]:
                values[i].append(m)
    said = iter(" or ".join(v) if len(v) <= 3 else ", ".join(v[:3]) + ", …" for v in values)
    return _NUMBER.sub(lambda m: next(said, m.group(0)), first)


def _clean(line: str) -> str:
    return " ".join(_ADDR.sub("…", line).split())[:200]


def _minor(r: JobResult) -> str:
    return ".".join(r.interpreter.version.split(".")[:2]) or r.interpreter.name


def _install_cause(r: JobResult, phase: Phase, via: str = "") -> _Seen | None:
    env = None if phase.timed_out or phase.infra else missing_piece(phase.excerpt)
    if env is not None:  # the build machine's, whichever package's build it was
        return _Seen(("env", env.cause), "build-environment", env.cause, detail=_clean(env.line), via=via)
    kind, evidence, line = classify_install(phase.excerpt, timed_out=phase.timed_out, infra=phase.infra)
    if kind == "infra-error":
        if evidence == "timeout" or phase.timed_out:
            return _Seen(
                ("infra", "timeout"),
                "infrastructure",
                "an install ran past its timeout (most often a long source build)",
                detail=line,
            )
        text = next((t for pat, t in INFRA_TEXT.items() if pat in line), "")
        if "crates.io" in line:  # cargo, from a Rust extension's build
            text = "a Rust crate could not be fetched: crates.io was not reachable"
        if not text:
            return None
        return _Seen(("infra", text), "infrastructure", text, detail=_clean(line))
    root, version = _root(phase.excerpt, line.strip())
    if not root and not via:
        return None
    detail = _clean(line)
    what = "test-dependency" if via else "dependency"
    # by root and error line; a tail that no longer shows its ``Collecting`` line (a test
    # dependency's nested build) joins the group of the same error line (build_causes)
    return _Seen(("build", detail, _minor(r), _norm(root)), what, "", root, version, detail, via, _minor(r))


def _dependency_text(root: str, version: str, minor: str, detail: str) -> str:
    name = (f"{root} {version}" if version else root) or "a dependency"
    first = re.split(r"(?<=[.!])\s", detail, maxsplit=1)[0]  # its first sentence
    return f"{name} does not install on free-threaded {minor}: {first}"


def _own_module(top: str, package: str) -> bool:
    """``top`` (a module's first part) is the package's own: yaml for pyyaml, _brotli for brotli."""
    return _norm(top).lstrip("-") in (_norm(package), _norm(package).removeprefix("py"))


def _failed_roots(results: Sequence[JobResult]) -> set[tuple[str, str, str]]:
    """What a root may be, as (cause kind, project or module, X.Y): the jobs of the report whose
    own install failed ("dependency"), whose GIL its own module re-enabled ("gil-dependency")."""
    out: set[tuple[str, str, str]] = set()
    for r in results:
        if r.verdict in ("build-failure", "infra-error") and any(p.kind == "install" and not p.ok for p in r.phases):
            out.add(("dependency", _norm(r.package), _minor(r)))
        f = _deciding(r)
        top = f.module.split(".")[0] if f is not None and r.verdict == "gil-reenabled" else ""
        if top and _own_module(top, r.package):
            out.add(("gil-dependency", _norm(top), _minor(r)))
    return out


def _deciding(r: JobResult) -> Finding | None:
    return next((f for f in r.findings if f.kind == r.verdict), r.findings[0] if r.findings else None)


def _test_deps_cause(r: JobResult) -> _Seen | None:
    """Test dependencies that did not install (the test-deps phase), read like an install."""
    for p in r.phases:
        if p.kind == "setup" and not p.ok:
            via = " ".join(s.name for s in p.setup if s.kind == NOT_INSTALLED_KIND)  # parse.testdeps
            found = _install_cause(r, p, via=via)
            if found is not None:
                return found
    return None


def _cause_of(r: JobResult) -> _Seen | None:
    """The cause that decided the job, when it is not about the package itself."""
    f = _deciding(r)
    if r.verdict in ("build-failure", "infra-error"):
        phase = next((p for p in r.phases if f is not None and p.name == f.phase), None)
        if phase is not None and phase.kind == "install" and not phase.ok:
            found = _install_cause(r, phase)
            if found is not None:
                return found
    if r.verdict in ("infra-error", "no-tests"):  # the suite could not run without them
        found = _test_deps_cause(r)
        if found is not None:
            return found
    if r.verdict == "no-tests":
        where = "in the sdist" if r.source == "pypi" else "in the source"
        return _Seen(("no-tests", where), "no-tests", f"no tests {where}")
    if r.verdict == "infra-error" and f is not None and f.message:
        # "threads-gil0-r1: exit code 4, and no test results could be read": the phase's name
        # and the numbers differ from job to job, the words are the cause
        what = f.message.removeprefix(f"{f.phase}: ") if f.phase else f.message
        said = _clean(what.split(": ")[0])
        text = _NUMBER.sub("N", said)  # the key; the text said is filled (_filled)
        return _Seen(("infra", text), "infrastructure", said, detail=_clean(f.message))
    if r.verdict == "gil-reenabled" and f is not None:
        top = f.module.split(".")[0]
        if top and not _own_module(top, r.package):
            return _Seen(
                ("gil", top),
                "gil-dependency",
                f"the GIL is re-enabled by module {top} (another distribution)",
                root=top,
                detail=f.module,
                minor=_minor(r),
            )
    return None


def build_causes(results: Sequence[JobResult], labels: Mapping[str, str] | None = None) -> tuple[Cause, ...]:
    """The root causes of ``results`` (in report order), the largest group first; a root only
    where it is a job of ``results`` that failed itself (the module docstring)."""
    labels = labels or {}
    roots = _failed_roots(results)
    groups: dict[tuple[str, ...], tuple[_Seen, list[tuple[JobResult, _Seen]]]] = {}
    for r in results:
        seen = _cause_of(r)
        if seen is not None and seen.kind != "no-tests":  # a fact about the package itself (#44)
            groups.setdefault(seen.key, (seen, []))[1].append((r, seen))
    for key in [k for k in groups if k[0] == "build" and not k[-1]]:  # no root read
        rooted = [k for k in groups if k[:-1] == key[:-1] and k[-1]]
        if len(rooted) == 1:  # the one group of the same error line with a root
            groups[rooted[0]][1].extend(groups.pop(key)[1])
    out = []
    for seen, jobs in groups.values():
        if seen.kind == "gil-dependency":  # only on a Python where the module's own job re-enabled it
            jobs = [(r, s) for r, s in jobs if ("gil-dependency", _norm(s.root), s.minor) in roots]
        members = tuple(
            CauseMember(
                package=r.package,
                version=r.version,
                interpreter=labels.get(r.interpreter.name, r.interpreter.name),
                job_id=r.job_id,
                via=s.via,
            )
            for r, s in jobs
        )
        names = {_norm(m.package) for m in members}
        if seen.kind in ("dependency", "test-dependency"):
            root = next((s.root for _, s in jobs if s.root), "")
            if names <= {_norm(root)} or (not root and len(names) < 2):
                continue  # the package's own build: about itself, the root of no other
            if root and ("dependency", _norm(root), seen.minor) not in roots:
                continue  # named by log text only: its own cause, not another project's
            kinds = {s.kind for _, s in jobs}
            kind = "dependency" if "dependency" in kinds else "test-dependency"
            version = next((s.root_version for _, s in jobs if s.root == root and s.root_version), "")
            seen = _Seen(
                seen.key, kind, _dependency_text(root, version, seen.minor, seen.detail), root, version, seen.detail
            )
            members = tuple(replace(m, via="" if _norm(m.via) == _norm(root) else m.via) for m in members)
        if seen.kind == "infrastructure":
            seen = replace(seen, text=_filled([s.text for _, s in jobs]))
        if seen.kind == "gil-dependency" and len(names) < 2:
            continue  # one package: most likely its own module under another name (yaml)
        out.append(
            Cause(
                kind=seen.kind,
                text=seen.text,
                root=seen.root,
                root_version=seen.root_version,
                detail=seen.detail,
                members=members,
            )
        )
    return tuple(sorted(out, key=lambda c: -c.count))
