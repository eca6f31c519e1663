"""The values that cross module and machine boundaries.

Everything here is a frozen dataclass with ``to_dict``/``from_dict``; JobResult
is what a job writes to ``OUT/results/<job_id>.json`` and the only thing the
report step reads, so shards from many machines merge with the same code.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ..util import safejson
from .evidence import (
    Crash,
    Hang,
    ModeCoverage,
    ParallelInfo,
    Probe,
    SetupProblem,
    TsanReport,
    Wheel,
    coverage_from_dict,
    coverage_to_dict,
    known,
    not_installed_of_old,
)
from .gilonrecord import GilOn
from .pipinstalled import PipReport
from .proberecord import LaterGil
from .stored import StoreCharge, StoredWheel, wheels_from
from .suiterecord import TestSetup
from .threadplan import ThreadPlan

RESULT_SCHEMA = 17  # 2: Phase.test_command; 3: typed crash/hang/parallel, coverage, wheel; 4: budget-spent,
# Hang.spent; 5: slow-in-threads, TestCase.seconds; 6: Phase.probe; 7: skipped, test_setup.recipe; 8: sdist_sha256,
# reused_from; 9: Wheel.fallback; 10: Phase.subset, gil_on; 11: wheels_reused/_built; 12: repeat-failure; 13: tools_layer
# 14: rules_out; claims "only without the GIL" decided on fresh runs alone (issue #47); 15: Finding.by_mode
# 16: store (StoreCharge: the wheel store's seconds, bytes, limits reached, sdists refused for provenance; #56)
# 17: thread_plan (the threaded runs planned to the job's budget; #58), gil_with_test_deps (#57)
READABLE_SCHEMAS = (2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17)

# Verdicts, most severe first.  These strings are the contract of report.json.
VERDICTS = (
    "build-failure",
    "infra-error",
    "ft-crash",
    "crash",
    "hang",
    "ft-race",
    # a module of the package that re-enables the GIL outranks a thread-unsafe suite (issue #57:
    # psycopg2-binary 2.9.13); another distribution's module ranks below it (verdict.rules.rank)
    "gil-reenabled",
    "thread-unsafe",
    "baseline-failure",
    "compatible",
    "no-tests",
    "skipped",  # not run: a recipe registry says the suite cannot run on this Python (harness.testsetup.registry)
)


def severity(kind: str) -> int:
    """A verdict's (or finding kind's) rank: 0 is the most severe; unknown words rank last."""
    return _RANK.get(kind, len(VERDICTS))


_RANK = {v: i for i, v in enumerate(VERDICTS)}


def now_iso() -> str:
    """Now, as the ISO 8601 UTC text every result and report carries."""
    return datetime.now(UTC).isoformat(timespec="seconds")


# Finding kinds that are shown but never decide the verdict.
# budget-spent: the job's budget ran out mid-suite; the verdict is infra-error if nothing else is red
# slow-in-threads: a test timed out only in threaded runs, and its plain time x threads x
# iterations is already past test_timeout: too slow to tell, not a hang
# skipped: the registry's reason the job was not run (its verdict too)
# repeat-failure: a test run single-threaded in the threaded runs failed there only: not threads
INFO_KINDS = (
    "no-thread-coverage",
    "unconfirmed",
    "setup-error",
    "budget-spent",
    "slow-in-threads",
    "skipped",
    "repeat-failure",
)
FINDING_KINDS = VERDICTS[:-3] + INFO_KINDS
# Phase.kind, a closed set (a result naming another is refused as it is read: harness.core.typecheck)
PhaseKind = Literal["install", "setup", "probe", "collect", "plain", "threads", "tsan", "confirm", "wheels"]

# Per-test outcomes in a phase.
OUTCOMES = ("passed", "failed", "error", "skipped", "crashed", "timeout")


def _build(cls: type, data: dict[str, Any]) -> Any:
    return cls(**known(cls, data))


@dataclass(frozen=True, kw_only=True)
class Exec:
    """What running one command gave: the backend's whole answer."""

    exit_code: int | None  # None when the process was killed by us (timeout)
    signal: int | None = None  # the signal that ended it, if any
    timed_out: bool = False
    oom_killed: bool = False
    duration: float = 0.0
    infra: str = ""  # non-empty: the backend itself failed ("docker daemon went away")
    limit: str = ""  # a disk limit the command went past (harness.core.limits), with what it held


@dataclass(frozen=True, kw_only=True)
class TestCase:
    """One test id's outcome in one phase."""

    __test__ = False  # not a pytest test class

    outcome: str  # one of OUTCOMES
    message: str = ""  # first line(s) of the failure, for evidence
    parallel: bool | None = None  # ran in parallel threads (pytest-run-parallel), if known
    seconds: float = 0.0  # JUnit's time for it (0: not known)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TestCase:
        return _build(cls, d)


