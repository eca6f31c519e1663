"""The report as typed values: what ``harness.results.aggregate`` builds and every renderer reads.

report.json is ``CompatReport.to_dict()`` (its schema: harness/schema/report.schema.json).  A
report.json read back (``report --previous``, ``diff``) goes through ``CompatReport.from_dict``,
which ignores keys it does not know and fills missing ones with defaults, so a report written by
an older harness (schema 1: no columns, no table) reads back; ``harness.results.diff.read_report``
first checks a document given on the command line and says in one line what is wrong with it.

``packages`` holds one ``JobEntry`` per job (interpreter x package; the key's name is older than
the columns); ``interpreters`` the ``Column`` s, oldest version first; ``table`` a
``PackageRow`` per package, with a ``Cell`` per interpreter it ran on.  Findings are
``harness.core.model.Finding``, as the rest of the harness has them, and a ``Change`` is what
``harness.results.diff`` finds between two reports; coverage and the wheel are ``harness.core.evidence``'s
types.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ..core.evidence import ModeCoverage, Wheel, _is_int, coverage_from_dict, coverage_to_dict, field_names, known
from ..core.gilonrecord import GilOn
from ..core.model import Finding
from ..core.proberecord import LaterGil
from ..core.suiterecord import TestSetup
from ..core.threadplan import ThreadPlan
from .causes import Cause
from .change import CHANGE_KINDS, NOT_THE_PACKAGE, Change  # noqa: F401 - report.json's changes, read here

# 2: ``interpreters`` and ``table``; ``summary`` counts packages; interpreter source, full_version.
# 3: finding kind ``budget-spent``; 4: ``slow-in-threads``; 5: ``causes`` (harness.results.causes)
# 6: verdict and finding kind ``skipped``; ``test_setup`` ``recipe`` (harness.testsetup.registry)
# 7: a job's ``sdist_sha256`` and ``reused_from`` (run --reuse, harness.reuse.reuse)
# 8: ``packages[].wheel.fallback`` (harness.verdict.artifact); 9: finding kind ``repeat-failure``
# 10: the question the table answers (harness.results.answer): ``answers`` (packages per answer),
#     ``answer``/``caveat``/``cause`` on each job, cell and row; the reach of the check
#     (``reach``: tests checked in threads, of the tests run) on each job and cell; a job's
#     ``gil_on`` (what its GIL-on runs ran, and why); a cell's ``wheel`` (what the index offers)
# 10 (also): change kind ``flaky`` with ``detail`` (harness.results.flaky); ``packages[].rules_out``
# 10 (also): cause kind ``build-environment`` (harness.parse.buildenv: what a build lacked of its machine)
# 11: ``packages[].findings[].by_mode``: a finding's counts per GIL mode (harness.results.flaky)
# 12: ``meta.store.seconds`` and ``charged`` (the store's time and refusals per job, #56); results of schema 16
REPORT_SCHEMA = 13


def _obj(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _seq(v: Any) -> tuple[Any, ...]:
    return tuple(v) if isinstance(v, list | tuple) else ()


def _objs(v: Any) -> list[dict[str, Any]]:
    return [x for x in _seq(v) if isinstance(x, dict)]


def _flat_dict(obj: Any) -> dict[str, Any]:
    """A dataclass of plain fields as JSON-ready values: tuples as lists, dicts copied."""
    out = {}
    for f in fields(obj):
        v = getattr(obj, f.name)
        out[f.name] = list(v) if isinstance(v, tuple) else dict(v) if isinstance(v, dict) else v
    return out


def _from_flat(
    cls: type, d: Mapping[str, Any], *, seqs: tuple[str, ...] = (), objs: tuple[str, ...] = ()
) -> dict[str, Any]:
    """``cls``'s known keys of ``d``, with ``seqs`` read as tuples and ``objs`` as dicts."""
    out = known(cls, d)
    out.update({k: _seq(out.get(k)) for k in seqs})
    out.update({k: _obj(out.get(k)) for k in objs})
    return out


