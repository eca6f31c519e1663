"""What the parsers read from one phase's log, and what a job derives from its phases.

Frozen dataclasses, each with one ``to_dict``/``from_dict``, for the parts of a result that
used to be free-form dicts: a crash, a hang, pytest-run-parallel's account of a threaded run,
the ThreadSanitizer reports (``harness.parse`` writes these into ``Phase``), the thread
coverage per GIL mode (``harness.verdict.coverage``) and the wheel column (``harness.config.wheels``).
``from_dict`` ignores keys it does not know and fills missing ones with defaults, so results
written by an older harness read back.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, TypeGuard

from .proberecord import Probe as Probe  # re-exported: the probe's record lives there


@functools.cache
def field_names(cls: type) -> tuple[str, ...]:
    """A dataclass's field names, in their order."""
    return tuple(f.name for f in fields(cls))


def known(cls: type, d: Mapping[str, Any]) -> dict[str, Any]:
    """The items of ``d`` that are fields of ``cls``: every ``from_dict`` (here, harness.core.model,
    harness.results.report) reads through it, so a key a newer harness wrote is ignored, never an error."""
    return {k: d[k] for k in field_names(cls) if k in d}


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
        return cls(**known(cls, d))


@dataclass(frozen=True, kw_only=True)
class HungTest:
    """A test pytest-timeout stopped, with where its threads waited."""

    test_id: str
    stack_top: str = ""  # the package frame the test waited in
    excerpt: str = ""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HungTest:
        return cls(**known(cls, {"test_id": "", **d}))


@dataclass(frozen=True, kw_only=True)
class Hang:
    """What hung in a phase: tests pytest-timeout stopped, or the job timeout."""

    tests: tuple[HungTest, ...] = ()
    job_timeout: bool = False  # the whole phase ran past its budget
    running: str = ""  # the test that was running at the job timeout, if known
    why: str = ""  # the job timeout in words
    spent: bool = False  # the job timeout cut a suite still making progress: not a hang of `running`
    stalled: bool = False  # the backend ended the run for its silence (backends.base.Quiet): frozen

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
        flags = {k: bool(d.get(k)) for k in ("job_timeout", "spent", "stalled")}
        return cls(tests=tests, running=str(d.get("running") or ""), why=str(d.get("why") or ""), **flags)


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
        d = known(cls, d)
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
    # the GIL-off mode only: tests that ran in threads and failed in no GIL-on run, the reach
    # of the free-threading check (harness.verdict.coverage.reach); None: not known
    checked: int | None = None

    @property
    def fraction(self) -> float | None:
        """Tests run in threads over tests, when known (None for numbers of the wrong type: a
        result file is read with suspicion)."""
        n, total = self.in_threads, self.total
        if not self.known or not _is_int(n) or not _is_int(total) or total <= 0:
            return None
        return n / total

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModeCoverage:
        d = known(cls, {"mode": -1, **d})
        d["reasons"] = _str_map(d.get("reasons"))
        return cls(**d)


def _is_int(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def least_covered(cov: Mapping[str, ModeCoverage]) -> ModeCoverage | None:
    """The mode whose share of tests run in threads is the smallest, among those where it is
    known; on a tie, the lower PYTHON_GIL (the GIL off first).  The one place the least-covered
    mode is chosen: the verdict's qualifier and the report's coverage column both say it."""
    known = [c for c in cov.values() if c.fraction is not None]
    return min(known, key=lambda c: (c.fraction, c.mode if _is_int(c.mode) else float("inf")), default=None)


def coverage_to_dict(cov: dict[str, ModeCoverage]) -> dict[str, Any]:
    return {k: c.to_dict() for k, c in cov.items()}


def coverage_from_dict(d: Any) -> dict[str, ModeCoverage]:
    if not isinstance(d, dict):
        return {}
    return {str(k): ModeCoverage.from_dict(v) for k, v in d.items() if isinstance(v, dict)}


@dataclass(frozen=True, kw_only=True)
class Wheel:
    """The wheel column: what the index offers for the release and what pip installed."""

    # "wheel (free-threaded)", "built from sdist", "built from sdist (wheel store)", "local source", ...
    installed: str = ""
    installed_file: str = ""
    available: str = ""  # "free-threaded" | "pure" | "gil-only" | "sdist-only" | "unknown" | "n/a"
    warning: str = ""  # a free-threaded wheel that re-enables the GIL
    # the pure wheel (py3-none-any) pip chose for a compiled project (harness.verdict.artifact): the
    # installed one when settings kept it, else the package was built from its sdist; "" if none
    fallback: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v or k not in ("warning", "fallback")}

    @classmethod
    def from_dict(cls, d: Any) -> Wheel:
        return cls(**{k: str(v) for k, v in known(cls, d).items()}) if isinstance(d, dict) else cls()


