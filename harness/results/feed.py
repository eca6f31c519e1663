"""The findings feed (issue #57): ``findings.json`` beside report.json, one entry per finding a
maintainer could file, each under an id that stays the same from run to run.

- **The id** is the first 16 hex digits of the sha256 of a canonical line: the package's PEP 503
  name, its version, the interpreter's line (its minor version from the interpreter's own version
  field, ``t`` for a free-threaded build, ``+thread`` for a sanitizer build: ``3.13t``,
  ``3.13t+thread``), the finding's kind and its test id (or, without one, the module it names; a
  build failure has neither).  Nothing of the run goes in (no job id, no interpreter name, no
  patch version, no time), so two runs of the same matrix, a re-render and a report merged from
  shards give the same ids; a new test, version or kind gives a new one.  Two jobs on the same
  line (3.13.5t and 3.13.15t) that find the same are one entry with both in ``counts``.
- **The lineage** is the same digest without the version: what carries ``reported`` across a
  release.  A finding of a new release whose lineage was reported keeps the link (the upstream
  issue is the same until someone says otherwise); its ``first_seen`` is its own (the id is new).
- **Memory**: the previous feed (``report --previous``'s findings.json, else the one already in
  the output dir) gives ``first_seen`` and ``reported`` of every id still shown; an entry no
  longer shown is dropped.  ``reported.yaml`` (harness.results.reported) adds or replaces links.
- Left out: the info-only kinds (``harness.core.model.INFO_KINDS``) and ``infra-error`` (the
  harness's own problem, nothing to file upstream).

Pure: the report and the inputs in, the feed and its warning lines out.  ``Feed.from_dict`` is the
one reader of a findings.json.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from ..core.model import INFO_KINDS, Finding, severity
from .report import CompatReport, JobEntry, JobInterpreter

FEED_SCHEMA = 1
FEED_FILE = "findings.json"
NOT_FILED = (*INFO_KINDS, "infra-error")  # kinds the feed leaves out
ID_RE = re.compile(r"^[0-9a-f]{16}$")
_DAY_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def https_url(url: Any) -> str:
    """``url`` if it is an absolute https URL with a host and no space or control character, else ""."""
    if not isinstance(url, str) or len(url) > 2000 or any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        return ""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    return url if parts.scheme == "https" and parts.hostname else ""


def canonical_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def interpreter_line(it: JobInterpreter) -> tuple[str, str]:
    """(minor, line): ``("3.13", "3.13t")``; ``"3.13t+thread"`` for a ThreadSanitizer build."""
    version = it.version or it.full_version
    minor = ".".join(version.split(".")[:2]) if version else it.name
    return minor, minor + ("t" if it.free_threaded else "") + (f"+{it.sanitizer}" if it.sanitizer else "")


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def finding_id(package: str, version: str, line: str, kind: str, subject: str) -> str:
    """The stable id (see the module docstring)."""
    return _digest("ft-harness finding 1", canonical_name(package), version, line, kind, subject)


def lineage_id(package: str, line: str, kind: str, subject: str) -> str:
    """The id without the version: what carries ``reported`` to the next release."""
    return _digest("ft-harness lineage 1", canonical_name(package), line, kind, subject)


def subject(f: Finding) -> str:
    """What the finding is about: its test id, else the module it names, else ""."""
    return f.test_id or f.module


def _str(d: Mapping[str, Any], key: str, where: str, *, empty: bool = True) -> str:
    v = d.get(key)
    if not isinstance(v, str) or (not empty and not v):
        raise ValueError(f"{where}: {key!r} must be a{'' if empty else ' non-empty'} string")
    return v


@dataclass(frozen=True, kw_only=True)
class Seen:
    """One job that showed the finding, with the finding's counts as the report has them."""

    job_id: str
    interpreter: str  # the interpreter's name in the matrix
    full_version: str = ""  # CPython 3.13.5
    verdict: str = ""  # the job's verdict
    count: int = 0
    runs: int = 0
    by_mode: dict[str, str] = field(default_factory=dict)

    @property
    def ratio(self) -> str:
        return f"{self.count}/{self.runs}" if self.runs else ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "interpreter": self.interpreter,
            "full_version": self.full_version,
            "verdict": self.verdict,
            "count": self.count,
            "runs": self.runs,
            "ratio": self.ratio,
            "by_mode": dict(self.by_mode),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str) -> Seen:
        nums = {k: d.get(k, 0) for k in ("count", "runs")}
        if any(not isinstance(v, int) or isinstance(v, bool) or v < 0 for v in nums.values()):
            raise ValueError(f"{where}: 'count' and 'runs' must be integers >= 0")
        modes = d.get("by_mode", {})
        if not isinstance(modes, dict) or not all(isinstance(v, str) for v in modes.values()):
            raise ValueError(f"{where}: 'by_mode' must map a mode to a text like '1/3'")
        return cls(
            job_id=_str(d, "job_id", where, empty=False),
            interpreter=_str(d, "interpreter", where),
            full_version=_str(d, "full_version", where),
            verdict=_str(d, "verdict", where),
            by_mode={str(k): v for k, v in modes.items()},
            **nums,
        )