@dataclass(frozen=True, kw_only=True)
class Column:
    """An interpreter of the report, as a column of the table."""

    name: str
    version: str = ""
    full_version: str = ""
    source: str = ""
    configure: tuple[str, ...] = ()
    sanitizer: str | None = None
    jobs: int = 0
    label: str = ""  # short and unique among the columns: 3.13.5t, 3.13.5t+thread, or the name

    def to_dict(self) -> dict[str, Any]:
        return _flat_dict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Column:
        return cls(**{"name": "", **_from_flat(cls, d, seqs=("configure",))})


@dataclass(frozen=True, kw_only=True)
class JobInterpreter:
    """The interpreter a job ran on (the part of ``harness.core.model.InterpreterInfo`` a report keeps)."""

    name: str
    version: str = ""
    key: str = ""
    configure: tuple[str, ...] = ()
    free_threaded: bool = True
    sanitizer: str | None = None
    source: str = ""  # "" in reports of schema 1
    full_version: str = ""  # "" in reports of schema 1

    def to_dict(self) -> dict[str, Any]:
        return _flat_dict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> JobInterpreter:
        return cls(**{"name": "", **_from_flat(cls, d, seqs=("configure",))})


@dataclass(frozen=True, kw_only=True)
class PhaseRow:
    """One phase of a job as the report shows it (no per-test outcomes, no parsed evidence)."""

    name: str
    kind: str = ""
    gil: int | None = None
    rep: int = 0
    outcome: str = ""  # "ok" | "failed" | "crashed" | "timed out" | "oom" | "infra"
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    oom_killed: bool = False
    infra: str = ""
    duration: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)
    command: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    log: str = ""  # relative to the output dir, or ""
    junit: str = ""
    gil_modules: tuple[str, ...] = ()
    failing_not_kept: int = 0  # outcomes other than passed/skipped its result did not keep (#56)

    def to_dict(self) -> dict[str, Any]:
        d = _flat_dict(self)
        if not self.failing_not_kept:  # written only where a result lost some
            del d["failing_not_kept"]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PhaseRow:
        return cls(**{"name": "", **_from_flat(cls, d, seqs=("command", "gil_modules"), objs=("counts", "env"))})


@dataclass(frozen=True, kw_only=True)
class ProjectMeta:
    """The project's metadata as the job's probe read it: free-form (``raw``, what report.json
    carries and the package page lists in full), with typed views of the parts the renderers use."""

    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def summary(self) -> str:
        v = self.raw.get("summary")
        return v if isinstance(v, str) else ""

    @property
    def urls(self) -> list[tuple[str, str]]:
        """(label, url) pairs: project_urls (a mapping, or "label, url" strings), then the home
        page; not checked (a renderer links only the safe ones)."""
        out: list[tuple[str, str]] = []
        urls = self.raw.get("project_urls")
        if isinstance(urls, dict):
            out += [(str(k), str(v)) for k, v in urls.items()]
        elif isinstance(urls, list):
            for item in urls:
                if isinstance(item, str) and "," in item:
                    label, _, url = item.partition(",")
                    out.append((label.strip(), url.strip()))
        for key in ("home_page", "homepage", "url"):
            if isinstance(self.raw.get(key), str):
                out.append(("Homepage", self.raw[key]))
        return out

    def to_dict(self) -> dict[str, Any]:
        return self.raw


def _finding_dict(f: Finding) -> dict[str, Any]:
    """Finding.to_dict without dataclasses.asdict's deep copy (reports can hold 10,000 jobs)."""
    d = {name: getattr(f, name) for name in field_names(Finding)}
    d["modes"] = list(f.modes)
    d["ratio"] = f.ratio
    return d