@dataclass(frozen=True, kw_only=True)
class TestCommand:
    """A test phase's command in its parts: a one-test reproduce is built from them, never parsed.

    ``argv()`` is what ran; ``alone(test_id)`` the same run without what only this run needed
    (``-n auto``, ``--junitxml``, ``--collect-only``), on one test id or the whole suite.
    """

    __test__ = False  # not a pytest test class

    head: tuple[str, ...]  # interpreter + ``-P -m pytest -p no:cacheprovider``, or tox's up to ``--``
    options: tuple[str, ...] = ()  # timeout, rootdir/config, skips, the package's pytest_args
    plugins: tuple[str, ...] = ()  # e.g. ``-p tsan_marker`` (a reproduce keeps them)
    threads: tuple[str, ...] = ()  # ``--parallel-threads=N --iterations=I``
    this_run: tuple[str, ...] = ()  # ``-n auto``, ``--junitxml=...``, ``--collect-only``
    paths: tuple[str, ...] = ()  # the suite's path(s)

    def argv(self) -> tuple[str, ...]:
        return (*self.head, *self.options, *self.plugins, *self.threads, *self.this_run, *self.paths)

    def alone(self, test_id: str | None) -> tuple[str, ...]:
        return (*self.head, *self.options, *self.plugins, *self.threads, *((test_id,) if test_id else self.paths))

    def to_dict(self) -> dict[str, list[str]]:
        return {f.name: list(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TestCommand:
        return _build(cls, {k: tuple(v) for k, v in d.items() if isinstance(v, list | tuple)})


@dataclass(frozen=True, kw_only=True)
class Phase:
    """One command of a job, with its outcome and what the parsers read from it."""

    name: str  # "install", "probe", "plain-gil0", "threads-gil1-r2", "tsan-gil0-r1"
    kind: PhaseKind  # install: fetch, install, rebuild; setup: test deps, data links; wheels: the store's
    gil: int | None = None  # PYTHON_GIL of the run; None for install/probe (default mode)
    rep: int = 0  # 1-based repetition of a threads run, 0 otherwise
    command: tuple[str, ...] = ()
    test_command: TestCommand | None = None  # the parts of ``command``, for pytest/tox phases
    env: dict[str, str] = field(default_factory=dict)  # what the harness set (not the whole env)
    cwd: str = ""
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    oom_killed: bool = False
    duration: float = 0.0
    log: str = ""  # path relative to the output dir
    junit: str = ""  # path relative to the output dir, "" when none was written
    infra: str = ""
    subset: int = 0  # > 0: the run was given only this many test ids (harness.verdict.gilon); 0: the suite
    # Filled by harness.parse from the log and the JUnit XML:
    tests: dict[str, TestCase] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # outcome -> n
    failing_not_kept: int = 0  # outcomes other than passed/skipped left out of ``tests`` (limits.cap_failing_tests)
    crashes: tuple[Crash, ...] = ()  # every crashed test (or the process), first one first
    hang: Hang | None = None
    gil_modules: tuple[str, ...] = ()  # modules named in GIL-re-enabled warnings
    parallel: ParallelInfo | None = None  # pytest-run-parallel's account of a threaded run
    tsan: tuple[TsanReport, ...] = ()  # TSan reports (harness.parse.tsan), as parsed: not deduped
    setup: tuple[SetupProblem, ...] = ()  # the environment's problems (a missing test dependency)
    probe: Probe | None = None  # the probe phase's probe.json (harness.parse.probe)
    pip_report: PipReport | None = field(default=None, compare=False)  # install: harness.parse.pipreport; not kept
    excerpt: str = ""  # tail of the log, for evidence

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.infra

    @property
    def crash(self) -> Crash | None:
        """The first crash (the one a single-crash phase is about)."""
        return self.crashes[0] if self.crashes else None

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k != "pip_report"}  # read during the job only
        d["command"] = list(self.command)
        d["test_command"] = self.test_command.to_dict() if self.test_command else None
        d["crashes"] = [c.to_dict() for c in self.crashes]
        d["hang"] = self.hang.to_dict() if self.hang else None
        d["parallel"] = self.parallel.to_dict() if self.parallel else None
        d["gil_modules"] = list(self.gil_modules)
        d["tsan"] = [r.to_dict() for r in self.tsan]
        d["setup"] = [asdict(x) for x in self.setup]
        if self.probe:
            d["probe"] = self.probe.to_dict()
        for key in ("probe", "subset", "failing_not_kept"):  # a probe phase's key, a run given some tests'
            # (verdict.gilon), a phase that lost failing outcomes to a limit (#56):
            if not getattr(self, key):  # the other phases write what they wrote
                del d[key]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Phase:
        d = dict(d)
        old = d.pop("crash", None)  # schema 2: {first crash..., "all": [...]}
        crashes = d.get("crashes") or ((old.get("all") or [old]) if isinstance(old, dict) and old else [])
        d["crashes"] = tuple(Crash.from_dict(c) for c in crashes if isinstance(c, dict))
        d["hang"] = Hang.from_dict(d["hang"]) if isinstance(d.get("hang"), dict) and d["hang"] else None
        par = d.get("parallel")
        d["parallel"] = ParallelInfo.from_dict(par) if isinstance(par, dict) and par else None
        d["command"] = tuple(d.get("command", ()))
        tc = d.get("test_command")
        d["test_command"] = TestCommand.from_dict(tc) if isinstance(tc, dict) and tc.get("head") else None
        d["gil_modules"] = tuple(d.get("gil_modules", ()))
        d["tsan"] = tuple(TsanReport.from_dict(r) for r in d.get("tsan") or () if isinstance(r, dict))
        d["setup"] = tuple(SetupProblem.from_dict(x) for x in d.get("setup", ()) if isinstance(x, dict))
        if d.get("kind") == "setup" and not d["setup"] and isinstance(d.get("excerpt"), str):
            d["setup"] = not_installed_of_old(d["excerpt"])
        d["tests"] = {k: TestCase.from_dict(v) for k, v in d.get("tests", {}).items()}
        d["probe"] = Probe.from_dict(d["probe"]) if isinstance(d.get("probe"), dict) else None
        return _build(cls, d)


@dataclass(frozen=True, kw_only=True)
class Finding:
    kind: str  # one of FINDING_KINDS
    test_id: str = ""
    modes: tuple[int, ...] = ()  # PYTHON_GIL modes it was seen in
    count: int = 0  # k in k/R
    runs: int = 0  # R in k/R
    evidence: str = ""  # "junit" | "signal" | "timeout" | "warning" | "tsan" | "compiler" | "log"
    excerpt: str = ""  # the log lines that show it
    signal: int | None = None
    stack_top: str = ""
    module: str = ""  # for gil-reenabled: the module that re-enabled the GIL
    message: str = ""  # one-line cause, e.g. "GIL re-enabled by `pkg._speedups`"
    reproduce: str = ""  # shell command that reproduces it on its own, on the machine that ran it
    recipe: str = ""  # the same on a laptop: venv, pinned installs, the sdist's tests (harness.job.laptoprecipe)
    phase: str = ""  # phase name it was seen in first
    # re-runs of the test alone, per GIL mode: {"gil0": "4/5", "gil1": "0/5"} (settings.confirm)
    confirmed: dict[str, str] = field(default_factory=dict)
    # ``count``/``runs`` per GIL mode the job ran its runs in, 0 events included: {"gil0": "1/3",
    # "gil1": "3/3"}; what two jobs compare mode by mode (harness.results.flaky); {} before schema 15
    by_mode: dict[str, str] = field(default_factory=dict)

    @property
    def ratio(self) -> str:
        return f"{self.count}/{self.runs}" if self.runs else ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["modes"] = list(self.modes)
        d["ratio"] = self.ratio
        d["confirmed"] = dict(self.confirmed)
        d["by_mode"] = dict(self.by_mode)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Finding:
        """A finding as a result file or a report.json has it (the one reader of both): a
        ``modes`` or ``confirmed`` of the wrong type reads as empty, never drops the job."""
        d = {"kind": "", **known(cls, d)}
        d["modes"] = tuple(d["modes"]) if isinstance(d.get("modes"), list | tuple) else ()
        for key in ("confirmed", "by_mode"):
            d[key] = dict(d[key]) if isinstance(d.get(key), dict) else {}
        return cls(**d)


def counted_runs(f: Finding) -> tuple[str, ...]:
    """The kinds of suite run ``f``'s counts (``by_mode``, ``count``/``runs``) are over, as
    harness.verdict counts them: a crash or hang in any test run, a failure nominated by a plain
    run (``baseline-failure``, a plain ``ft-race``) in plain runs, the rest in threaded runs."""
    if f.kind in ("crash", "ft-crash", "hang"):
        return ("plain", "threads")
    return ("plain",) if f.phase.startswith("plain-") or f.kind == "baseline-failure" else ("threads",)


def by_mode(hits: Iterable[Phase], runs: Iterable[Phase]) -> dict[str, str]:
    """``Finding.by_mode``: for each GIL mode of ``runs``, its events (``hits``, a phase once per
    event) over its runs: {"gil0": "1/3", "gil1": "0/3"}."""
    events = Counter(p.gil for p in hits)
    ran = Counter(p.gil for p in runs if p.gil is not None)
    return {f"gil{m}": f"{events[m]}/{n}" for m, n in sorted(ran.items())}


@dataclass(frozen=True, kw_only=True)
class InterpreterInfo:
    """What an interpreter said about itself when it was checked (harness.interpreters.interpreters.probe).

    Everything version-specific that the harness uses comes from here, never from a literal:
    the executable's name, the wheel tags it accepts, its ``-VV`` line, its ``sys.flags``.
    Results written before these fields existed read back with them empty.
    """

    name: str
    version: str  # X.Y.Z, as the interpreter reports it (sys.version_info)
    key: str  # cache key: version + source digest + flags (or the installed executable's identity)
    configure: tuple[str, ...] = ()
    free_threaded: bool = True  # Py_GIL_DISABLED == 1, checked after the build
    sanitizer: str | None = None
    python: str = ""  # path of the executable, as the backend sees it
    source: str = ""  # "debian:forky", "url:https://…", "tarball:…", "python:/usr/bin/python3.14t"
    installed: bool = False  # True: an interpreter the harness found installed, not one it built
    full_version: str = ""  # platform.python_version(): "3.15.0rc1"
    vv: str = ""  # the `python -VV` line: "Python 3.14.0 free-threading build (main, …) [GCC …]"
    python_name: str = ""  # the executable's name in its bin/ (python + LDVERSION + EXE): python3.14t
    soabi: str = ""  # sysconfig SOABI: cpython-314t-x86_64-linux-gnu
    # The wheel tags the interpreter accepts (packaging.tags.sys_tags() run by it), kept compact
    # as its interpreter-abi pairs in priority order ("cp315-cp315t", "cp315-abi3t", "cp315-none",
    # "py3-none", ...) and its platforms ("manylinux_2_36_x86_64", ...): a wheel tag fits when
    # its pair and its platform (or "any") are both listed.
    tag_pairs: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()
    # sys.flags that change how threaded tests behave (3.14t turns both on by default):
    # {"thread_inherit_context": 1, "context_aware_warnings": 1}; absent on 3.13.
    flags: dict[str, int] = field(default_factory=dict)

    @property
    def bin_relpath(self) -> str:
        """The executable relative to the install prefix (``bin/python3.14t``), '' if unknown."""
        return f"bin/{self.python_name}" if self.python_name else ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["configure"] = list(self.configure)
        d["tag_pairs"] = list(self.tag_pairs)
        d["platforms"] = list(self.platforms)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> InterpreterInfo:
        d = dict(d)
        for key in ("configure", "tag_pairs", "platforms"):
            d[key] = tuple(d.get(key) or ())
        d["flags"] = dict(d.get("flags") or {})
        return _build(cls, d)


@dataclass(frozen=True, kw_only=True)
class JobResult:
    """Everything one (interpreter, package) job found; one JSON file on disk."""

    schema: int = RESULT_SCHEMA
    job_id: str
    key: str  # matrix entry + interpreter digest + settings; resume compares it
    package: str
    requested: str = ""  # version spec or local path
    version: str = ""  # the version actually installed
    source: str = "pypi"  # "pypi" | "local"
    interpreter: InterpreterInfo
    settings: dict[str, Any] = field(default_factory=dict)
    backend: str = "local"
    started: str = ""  # ISO 8601 UTC
    finished: str = ""
    harness_version: str = ""
    phases: tuple[Phase, ...] = ()
    verdict: str = ""
    qualifier: str = ""  # e.g. "low thread coverage: 3/120 tests in threads"
    findings: tuple[Finding, ...] = ()
    coverage: dict[str, ModeCoverage] = field(default_factory=dict)  # "gil0" -> threads coverage
    wheel: Wheel | None = None  # ft wheel available / installed (None: not looked at)
    metadata: dict[str, Any] = field(default_factory=dict)  # project urls, summary
    notes: str = ""
    links: tuple[str, ...] = ()
    # where the tests path, test deps and pytest args came from (matrix.yaml, a recipe, inferred)
    test_setup: TestSetup = field(default_factory=TestSetup)
    sdist_sha256: str = ""  # of the sdist tested (PyPI packages; checked against the index)
    reused_from: str = ""  # not run: taken from this earlier run's results (run --reuse), else ""
    wheels_reused: tuple[StoredWheel, ...] = ()  # the install took these from the shared wheel store
    wheels_built: tuple[StoredWheel, ...] = ()  # this job built these into it (harness.store.wheelstore)
    tools_layer: str = ""  # its venv's pip and test tools from the store: "built <digest>" / "reused <digest>"
    store: StoreCharge = field(default_factory=StoreCharge)  # what the wheel store cost and refused (schema 16)
    gil_on: GilOn | None = None  # what the GIL-on runs ran, and why (None: no test stage, or before schema 10)
    rules_out: str = ""  # a clean verdict: the failure rate its runs rule out ("" before schema 14)
    thread_plan: ThreadPlan | None = None  # the threaded runs planned to the budget (schema 17; issue #58)
    # modules that re-enabled the GIL only once the test deps were in: notes (harness.verdict.latergil)
    gil_with_test_deps: tuple[LaterGil, ...] = ()

    def phase(self, name: str) -> Phase | None:
        return next((p for p in self.phases if p.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "job_id": self.job_id,
            "key": self.key,
            "package": self.package,
            "requested": self.requested,
            "version": self.version,
            "source": self.source,
            "interpreter": self.interpreter.to_dict(),
            "settings": dict(self.settings),
            "backend": self.backend,
            "started": self.started,
            "finished": self.finished,
            "harness_version": self.harness_version,
            "phases": [p.to_dict() for p in self.phases],
            "verdict": self.verdict,
            "qualifier": self.qualifier,
            "findings": [f.to_dict() for f in self.findings],
            "coverage": coverage_to_dict(self.coverage),
            "wheel": self.wheel.to_dict() if self.wheel else {},
            "metadata": dict(self.metadata),
            "notes": self.notes,
            "links": list(self.links),
            "test_setup": self.test_setup.to_dict(),
            "sdist_sha256": self.sdist_sha256,
            "reused_from": self.reused_from,
            **{k: [w.to_dict() for w in getattr(self, k)] for k in ("wheels_reused", "wheels_built")},
            "tools_layer": self.tools_layer,
            "store": self.store.to_dict(),
            "gil_on": self.gil_on.to_dict() if self.gil_on else None,
            "rules_out": self.rules_out,
            "thread_plan": self.thread_plan.to_dict() if self.thread_plan else None,
            "gil_with_test_deps": [g.to_dict() for g in self.gil_with_test_deps],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> JobResult:
        if not isinstance(d, dict):
            raise ValueError("a result must be a JSON object")
        if d.get("schema") not in READABLE_SCHEMAS:
            raise ValueError(f"result schema {d.get('schema')!r}, expected one of {READABLE_SCHEMAS}")
        for req in ("job_id", "key", "package", "interpreter"):
            if req not in d:
                raise ValueError(f"result has no {req!r}")
        d = dict(d)
        d["interpreter"] = InterpreterInfo.from_dict(d["interpreter"])
        d["phases"] = tuple(Phase.from_dict(p) for p in d.get("phases", ()))
        d["findings"] = tuple(Finding.from_dict(f) for f in d.get("findings", ()))
        d["links"] = tuple(d.get("links", ()))
        d["coverage"] = coverage_from_dict(d.get("coverage"))
        d["wheel"] = Wheel.from_dict(d["wheel"]) if isinstance(d.get("wheel"), dict) and d["wheel"] else None
        d["test_setup"] = TestSetup.from_dict(d.get("test_setup"))
        d["wheels_reused"], d["wheels_built"] = wheels_from(d.get("wheels_reused")), wheels_from(d.get("wheels_built"))
        d["gil_on"] = GilOn.from_dict(d.get("gil_on"))
        d["tools_layer"] = d["tools_layer"] if isinstance(d.get("tools_layer"), str) else ""
        d["store"] = StoreCharge.from_dict(d.get("store"))
        d["rules_out"] = d["rules_out"] if isinstance(d.get("rules_out"), str) else ""
        d["thread_plan"] = ThreadPlan.from_dict(d.get("thread_plan"))
        later = d.get("gil_with_test_deps")
        d["gil_with_test_deps"] = tuple(
            g for x in (later if isinstance(later, list) else ())[:100] if (g := LaterGil.from_dict(x))
        )
        d["schema"] = RESULT_SCHEMA  # read back in today's shape
        return _build(cls, d)


def read_result(path: Path) -> JobResult:
    """Read one result file; ValueError (naming nothing) if it is not a valid result (an integer
    too long for any count included: harness.util.safejson)."""
    return JobResult.from_dict(safejson.loads(Path(path).read_bytes()))