@dataclass(frozen=True, kw_only=True)
class FeedEntry:
    """One finding of the feed (findings.json's ``findings[]``)."""

    id: str
    lineage: str
    package: str
    version: str
    minor: str  # "3.13"
    line: str  # "3.13t", "3.13t+thread"
    kind: str
    test: str = ""  # the test id ("" for an import or a build)
    module: str = ""  # the module a gil-reenabled names
    verdict: str = ""  # the most severe verdict of the jobs in ``counts``
    counts: tuple[Seen, ...] = ()
    first_seen: str = ""  # YYYY-MM-DD
    last_seen: str = ""
    reported: str | None = None  # the upstream issue (https), or None

    @property
    def interpreters(self) -> tuple[str, ...]:
        return tuple(s.interpreter for s in self.counts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "lineage": self.lineage,
            "package": self.package,
            "version": self.version,
            "interpreter": {"minor": self.minor, "line": self.line, "names": list(self.interpreters)},
            "kind": self.kind,
            "test": self.test,
            "module": self.module,
            "verdict": self.verdict,
            "counts": [s.to_dict() for s in self.counts],
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
            "reported": self.reported,
        }

    @classmethod
    def from_dict(cls, d: Any, where: str) -> FeedEntry:
        if not isinstance(d, dict):
            raise ValueError(f"{where} must be an object")
        ids = {k: _str(d, k, where) for k in ("id", "lineage")}
        if not all(ID_RE.match(v) for v in ids.values()):
            raise ValueError(f"{where}: 'id' and 'lineage' must be 16 lowercase hex digits")
        days = {k: _str(d, k, where) for k in ("first_seen", "last_seen")}
        if not all(_DAY_RE.match(v) for v in days.values()):
            raise ValueError(f"{where}: 'first_seen' and 'last_seen' must be dates (YYYY-MM-DD)")
        reported = d.get("reported")
        if reported is not None and not https_url(reported):
            raise ValueError(f"{where}: 'reported' must be an https URL or null")
        it = d.get("interpreter")
        if not isinstance(it, dict):
            raise ValueError(f"{where}: 'interpreter' must be an object")
        counts = d.get("counts")
        if not isinstance(counts, list):
            raise ValueError(f"{where}: 'counts' must be a list")
        return cls(
            **ids,
            **days,
            reported=reported,
            package=_str(d, "package", where, empty=False),
            version=_str(d, "version", where),
            minor=_str(it, "minor", f"{where}.interpreter"),
            line=_str(it, "line", f"{where}.interpreter"),
            kind=_str(d, "kind", where, empty=False),
            test=_str(d, "test", where),
            module=_str(d, "module", where),
            verdict=_str(d, "verdict", where),
            counts=tuple(Seen.from_dict(s, f"{where}.counts[{i}]") for i, s in enumerate(counts)),
        )