@dataclass(frozen=True, kw_only=True)
class JobEntry:
    """One (interpreter, package) job: what it ran, its verdict and why (``report.packages``)."""

    job_id: str
    key: str = ""
    name: str = ""
    version: str = ""
    requested: str = ""
    source: str = ""  # "pypi" | "local"
    interpreter: JobInterpreter
    settings: dict[str, Any] = field(default_factory=dict)
    backend: str = ""
    started: str = ""
    finished: str = ""
    harness_version: str = ""
    duration: float = 0.0  # the phases' together
    verdict: str = ""
    qualifier: str = ""
    findings: tuple[Finding, ...] = ()  # most severe first
    phases: tuple[PhaseRow, ...] = ()
    coverage: dict[str, ModeCoverage] = field(default_factory=dict)
    wheel: Wheel | None = None  # None: not looked at
    metadata: ProjectMeta = field(default_factory=ProjectMeta)
    notes: str = ""
    links: tuple[str, ...] = ()
    test_setup: TestSetup | None = None  # None: not recorded (the result's: harness.core.suiterecord)
    change: str = ""  # since the previous report (a harness.results.diff.CHANGE_KINDS word), "" if none
    sdist_sha256: str = ""
    reused_from: str = ""  # not run in this run: its result came from this earlier run (--reuse)
    rules_out: str = ""  # a clean verdict: the failure rate its runs rule out (schema 10)
    gil_on: GilOn | None = None  # what the GIL-on runs ran and why (None: not recorded)
    gil_with_test_deps: tuple[LaterGil, ...] = ()  # GIL re-enabled only with the test deps: notes (#57)
    thread_plan: ThreadPlan | None = None  # the threaded runs planned to the budget (#58); None: not planned
    answer: str = ""  # harness.results.answer: "ft-problem" | "both-modes" | "not-judged" | "no-ft-problem"
    caveat: str = ""  # "fails in threads with the GIL too", "crashes with the GIL on too", ...
    cause: str = ""  # a short cause: "refuses 3.13t; supports 3.14t+"

    @property
    def reach(self) -> tuple[int | None, int]:
        """(tests checked in threads or None: not known, tests run): harness.verdict.coverage.reach."""
        c = self.coverage.get("gil0")
        if c is None:
            return None, 0
        return (c.checked if _is_int(c.checked) else None), (c.total if _is_int(c.total) else 0)

    @property
    def verdict_label(self) -> str:
        return f"{self.verdict} ({self.qualifier})" if self.qualifier else self.verdict

    @property
    def logs(self) -> list[str]:
        return [ph.log for ph in self.phases if ph.log]

    def to_dict(self) -> dict[str, Any]:
        d = {
            "job_id": self.job_id,
            "key": self.key,
            "name": self.name,
            "version": self.version,
            "requested": self.requested,
            "source": self.source,
            "interpreter": self.interpreter.to_dict(),
            "settings": self.settings,
            "backend": self.backend,
            "started": self.started,
            "finished": self.finished,
            "harness_version": self.harness_version,
            "duration": self.duration,
            "verdict": self.verdict,
            "qualifier": self.qualifier,
            "verdict_label": self.verdict_label,
            "findings": [_finding_dict(f) for f in self.findings],
            "phases": [ph.to_dict() for ph in self.phases],
            "coverage": coverage_to_dict(self.coverage),
            "wheel": self.wheel.to_dict() if self.wheel else {},
            "metadata": self.metadata.to_dict(),
            "notes": self.notes,
            "links": list(self.links),
            "test_setup": self.test_setup.to_report_dict() if self.test_setup else {},
            "logs": self.logs,
            "sdist_sha256": self.sdist_sha256,
            "reused_from": self.reused_from,
            "rules_out": self.rules_out,
            "gil_on": self.gil_on.to_dict() if self.gil_on else None,
            "gil_with_test_deps": [g.to_dict() for g in self.gil_with_test_deps],
            "thread_plan": self.thread_plan.to_dict() if self.thread_plan else None,
            "answer": self.answer,
            "caveat": self.caveat,
            "cause": self.cause,
            "reach": {"checked": self.reach[0], "tests": self.reach[1]},
        }
        if self.change:
            d["change"] = self.change
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> JobEntry:
        d = {"job_id": "", **known(cls, d)}
        d["interpreter"] = JobInterpreter.from_dict(_obj(d.get("interpreter")))
        d["settings"] = _obj(d.get("settings"))
        d["findings"] = tuple(Finding.from_dict(f) for f in _objs(d.get("findings")))
        d["phases"] = tuple(PhaseRow.from_dict(p) for p in _objs(d.get("phases")))
        d["coverage"] = coverage_from_dict(d.get("coverage"))
        wheel = d.get("wheel")
        d["wheel"] = Wheel.from_dict(wheel) if isinstance(wheel, dict) and wheel else None
        d["metadata"] = ProjectMeta(raw=_obj(d.get("metadata")))
        d["links"] = _seq(d.get("links"))
        setup = d.get("test_setup")
        d["test_setup"] = TestSetup.from_dict(setup) if isinstance(setup, dict) and setup else None
        d["change"] = d.get("change") or ""
        d["rules_out"] = d["rules_out"] if isinstance(d.get("rules_out"), str) else ""
        d["gil_on"] = GilOn.from_dict(d.get("gil_on"))
        d["gil_with_test_deps"] = tuple(g for x in _objs(d.get("gil_with_test_deps")) if (g := LaterGil.from_dict(x)))
        d["thread_plan"] = ThreadPlan.from_dict(d.get("thread_plan"))
        for k in ("answer", "caveat", "cause"):
            d[k] = d[k] if isinstance(d.get(k), str) else ""
        return cls(**d)