def _frames(v: Any) -> tuple[TsanFrame, ...]:
    return tuple(TsanFrame.from_dict(f) for f in v or () if isinstance(f, dict))


@dataclass(frozen=True, kw_only=True)
class TsanFrame:
    """One frame of a TSan stack, ``#1 func file.c:12:5 (module.so+0x1f)`` (harness.parse.tsan)."""

    n: int = 0
    func: str = ""  # "" when TSan had no symbol
    file: str = ""  # relative to the package when the job stripped its source dir
    line: int | None = None
    module: str = ""  # the binary: "python3.13t", "_count.cpython-313t-x86_64-linux-gnu.so"
    origin: str = "unknown"  # "package" | "interpreter" | "runtime" | "unknown"
    unrestored: bool = False  # TSan's "[failed to restore the stack]"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if not self.unrestored:  # the key only unrestored frames carry
            del d["unrestored"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TsanFrame:
        return cls(**known(cls, d))


@dataclass(frozen=True, kw_only=True)
class TsanStack:
    """An access stack (``Previous write of size 8 at 0x.. by thread T1:``), a lock's
    ``Mutex M0 acquired here while holding mutex M1`` stack, or a deadly signal's stack."""

    title: str = ""  # the header line without its ':'
    frames: tuple[TsanFrame, ...] = ()
    thread: str = ""  # "T2" | "main thread" | ""
    access: str = ""  # "read" | "write" | "atomic read" | "atomic write" | "" (a lock, a signal)
    previous: bool = False  # the earlier of the two racing accesses

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "frames": [f.to_dict() for f in self.frames],
            "thread": self.thread,
            "access": self.access,
            "previous": self.previous,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TsanStack:
        d = known(cls, d)
        d["frames"] = _frames(d.get("frames"))
        return cls(**d)


@dataclass(frozen=True, kw_only=True)
class TsanThread:
    """A thread the report names: ``Thread T2 (tid=4250, running) created by main thread at``."""

    thread: str = ""  # "T2"
    title: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TsanThread:
        return cls(**known(cls, d))


@dataclass(frozen=True, kw_only=True)
class TsanSection:
    """Any other part of a report: ``Location is global 'counter'...``, ``Mutex M0 created at``,
    ``As if synchronized via sleep``; its first frames."""

    title: str = ""
    frames: tuple[TsanFrame, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "frames": [f.to_dict() for f in self.frames]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TsanSection:
        return cls(title=str(d.get("title") or ""), frames=_frames(d.get("frames")))


@dataclass(frozen=True, kw_only=True)
class TsanLocation:
    """Where the ``SUMMARY:`` line puts the report: ``.../_count.c:17 in bump``."""

    file: str = ""  # the module's path when the binary had no line info
    line: int | None = None
    func: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TsanLocation:
        return cls(**known(cls, d))


@dataclass(frozen=True, kw_only=True)
class TsanReport:
    """One ThreadSanitizer report of a tsan phase (``Phase.tsan``): a race, a lock-order
    inversion, a deadly signal...  ``harness.parse.tsan`` makes them; ``dedup`` folds those of
    one signature into one, with ``count`` and ``test_ids``."""

    kind: str = "unknown"  # "data race", "heap-use-after-free", "lock-order-inversion", "SEGV"
    title: str = ""  # "lock-order-inversion (potential deadlock)"
    pid: int | None = None
    deadly: bool = False  # the report ended the process (a signal, a FATAL)
    summary: str = ""  # the SUMMARY line after "SUMMARY: ThreadSanitizer: "
    location: TsanLocation | None = None  # read from the summary; None when it names none
    location_text: str = ""  # "Location is global 'counter' of size 8 at ..."
    stacks: tuple[TsanStack, ...] = ()
    threads: tuple[TsanThread, ...] = ()
    other: tuple[TsanSection, ...] = ()
    package_frames: tuple[TsanFrame, ...] = ()  # the package's frames of all stacks, once each
    interpreter_frames: tuple[TsanFrame, ...] = ()  # the interpreter's, the first 20
    top_package_frame: str = ""  # "bump src/ft_tsan_counter/_count.c:17"
    in_package: bool = False
    signature: str = ""  # the same race in another run has the same one
    test_id: str = ""  # the test running when TSan reported it (the marker plugin's lines)
    complete: bool = False  # False: the log ended inside the report
    text: str = ""  # the report's lines, trimmed
    log: str = ""  # the per-process log file it came from ("tsan.4131")
    count: int = 1  # reports folded into this one by dedup
    test_ids: tuple[str, ...] = ()  # by dedup: every test that had it

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["location"] = self.location.to_dict() if self.location else {}
        for name in ("stacks", "threads", "other", "package_frames", "interpreter_frames"):
            d[name] = [x.to_dict() for x in getattr(self, name)]
        # Keys a report has only after parse_tsan_dir (log) or dedup (count, test_ids).
        if not self.log:
            del d["log"]
        if self.count == 1 and not self.test_ids:
            del d["count"], d["test_ids"]
        else:
            d["test_ids"] = list(self.test_ids)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TsanReport:
        d = known(cls, d)
        loc = d.get("location")
        d["location"] = TsanLocation.from_dict(loc) if isinstance(loc, dict) and loc else None
        d["stacks"] = tuple(TsanStack.from_dict(s) for s in d.get("stacks") or () if isinstance(s, dict))
        d["threads"] = tuple(TsanThread.from_dict(t) for t in d.get("threads") or () if isinstance(t, dict))
        d["other"] = tuple(TsanSection.from_dict(o) for o in d.get("other") or () if isinstance(o, dict))
        d["package_frames"] = _frames(d.get("package_frames"))
        d["interpreter_frames"] = _frames(d.get("interpreter_frames"))
        d["test_ids"] = tuple(str(t) for t in d.get("test_ids") or ())
        return cls(**d)


# The test-deps step's record of the inferred deps that did not install: a file beside its log,
# one name a line (parse.testdeps reads it onto the phase as NOT_INSTALLED_KIND setup problems).
# The line it also prints for the log's reader; results written before the record are read by it.
NOT_INSTALLED_SUFFIX = ".not-installed"
NOT_INSTALLED_KIND = "not-installed"
NOT_INSTALLED = "ft-harness: not installed: "
_NOT_INSTALLED_RE = re.compile(rf"^{re.escape(NOT_INSTALLED)}(.+)$", re.M)


@dataclass(frozen=True, kw_only=True)
class SetupProblem:
    """Why a suite could not be collected or run in its environment (parse.setup; parse.testdeps)."""

    kind: str  # "missing-module" | "missing-fixture" | "unknown-option" | "unknown-marker" | NOT_INSTALLED_KIND ...
    name: str  # the module, fixture, option or marker
    where: str = ""  # file:line of the import or test, when known
    excerpt: str = ""  # the log's words for it
    fix: str = ""  # what would fix it in matrix.yaml

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SetupProblem:
        return cls(**known(cls, d))


def not_installed(names: Sequence[str]) -> tuple[SetupProblem, ...]:
    """One ``not-installed`` setup problem per inferred test dependency that did not install."""
    return tuple(
        SetupProblem(
            kind=NOT_INSTALLED_KIND,
            name=n,
            excerpt=f"not installed: {n}",
            fix=f"list an installable {n} (or none) in the package's test_requires in matrix.yaml",
        )
        for n in dict.fromkeys(names)
    )


def not_installed_of_old(excerpt: str) -> tuple[SetupProblem, ...]:
    """A test-deps phase written before it kept what did not install: its log's line."""
    m = _NOT_INSTALLED_RE.search(excerpt)
    return not_installed(m.group(1).split()) if m else ()