@dataclass(frozen=True, kw_only=True)
class Feed:
    """findings.json: the feed of one report."""

    schema: int = FEED_SCHEMA
    day: str = ""  # the run's day (when its tests finished), YYYY-MM-DD
    findings: tuple[FeedEntry, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"schema": self.schema, "day": self.day, "findings": [e.to_dict() for e in self.findings]}

    @classmethod
    def from_dict(cls, d: Any) -> Feed:
        """A findings.json document; ValueError naming the first thing wrong (its key)."""
        if not isinstance(d, dict) or not isinstance(d.get("findings"), list):
            raise ValueError("has no 'findings' list (is it a findings.json?)")
        if d.get("schema") != FEED_SCHEMA:
            raise ValueError(f"schema {d.get('schema')!r}, expected {FEED_SCHEMA} (written by another ft-harness?)")
        day = d.get("day", "")
        if not isinstance(day, str) or (day and not _DAY_RE.match(day)):
            raise ValueError("'day' must be a date (YYYY-MM-DD)")
        entries = tuple(FeedEntry.from_dict(e, f"findings[{i}]") for i, e in enumerate(d["findings"]))
        return cls(day=day, findings=entries)

    def links(self) -> dict[tuple[str, str, str], str]:
        """(job id, kind, test id or module) -> the reported link, for the renderers."""
        out: dict[tuple[str, str, str], str] = {}
        for e in self.findings:
            for s in e.counts if e.reported else ():
                out[(s.job_id, e.kind, e.test or e.module)] = e.reported or ""
        return out


def run_day(report: CompatReport) -> str:
    """The day the run's tests finished (the same for a re-render of the same results), else today."""
    stamp = report.meta.finished or report.meta.started
    return stamp[:10] if _DAY_RE.match(stamp[:10]) else datetime.now(UTC).date().isoformat()


def _seen(p: JobEntry, f: Finding) -> Seen:
    return Seen(
        job_id=p.job_id,
        interpreter=p.interpreter.name,
        full_version=p.interpreter.full_version or p.interpreter.version,
        verdict=p.verdict,
        count=f.count,
        runs=f.runs,
        by_mode=dict(f.by_mode),
    )


def _entries(report: CompatReport, day: str) -> dict[str, FeedEntry]:
    """The report's findings as fresh entries (no memory yet), by id."""
    out: dict[str, FeedEntry] = {}
    for p in report.packages:
        minor, line = interpreter_line(p.interpreter)
        version = p.version or p.requested
        for f in p.findings:
            if f.kind in NOT_FILED:
                continue
            what = subject(f)
            fid = finding_id(p.name, version, line, f.kind, what)
            old = out.get(fid)
            if old is not None and p.job_id in (s.job_id for s in old.counts):
                continue  # the same finding twice in one job: shown once
            counts = (*(old.counts if old else ()), _seen(p, f))
            worst = min((s.verdict for s in counts), key=severity)
            out[fid] = FeedEntry(
                id=fid,
                lineage=lineage_id(p.name, line, f.kind, what),
                package=p.name,
                version=version,
                minor=minor,
                line=line,
                kind=f.kind,
                test=f.test_id,
                module=f.module if not f.test_id else "",
                verdict=worst,
                counts=counts,
                first_seen=day,
                last_seen=day,
            )
    return out


def build(
    report: CompatReport, *, previous: Feed | None = None, reported: Mapping[str, str] | None = None
) -> tuple[Feed, list[str]]:
    """The feed of ``report``: ``first_seen`` and ``reported`` carried from ``previous`` for the
    ids still shown (``reported`` by lineage too), ``reported`` (reported.yaml: id -> https URL)
    over them; an id of ``reported`` that names no finding of this report, nor one of
    ``previous`` whose lineage is still shown, comes back in the list of ids it could not place."""
    day = run_day(report)
    fresh = _entries(report, day)
    old = {e.id: e for e in previous.findings} if previous else {}
    by_lineage = {e.lineage: e.reported for e in old.values() if e.reported}
    links = dict(reported or {})
    unplaced = []
    for rid, url in links.items():  # an id of an earlier release: its lineage
        if rid not in fresh:
            if rid in old and any(e.lineage == old[rid].lineage for e in fresh.values()):
                by_lineage[old[rid].lineage] = url
            else:
                unplaced.append(rid)
    entries = []
    for fid, e in fresh.items():
        before = old.get(fid)
        first = min(before.first_seen, day) if before else day
        link = links.get(fid) or (before.reported if before else None) or by_lineage.get(e.lineage)
        entries.append(replace(e, first_seen=first, reported=link or None))
    entries.sort(key=lambda e: (severity(e.kind), canonical_name(e.package), e.version, e.line, e.test or e.module))
    return Feed(day=day, findings=tuple(entries)), unplaced