@dataclass(frozen=True, kw_only=True)
class Cell:
    """A package on one interpreter: its job's verdict (``PackageRow.cells``)."""

    verdict: str
    qualifier: str = ""
    version: str = ""
    job_id: str = ""  # the JobEntry this cell shows
    change: str = ""
    answer: str = ""  # as the job's (harness.results.answer)
    caveat: str = ""
    cause: str = ""
    checked: int | None = None  # the reach: tests checked in threads (None: not known) ...
    tests: int = 0  # ... of the tests run
    wheel: str = ""  # what the index offers: "free-threaded" | "pure" | "gil-only" | "sdist-only" | ...

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "verdict": self.verdict,
            "qualifier": self.qualifier,
            "version": self.version,
            "job_id": self.job_id,
        }
        if self.change:
            d["change"] = self.change
        d.update(
            answer=self.answer,
            caveat=self.caveat,
            cause=self.cause,
            reach={"checked": self.checked, "tests": self.tests},
            wheel=self.wheel,
        )
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Cell:
        reach = _obj(d.get("reach"))
        d = {"verdict": "", **known(cls, d)}
        d["change"] = d.get("change") or ""
        for k in ("answer", "caveat", "cause", "wheel"):
            d[k] = d[k] if isinstance(d.get(k), str) else ""
        d["checked"] = reach.get("checked") if _is_int(reach.get("checked")) else None
        d["tests"] = reach.get("tests") if _is_int(reach.get("tests")) else 0
        return cls(**d)


@dataclass(frozen=True, kw_only=True)
class PackageRow:
    """One package: a cell per interpreter it ran on (in column order), the most severe verdict
    of them (what ``summary`` counts) and what differs between them."""

    name: str
    version: str = ""  # "" when it differs per interpreter
    verdict: str = ""
    cells: dict[str, Cell] = field(default_factory=dict)  # interpreter name -> cell
    across: str = ""  # "build-failure on 3.13.5t, compatible on 3.13.15t"; "" when all agree
    answer: str = ""  # the most serious of the cells' answers (harness.results.answer.worst)

    def cell(self, interpreter: str) -> Cell | None:
        """The package's cell on ``interpreter``; None where it did not run."""
        return self.cells.get(interpreter)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "verdict": self.verdict,
            "cells": {k: c.to_dict() for k, c in self.cells.items()},
            "across": self.across,
            "answer": self.answer,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PackageRow:
        d = {"name": "", **known(cls, d)}
        d["cells"] = {str(k): Cell.from_dict(c) for k, c in _obj(d.get("cells")).items() if isinstance(c, dict)}
        d["answer"] = d["answer"] if isinstance(d.get("answer"), str) else ""
        return cls(**d)


