"""What the parsers read from one phase's log, and what a job derives from its phases.

Frozen dataclasses, each with one ``to_dict``/``from_dict``, for the parts of a result that
used to be free-form dicts: a crash, a hang, pytest-run-parallel's account of a threaded run
(``harness.parse`` writes these into ``Phase``), the thread coverage per GIL mode
(``harness.verdict.coverage``) and the wheel column (``harness.wheels``).  ``from_dict``
ignores keys it does not know and fills missing ones with defaults, so results written by an
older harness read back.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field, fields
from typing import Any


@functools.cache
def _names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


def _known(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k in _names(cls)}


def _str_map(v: Any) -> dict[str, str]:
    return {str(k): str(x) for k, x in v.items()} if isinstance(v, dict) else {}


@dataclass(frozen=True, kw_only=True)
class Crash:
    """One crashed test (or the test process, when no test can be named) in a phase."""

    test_id: str = ""
    signal: int | None = None
    fatal: str = ""  # "Segmentation fault", from ``Fatal Python error: ...``
    stack_top: str = ""  # innermost frame of the crashed thread
    test_frame: str = ""  # the frame in the test's own function, when in the dump
    excerpt: str = ""  # faulthandler's dump, trimmed
    worker: bool = False  # reported by pytest-xdist's controller ("worker 'gw0' crashed")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Crash:
        return cls(**_known(cls, d))


@dataclass(frozen=True, kw_only=True)
class HungTest:
    """A test pytest-timeout stopped, with where its threads waited."""

    test_id: str
    stack_top: str = ""  # the package frame the test waited in
    excerpt: str = ""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HungTest:
        return cls(**_known(cls, {"test_id": "", **d}))


@dataclass(frozen=True, kw_only=True)
class Hang:
    """What hung in a phase: tests pytest-timeout stopped, or the job timeout."""

    tests: tuple[HungTest, ...] = ()
    job_timeout: bool = False  # the whole phase ran past its budget
    running: str = ""  # the test that was running at the job timeout, if known
    why: str = ""  # the job timeout in words

    @property
    def test_id(self) -> str:
        return self.tests[0].test_id if self.tests else self.running

    @property
    def excerpt(self) -> str:
        return self.tests[0].excerpt if self.tests else self.why

    @property
    def stack_top(self) -> str:
        return self.tests[0].stack_top if self.tests else ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["tests"] = [asdict(t) for t in self.tests]
        d["test_id"], d["excerpt"] = self.test_id, self.excerpt  # for readers of the JSON
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Hang:
        tests = tuple(HungTest.from_dict(t) for t in d.get("tests") or () if isinstance(t, dict))
        return cls(tests=tests, job_timeout=bool(d.get("job_timeout")),
                   running=str(d.get("running") or ""), why=str(d.get("why") or ""))


@dataclass(frozen=True, kw_only=True)
class ParallelInfo:
    """pytest-run-parallel's account of one threaded (or ``--collect-only``) run."""

    trusted: bool = False  # not from pytest-xdist's controller, which reports nothing true of threads
    source: str = ""  # "collect" | "log" | "xdist"
    collected_parallel: int | None = None  # "Collected N items to run in parallel"
    unsafe_count: int | None = None
    single: dict[str, str] = field(default_factory=dict)  # ran single-threaded: test id -> reason
    skipped: dict[str, str] = field(default_factory=dict)  # skipped as thread-unsafe: id -> reason
    in_threads: tuple[str, ...] = ()  # test ids marked PARALLEL in the log
    all_parallel_claimed: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["in_threads"] = list(self.in_threads)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ParallelInfo:
        d = _known(cls, d)
        d["single"], d["skipped"] = _str_map(d.get("single")), _str_map(d.get("skipped"))
        d["in_threads"] = tuple(d.get("in_threads") or ())
        return cls(**d)


@dataclass(frozen=True, kw_only=True)
class ModeCoverage:
    """How much of the suite ran in threads in one GIL mode (harness.verdict.coverage)."""

    mode: int
    known: bool = False  # a trusted source said which tests ran in threads
    source: str = "none"
    in_threads: int | None = None
    single: int | None = None
    skipped_unsafe: int | None = None
    skipped: int = 0
    total: int = 0
    collected_parallel: int | None = None
    reasons: dict[str, str] = field(default_factory=dict)  # test id -> why not in threads

    @property
    def fraction(self) -> float | None:
        return self.in_threads / self.total if self.known and self.total and self.in_threads is not None else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModeCoverage:
        d = _known(cls, {"mode": -1, **d})
        d["reasons"] = _str_map(d.get("reasons"))
        return cls(**d)


def coverage_to_dict(cov: dict[str, ModeCoverage]) -> dict[str, Any]:
    return {k: c.to_dict() for k, c in cov.items()}


def coverage_from_dict(d: Any) -> dict[str, ModeCoverage]:
    if not isinstance(d, dict):
        return {}
    return {str(k): ModeCoverage.from_dict(v) for k, v in d.items() if isinstance(v, dict)}


@dataclass(frozen=True, kw_only=True)
class Wheel:
    """The wheel column: what the index offers for the release and what pip installed."""

    installed: str = ""  # "wheel (free-threaded)", "built from sdist", "local source", ...
    installed_file: str = ""
    available: str = ""  # "free-threaded" | "pure" | "gil-only" | "sdist-only" | "unknown" | "n/a"
    warning: str = ""  # a free-threaded wheel that re-enables the GIL

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v or k != "warning"}

    @classmethod
    def from_dict(cls, d: Any) -> Wheel:
        return cls(**{k: str(v) for k, v in _known(cls, d).items()}) if isinstance(d, dict) else cls()
