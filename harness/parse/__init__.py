"""Read one phase's log and JUnit XML into the fields of model.Phase.

:func:`parse_phase` never raises on what a package's run wrote: a missing,
truncated or garbled file gives what could be read plus the raw tail of the
log in ``excerpt``.  Test ids are pytest node ids (``tests/test_x.py::TestK::test_y[p]``),
the same for plain, xdist and pytest-run-parallel runs of the same suite.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import signal
from collections import Counter
from pathlib import Path

from ..core import limits
from ..core.evidence import Crash, Hang
from ..core.model import OUTCOMES, Phase, TestCase
from ..core.wsfs import read_beneath
from ..util.safefiles import read_regular
from . import buildenv
from .crash import find_crashes
from .gil import gil_modules
from .hang import WATCHDOG_ENDED, WATCHDOG_ENV, find_hang, internal_timeout, watchdog_tests
from .junit import CRASHED_RE, TIMEOUT_RE, JUnitCase, guess_nodeid, junit_key, parse_junit
from .parallel import parse_parallel
from .pipreport import read_pip_report
from .probe import probe_of, read_probe
from .pytestlog import FINAL_RE, PytestLog, parse_log
from .setup import find_setup_problems
from .testdeps import read_not_installed

__all__ = ["NOTE", "parse_phase", "gil_modules", "probe_of", "read_text", "tail", "incomplete"]

log = logging.getLogger(__name__)

TEST_KINDS = ("plain", "threads", "collect", "tsan", "confirm")
MAX_READ = 32 * 1024 * 1024  # a runaway log is read head + tail, not whole
TAIL_LINES = 60
TAIL_CHARS = 6000
FINAL_WORDS = {
    "passed": "passed",
    "failed": "failed",
    "error": "error",
    "errors": "error",
    "skipped": "skipped",
    "xfailed": "skipped",
    "xpassed": "passed",
    "deselected": "",
    "warnings": "",
    "warning": "",
    "rerun": "",
}


def read_text(path: Path, rel: str = "") -> str:
    """A file's text, '' when missing or not a regular file (a symlink package code planted is
    never followed); undecodable bytes replaced, huge files cut in the middle. With ``rel``: the
    file at ``rel`` below ``path`` (the output dir), through no link at any component of ``rel``
    (``harness.core.wsfs``: a job's logs/ or junit/ may be a link package code left)."""
    data = read_beneath(path, rel, MAX_READ) if rel else read_regular(path, MAX_READ)
    if data is None:
        return ""
    return data.replace(b"\x00", b"").decode("utf-8", errors="replace")


def tail(text: str, lines: int = TAIL_LINES, chars: int = TAIL_CHARS) -> str:
    out = "\n".join(text.rstrip().splitlines()[-lines:])
    return out[-chars:]


CRASHED_SHORT_RE = re.compile(r"worker '[^']+' crashed")
NOTE = "[ft-harness parse] "  # parser notes appended to an excerpt, e.g. an unreadable JUnit file


def _outcome_from_message(outcome: str, message: str) -> str:
    if outcome in ("failed", "error"):
        if CRASHED_RE.search(message) or CRASHED_SHORT_RE.search(message):
            return "crashed"
        if TIMEOUT_RE.search(message):
            return "timeout"
    return outcome


# the last exception an INTERNALERROR traceback names ("INTERNALERROR> E     MemoryError")
INTERNAL_EXC_RE = re.compile(r"^INTERNALERROR>\s+E?\s+(?P<exc>(?:[\w.]+\.)?\w*(?:Error|Exception|Warning)\b.*)$", re.M)


def _internal_cause(text: str) -> str:
    """What an INTERNALERROR was, when its traceback says: a MemoryError is the run's memory
    limit, ``memory_bytes`` (a worker of botocore's suite went past the local backend's 4 GiB then)."""
    found = [
        m.group("exc").strip()
        for m in INTERNAL_EXC_RE.finditer(text)
        if not m.group("exc").startswith(("AssertionError", "assert "))
    ]
    if not found:
        return ""
    if any(f.startswith("MemoryError") for f in found):
        return "MemoryError: a pytest process ran out of memory under the run's memory limit"
    return found[-1][:200]


# a terminal's colour codes in a log (wcwidth 0.9.5's pytest config asks for --color=yes): the
# summary line "\x1b[32m=== \x1b[1m2009 passed\x1b[0m ..." is read without them
ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _parse(phase: Phase, out_dir: Path) -> Phase:
    text = ANSI_RE.sub("", read_text(out_dir, phase.log)) if phase.log else ""
    jtext = read_text(out_dir, phase.junit) if phase.junit else ""
    plog = parse_log(text)
    cases, clean = parse_junit(jtext) if jtext else ([], False)
    notes = []
    if jtext and not clean:
        log.info("%s: JUnit XML is truncated or malformed; read %d cases", phase.name, len(cases))
        notes.append(f"{NOTE}{phase.junit} is truncated or malformed ({len(cases)} test cases read)")
    tests = _tests(text, plog, cases, notes)
    crashes = _crashes(phase, text, plog, tests)
    hang = _hang(phase, text, plog, tests)
    parallel = None
    if phase.kind in ("threads", "collect"):
        parallel = parse_parallel(text, plog, collect_only=phase.kind == "collect")
    counts = _counts(tests, plog)
    if phase.kind not in TEST_KINDS and phase.exit_code not in (0, None):  # a failed install/setup
        env = buildenv.note(text, tail(text))  # what the build lacked, if the tail cut it
        if env:
            notes.append(env)
    tests, cut = cap_tests(tests)  # counts stay whole: only per-test outcomes are dropped
    if cut:
        notes.append(cut)
    return dataclasses.replace(
        phase,
        tests=tests,
        counts={k: counts[k] for k in OUTCOMES if counts.get(k)},
        crashes=tuple(crashes),
        hang=hang,
        gil_modules=tuple(gil_modules(text)),
        parallel=parallel,
        # install: harness.verdict.artifact; test-deps: what did not install (parse.testdeps)
        setup=find_setup_problems(text) if phase.kind in TEST_KINDS else read_not_installed(phase, out_dir),
        probe=read_probe(phase, out_dir),
        pip_report=read_pip_report(phase, out_dir),  # install phases: pip's --report, parsed once
        excerpt="\n".join([tail(text), *notes]).strip(),
    )


def _tests(text: str, plog: PytestLog, cases: list[JUnitCase], notes: list[str]) -> dict[str, TestCase]:
    """Each test's outcome from the JUnit cases and the log (a case's id as the log spells it),
    an INTERNALERROR that is a test's timeout as that test's; pytest's own INTERNALERROR goes to
    ``notes``."""
    known = set(plog.tests) | set(plog.started) | {m.group("id") for m in CRASHED_RE.finditer(text)}
    by_key = {junit_key(t): t for t in known}
    tests: dict[str, TestCase] = {}
    internal = internal_timeout(text, plog.unfinished)  # an INTERNALERROR that is a test's timeout
    for c in cases:
        if not c.name and not c.classname:  # `<testcase time="0.000" />`: xdist's, for no test
            continue
        if c.key == ("pytest", "internal"):  # INTERNALERROR: pytest's own, not a test
            if internal is None:
                notes.append(f"{NOTE}pytest INTERNALERROR: {_internal_cause(text) or c.message}")
            continue
        tid = by_key.get(c.key) or guess_nodeid(c)
        lt = plog.tests.get(tid)
        prev = tests.get(tid)
        if prev is not None and prev.outcome not in ("passed", "skipped"):
            continue  # a second <testcase> for a teardown error after a failure
        tests[tid] = TestCase(
            outcome=c.outcome,
            message=c.message or (lt.message if lt else ""),
            parallel=lt.parallel if lt else None,
            seconds=c.seconds,
        )
    for tid, lt in plog.tests.items():
        if tid not in tests:
            tests[tid] = TestCase(
                outcome=_outcome_from_message(lt.outcome, lt.message), message=lt.message, parallel=lt.parallel
            )
    if internal:
        tid, msg = internal
        tests[tid] = TestCase(outcome="timeout", message=msg, parallel=tests[tid].parallel if tid in tests else None)
    return tests


def _memory_kill(cr: Crash) -> bool:
    """Under a run the memory limit killed (docker's OOMKilled), a worker that "crashed" with no
    fatal error and no signal but SIGKILL is the kernel's OOM kill (charset-normalizer 3.5.3's
    large-payload test in 4 threads x 3 past 6 GiB), not the test crashing."""
    return cr.worker and not cr.fatal and cr.signal in (None, signal.SIGKILL)


def _crashes(phase: Phase, text: str, plog: PytestLog, tests: dict[str, TestCase]) -> list[Crash]:
    """The phase's crashes, each crashed test marked in ``tests``; a worker "crash" that was our
    watchdog ending a test stuck in a wait (parse.hang) is that test's timeout instead."""
    crashes = find_crashes(text, exit_code=phase.exit_code, sig=phase.signal, unfinished=plog.unfinished)
    killed = [cr for cr in crashes if phase.oom_killed and _memory_kill(cr)]
    for cr in killed:  # a worker the memory limit killed: the run's out-of-memory finding, no crash
        if cr.test_id in tests and tests[cr.test_id].outcome == "crashed":
            del tests[cr.test_id]  # no result (xdist's junit "worker crashed"), not a crash
    crashes = [cr for cr in crashes if cr not in killed]
    for cr in crashes:
        if cr.test_id:
            msg = cr.fatal or (f"signal {cr.signal}" if cr.signal else "worker crashed")
            tests[cr.test_id] = TestCase(
                outcome="crashed",
                message=msg[:300],
                parallel=tests[cr.test_id].parallel if cr.test_id in tests else None,
            )
    stuck = watchdog_tests(text, [cr.test_id for cr in crashes if cr.worker and cr.test_id])
    if stuck:
        crashes = [cr for cr in crashes if cr.test_id not in stuck]
        for tid, after in stuck.items():
            tests[tid] = TestCase(
                outcome="timeout",
                message=f"still running after {after}; {WATCHDOG_ENDED}",
                parallel=tests[tid].parallel if tid in tests else None,
            )
    return crashes


def _hang(phase: Phase, text: str, plog: PytestLog, tests: dict[str, TestCase]) -> Hang | None:
    """What hung in the phase (parse.hang); a hung test with no outcome yet is marked in ``tests``."""
    timed = [t for t, tc in tests.items() if tc.outcome == "timeout"]
    hang = find_hang(
        text,
        timed_out_tests=timed,
        timed_out=phase.timed_out,
        unfinished=plog.unfinished,
        finished=plog.finished,
        done=sum(tc.outcome != "timeout" for tc in tests.values()),
        watchdog=_seconds(phase.env.get(WATCHDOG_ENV)),
        duration=phase.duration,
    )
    if hang and hang.running and hang.running not in tests and not hang.spent:
        tests[hang.running] = TestCase(outcome="timeout", message=hang.why)
    for ht in hang.tests if hang else ():  # the process ended with no report of the test
        if ht.test_id not in tests:
            tests[ht.test_id] = TestCase(
                outcome="timeout", message=ht.excerpt.split("\n", 1)[0].removeprefix(f"{ht.test_id}: ")[:300]
            )
    return hang


def _counts(tests: dict[str, TestCase], plog: PytestLog) -> Counter[str]:
    """Outcomes counted over ``tests``; with none, pytest's final line's counts."""
    counts = Counter(tc.outcome for tc in tests.values())
    if not tests and plog.final:
        for word, n in plog.final.items():
            key = FINAL_WORDS.get(word, "")
            if key:
                counts[key] += n
    return counts


def cap_tests(tests: dict[str, TestCase]) -> tuple[dict[str, TestCase], str]:
    """At most ``tests_per_phase`` per-test outcomes (harness.core.limits), the ones not passed first:
    (kept, a line naming the limit, or ""). A suite of 10**6 passing tests made a result file
    the report skips."""
    limit = limits.value("tests_per_phase")
    if len(tests) <= limit:
        return tests, ""
    order = sorted(tests, key=lambda t: tests[t].outcome in ("passed", "skipped"))  # stable
    kept = {t: tests[t] for t in order[:limit]}
    return kept, (
        "[ft-harness] "
        + limits.note(
            "tests_per_phase", f"{len(tests)} tests; {len(tests) - limit} passed or skipped outcomes not kept"
        )
    )


def parse_phase(phase: Phase, out_dir: Path) -> Phase:
    """``phase`` with tests, counts, crash, hang, gil_modules, parallel, probe and excerpt filled in."""
    try:
        return _parse(phase, Path(out_dir))
    except Exception:  # a bug of ours must not lose the package's result
        log.exception("parsing phase %s failed", phase.name)
        text = read_text(Path(out_dir), phase.log) if phase.log else ""
        return dataclasses.replace(phase, excerpt=tail(text))


def _seconds(text: str | None) -> float:
    try:
        return float(text or 0)
    except ValueError:
        return 0.0


def incomplete(phase: Phase) -> str:
    """Why a parsed pytest phase's results cannot be trusted in full ('' when they can).

    pytest always ends with its ``== N passed in Xs ==`` line, and a crash by
    signal or the job timeout explain a missing one; anything else means the
    log was cut or garbled.
    """
    if phase.kind not in ("plain", "threads"):
        return ""
    problems = [ln[len(NOTE) :] for ln in phase.excerpt.splitlines() if ln.startswith(NOTE)]
    if phase.timed_out or phase.crash or phase.signal:
        return ""  # a hang or a crash explains a cut log; those findings say so
    if phase.hang and any(WATCHDOG_ENDED in t.excerpt for t in phase.hang.tests):
        return ""  # the watchdog ended the process: pytest never got to its summary
    if phase.exit_code in (0, 1, 2, 3, 4, 5) and not FINAL_RE.search(phase.excerpt):
        problems.insert(0, "the log has no pytest summary line (cut or garbled)")
    return "; ".join(problems)