@dataclass(frozen=True, kw_only=True)
class Meta:
    """The run: when the tests ran, with what, and what the command that wrote the report added."""

    harness_version: str = ""
    matrix_digest: str = ""
    started: str = ""  # the earliest result's start (also after a merge of shards)
    finished: str = ""  # the latest result's end
    backends: tuple[str, ...] = ()
    interpreters: tuple[str, ...] = ()  # the columns' names
    jobs: int = 0
    # What the command added (harness.cli.runjobs, .reporting: matrix, backend, shard, sources), as it gave
    # them and in its order: no renderer reads them, report.json keeps them.
    extra: dict[str, Any] = field(default_factory=dict)
    generated: str = ""  # when the report was written, when later than finished; "" otherwise

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "harness_version": self.harness_version,
            "matrix_digest": self.matrix_digest,
            "started": self.started,
            "finished": self.finished,
            "backends": list(self.backends),
            "interpreters": list(self.interpreters),
            "jobs": self.jobs,
            **self.extra,
        }
        if self.generated:
            d["generated"] = self.generated
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Meta:
        kw = known(cls, d)
        extra = {k: v for k, v in d.items() if k not in kw}
        kw.pop("extra", None)
        for name in ("backends", "interpreters"):
            kw[name] = _seq(kw.get(name))
        kw["generated"] = str(kw.get("generated") or "")
        return cls(**kw, extra=extra)


@dataclass(frozen=True, kw_only=True)
class CompatReport:
    """The merged result of one run (see the module's docstring)."""

    schema: int = REPORT_SCHEMA
    meta: Meta = field(default_factory=Meta)
    summary: dict[str, int] = field(default_factory=dict)  # verdict -> packages, every verdict
    interpreters: tuple[Column, ...] = ()
    packages: tuple[JobEntry, ...] = ()
    table: tuple[PackageRow, ...] = ()
    missing: tuple[str, ...] = ()  # job ids the plan expected that have no result
    changes: tuple[Change, ...] | None = None  # None: built without a previous report
    causes: tuple[Cause, ...] = ()  # root causes across packages, largest first (schema 5)
    answers: dict[str, int] = field(default_factory=dict)  # answer -> packages (schema 10)

    @property
    def several(self) -> bool:
        """More than one interpreter: the renderers show what differs between them."""
        return len(self.interpreters) > 1

    def labels(self) -> dict[str, str]:
        """Interpreter name -> its column's label."""
        return {c.name: c.label for c in self.interpreters}

    def to_dict(self, *, packages: bool = True) -> dict[str, Any]:
        """report.json; ``packages=False`` leaves the jobs out (a renderer encodes them one by one)."""
        d: dict[str, Any] = {
            "schema": self.schema,
            "meta": self.meta.to_dict(),
            "summary": dict(self.summary),
            "answers": dict(self.answers),
            "interpreters": [c.to_dict() for c in self.interpreters],
        }
        if packages:
            d["packages"] = [p.to_dict() for p in self.packages]
        d["table"] = [r.to_dict() for r in self.table]
        d["missing"] = list(self.missing)
        d["causes"] = [c.to_dict() for c in self.causes]
        if self.changes is not None:
            d["changes"] = [c.to_dict() for c in self.changes]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CompatReport:
        """A report read back, in today's shape (``schema`` is REPORT_SCHEMA)."""
        changes = d.get("changes")
        return cls(
            meta=Meta.from_dict(_obj(d.get("meta"))),
            summary={str(k): v for k, v in _obj(d.get("summary")).items() if isinstance(v, int)},
            answers={str(k): v for k, v in _obj(d.get("answers")).items() if _is_int(v)},
            interpreters=tuple(Column.from_dict(c) for c in _objs(d.get("interpreters"))),
            packages=tuple(JobEntry.from_dict(p) for p in _objs(d.get("packages"))),
            table=tuple(PackageRow.from_dict(r) for r in _objs(d.get("table"))),
            missing=tuple(str(j) for j in _seq(d.get("missing"))),
            causes=tuple(Cause.from_dict(c) for c in _objs(d.get("causes"))),
            changes=None
            if not isinstance(changes, list)
            else tuple(Change.from_dict(c) for c in changes if isinstance(c, dict)),
        )
