"""Hangs: pytest-timeout's per-test timeouts and the job-level timeout.

pytest-timeout (``--timeout=N``, signal method) fails the test with
``Failed: Timeout (>N.0s) from pytest-timeout.`` and dumps every thread's
stack between ``+++ Timeout +++`` rulers; its thread method (the runs alone of
confirmation) dumps the same and ends the process, with no report of the test. A wait the
signal cannot end (the main thread in C) is ended by ft-harness's watchdog plugin, which has
faulthandler dump every thread ("Timeout (0:00:30)!") and end the process; under
pytest-xdist the controller then says the worker crashed, and ``watchdog_tests`` tells that
from a crash by the test's function on a dumped stack.
The excerpt says, per thread, where it waits: its innermost frames in the
package (site-packages) or the suite, with the source line.  When the harness's own timeout
kills the process group instead, the running test is the last one ``-v``
started without a result; if pytest had already printed its final line, the
process hung on exit (typically threads a timed-out test left behind).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..core.evidence import Hang, HungTest
from ..core.model import TestCase
from .crash import CURRENT_RE, NODE_DOWN_RE, _dump_lines
from .crash import FRAME_RE as DUMPED_FRAME_RE

# a backend's note when it ended a command whose log had stopped growing (backends.base.killed_note)
STALLED_RE = re.compile(r"^\[ft-harness\] killed after \d+s: no output for (?P<quiet>\d+)s \(stalled\)$", re.M)
# ... and the note before it, when it first asked each process for its stacks (backends.base.asked_note)
ASKED_RE = re.compile(
    r"^\[ft-harness\] no output for \d+s: asked every process for its stacks \(signal (?P<signal>\d+)\)$", re.M
)
# pytest-timeout's ruler; its thread method writes to stderr, so the first ruler is glued to the
# running test's id when pytest printed that id with ``-v`` (``tests/t.py::test_x +++ Timeout +++``)
RULER_RE = re.compile(r"(?:^|(?<= ))\++ Timeout \++$", re.M)
FRAME_RE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)', re.M)


# pytest-timeout's signal method raising its Failed inside pytest's own code (formatting a slow
# test's report): pytest ends with INTERNALERROR, under xdist the controller names the worker's
# running test ("crashitem"). A timeout of that test, not a broken pytest (psutil 7.2.2).
INTERNAL_TIMEOUT_RE = re.compile(r"^INTERNALERROR> .*Failed: (?P<what>Timeout \(>[\d.]+s\)) from pytest-timeout", re.M)
CRASHITEM_RE = re.compile(
    r"^INTERNALERROR> AssertionError: \('(?P<id>[^']+::[^']+)', <WorkerController gw\d+>\)$", re.M
)
INTERNAL_TIMEOUT = "raised inside pytest's own code (INTERNALERROR)"  # ends such a test's message


def internal_timeout(text: str, unfinished: list[str]) -> tuple[str, str] | None:
    """(test id, message) when pytest's INTERNALERROR was pytest-timeout firing in pytest's code."""
    m = INTERNAL_TIMEOUT_RE.search(text)
    if not m:
        return None
    item = CRASHITEM_RE.search(text)
    tid = item.group("id") if item else (unfinished[-1] if unfinished else "")
    if not tid:
        return None
    return tid, f"{m.group('what')} from pytest-timeout, {INTERNAL_TIMEOUT}"


def timed_out_inside_pytest(tests: dict[str, TestCase]) -> bool:
    """Whether a phase's INTERNALERROR was a test's timeout (``internal_timeout``)."""
    return any(tc.outcome == "timeout" and tc.message.endswith(INTERNAL_TIMEOUT) for tc in tests.values())


def timeout_blocks(text: str) -> list[str]:
    """The stack dumps pytest-timeout printed, one string per timed-out test."""
    marks = [m.start() for m in RULER_RE.finditer(text)]
    out = []
    for a, b in zip(marks[0::2], marks[1::2], strict=False):
        out.append(text[a:b])
    return out


# faulthandler.dump_traceback_later's header, from ft-harness's watchdog plugin
# (_inner/ft_harness_watchdog.py). Its stderr is not pytest's, so the header is glued to whatever
# pytest had printed on that line: the running test's id without xdist (``tests/t.py::test_x
# Timeout (0:00:20)!``), another worker's result with it.
WATCHDOG_RE = re.compile(r"(?:^|(?<=\s))Timeout \((?P<after>\d+:\d\d:\d\d(?:\.\d+)?)\)!$")
NODE_ID_RE = re.compile(r"^[^\s\[]\S*?\.py::\S.*$")
DUMP_FRAME_RE = re.compile(r'^File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)$')
WATCHDOG_ENDED = "ft-harness's watchdog dumped every thread and ended the process"
WATCHDOG_ENV = "FT_HARNESS_WATCHDOG"  # in a phase's env when the watchdog was armed (harness.job.watchdog.ENV)


class Dump(NamedTuple):
    """One dump the watchdog wrote before it ended a test process."""

    after: str  # how long the test had run: "0:00:20"
    before: str  # what pytest had printed on the header's line
    threads: list[tuple[str, list[str]]]  # (header, frames innermost first)


def watchdog_dumps(text: str) -> list[Dump]:
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        m = WATCHDOG_RE.search(line.rstrip())
        if m:
            out.append(Dump(m.group("after"), line[: m.start()].strip(), _dump_lines(lines[i + 1 : i + 2000])))
    return out


def asked_dumps(text: str) -> list[tuple[str, list[str]]]:
    """The threads (header, frames innermost first) of every process that answered the silence
    watch's signal: faulthandler's dumps between the backend's two notes, one process after
    another; anything else written meanwhile is left out."""
    m = ASKED_RE.search(text)
    if not m:
        return []
    end = STALLED_RE.search(text, m.end())
    body = text[m.end() : end.start() if end else len(text)].splitlines()
    return _dump_lines([x for x in body if CURRENT_RE.match(x.strip()) or DUMPED_FRAME_RE.match(x)])


def _stalled_test(threads: list[tuple[str, list[str]]], unfinished: list[str]) -> str:
    """The test a frozen run was running: of the tests started without a result, the last whose
    function is on a dumped stack, else the last started."""
    named = [t for t in unfinished if _dump_names(threads, _func(t))]
    return (named or unfinished)[-1] if unfinished else ""


def _func(test_id: str) -> str:
    return test_id.rsplit("::", 1)[-1].split("[", 1)[0]


def _dump_names(threads: list[tuple[str, list[str]]], func: str) -> bool:
    return any(f.endswith(f" in {func}") for _, frames in threads for f in frames)


DOWN_RE = re.compile(r"^\[(?P<worker>gw\d+)\] node down: ", re.M)
WORKER_CRASHED_RE = re.compile(r"^worker '(?P<worker>gw\d+)' crashed while running '(?P<id>[^']+)'", re.M)


def _dumped_workers(text: str) -> dict[str, list[tuple[int, str]]]:
    """Worker -> (where its crash report may follow, after how long) for each watchdog dump
    that the next xdist "[gwN] node down" after it (before another dump) names."""
    heads = [(m.start(), m.group("after")) for m in re.finditer(WATCHDOG_RE.pattern, text, re.M)]
    out: dict[str, list[tuple[int, str]]] = {}
    for i, (at, after) in enumerate(heads):
        end = heads[i + 1][0] if i + 1 < len(heads) else len(text)
        down = DOWN_RE.search(text, at, end)
        if down:
            out.setdefault(down.group("worker"), []).append((down.end(), after))
    return out


def watchdog_tests(text: str, candidates: list[str]) -> dict[str, str]:
    """Of ``candidates`` (test ids xdist said crashed), those a watchdog dump shows running:
    {test id: after how long}. Named by the dump (the test's function on a stack), or, when the
    dump names none (pygments: pytest-timeout was dumping stacks and the test's threads had no
    Python frame), by the worker: the dump is followed by "[gw0] node down", and xdist's next
    "worker 'gw0' crashed while running X" is the watchdog's ending of X, not a crash."""
    dumps = watchdog_dumps(text)
    out = {}
    for tid in candidates:
        after = next((d.after for d in dumps if _dump_names(d.threads, _func(tid))), None)
        if after is not None:
            out[tid] = after
    workers = _dumped_workers(text) if len(out) < len(candidates) else {}
    said = sorted(  # xdist's summary line, or its live "node down" + FAILED when the run was cut
        [(m.start(), m.group("worker"), m.group("id")) for m in WORKER_CRASHED_RE.finditer(text)]
        + [(m.start("id"), m.group("worker"), m.group("id")) for m in NODE_DOWN_RE.finditer(text)]
    )
    for pos, worker, tid in said:
        if tid in candidates and tid not in out:
            seen = [after for at, after in workers.get(worker, []) if at <= pos]
            if seen:
                out[tid] = seen[-1]
                workers[worker] = [w for w in workers[worker] if w[0] > pos]
    return out


def _ended_tests(dumps: list[Dump], unfinished: list[str]) -> list[str]:
    """Without xdist, the test a watchdog dump ended: the id its header is glued to, if that
    test's function is on a dumped stack, else the last test that started."""
    named = [d.before for d in dumps if NODE_ID_RE.match(d.before) and _dump_names(d.threads, _func(d.before))]
    return list(dict.fromkeys(named)) or unfinished[-1:]


def _dump_waits(threads: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    """``thread_waits`` for a faulthandler dump (frames innermost first, no source lines)."""
    out = []
    for head, frames in threads:
        own = []
        for f in frames:
            m = DUMP_FRAME_RE.match(f)
            if (
                not m
                or any(x in m.group("file") for x in MACHINERY)
                or _is_stdlib(m.group("file"))
                or m.group("file").startswith("<")
            ):  # execnet's "<string>"
                continue
            own.append(f"{_short(m.group('file'))}:{m.group('line')} in {m.group('func')}")
        if own:
            out.append((head.replace("Current thread", "Thread"), own[:WAIT_FRAMES]))
    return out


HEADER_RE = re.compile(r"^_{3,} (?:ERROR at \w+ of )?(?P<title>.+?) _{3,}$", re.M)
LOC_RE = re.compile(r"^(?P<loc>[^\s:]+\.py:\d+): \w+", re.M)


def _report_location(text: str, func: str) -> str:
    """``tests/test_x.py:14`` from the failure report of ``func`` ("E   Failed: Timeout ...")."""
    for h in HEADER_RE.finditer(text):
        title = h.group("title").rsplit(".", 1)[-1].split("[", 1)[0]
        if title != func:
            continue
        nxt = HEADER_RE.search(text, h.end())
        body = text[h.end() : nxt.start() if nxt else len(text)]
        if "Timeout" not in body:
            continue
        m = LOC_RE.search(body)
        if m:
            return m.group("loc")
    return ""


STACK_RE = re.compile(r"^~+ Stack of (?P<name>.+?) \(\d+\) ~+$", re.M)
# frames of the test machinery, never where a package waits
MACHINERY = (
    "/_pytest/",
    "/pluggy/",
    "/pytest_run_parallel/",
    "/xdist/",
    "/execnet/",
    "/pytest_timeout.py",
    "/pytest/__main__.py",
    "<frozen ",
)
WAIT_FRAMES = 3  # innermost frames shown per thread


def _short(path: str) -> str:
    """``ft_deadlock/ledger.py`` for an installed file, ``tests/test_x.py`` for the suite's own."""
    if "site-packages/" in path:
        return path.rsplit("site-packages/", 1)[1]
    parts = path.split("/")
    for anchor in ("tests", "test", "testing", "src"):
        if anchor in parts[:-1]:
            return "/".join(parts[len(parts) - 1 - parts[::-1].index(anchor) :])
    return "/".join(parts[-2:])


def _is_stdlib(path: str) -> bool:
    return "/lib/python3" in path and "site-packages/" not in path


def thread_waits(block: str) -> list[tuple[str, list[str]]]:
    """Per thread in a pytest-timeout dump: its innermost frames in the package or the suite
    (``ft_deadlock/ledger.py:22 in post: with _accounts_lock:``), machinery and stdlib left out.
    Threads with no such frame (the main thread joining its workers) are not listed."""
    heads = list(STACK_RE.finditer(block))
    out = []
    for h, nxt in zip(heads, [*heads[1:], None], strict=False):
        body = block[h.end() : nxt.start() if nxt else len(block)]
        lines = body.splitlines()
        frames = []
        for k, line in enumerate(lines):
            m = FRAME_RE.match(line)
            if not m or any(x in m.group("file") for x in MACHINERY) or _is_stdlib(m.group("file")):
                continue
            code = lines[k + 1].strip() if k + 1 < len(lines) and not FRAME_RE.match(lines[k + 1]) else ""
            where = f"{_short(m.group('file'))}:{m.group('line')} in {m.group('func')}"
            frames.append(f"{where}: {code}" if code else where)
        if frames:
            out.append((h.group("name"), frames[::-1][:WAIT_FRAMES]))  # innermost first
    return out


def _waits_text(block: str | list[tuple[str, list[str]]]) -> tuple[str, list[str]]:
    """(stack top, excerpt lines) from a dump: where each thread waits."""
    waits = thread_waits(block) if isinstance(block, str) else _dump_waits(block)
    lines = []
    for name, frames in waits:
        lines.append(f"{name} waits in {frames[0]}")
        lines += [f"    called from {f}" for f in frames[1:]]
    return (waits[0][1][0] if waits else ""), lines


def _hung_test(tid: str, text: str, blocks: list[str], dumps: list[Dump]) -> HungTest:
    """A timed-out test, with where its threads wait: from pytest-timeout's stack dump of it, or
    from the watchdog's, or, with neither, from its failure report's location."""
    func = _func(tid)
    block = next((b for b in blocks if f"in {func}" in b), "")
    dump = next((d for d in dumps if _dump_names(d.threads, func)), None)
    if block or dump is None:
        top, lines = _waits_text(block)
        head = f"{tid}: Timeout from pytest-timeout"
    else:  # a wait pytest-timeout's signal could not end (in C): the watchdog's dump
        top, lines = _waits_text(dump.threads)
        head = f"{tid}: still running after {dump.after} (a wait pytest-timeout's signal cannot end); {WATCHDOG_ENDED}"
    top = top or _report_location(text, func)
    return HungTest(test_id=tid, stack_top=top, excerpt="\n".join([head, *lines[:24]]))


def find_hang(
    text: str,
    *,
    timed_out_tests: list[str],
    timed_out: bool,
    unfinished: list[str],
    finished: bool,
    done: int = 0,
    watchdog: float = 0,
    duration: float = 0,
) -> Hang | None:
    """What hung in a phase: None when nothing did. ``done``: tests with a result in the phase;
    ``watchdog``: the seconds at which ft-harness's watchdog ends a test (0: not armed);
    ``duration``: how long the phase ran.

    A job timeout while a test runs, after others finished and with no per-test timeout, in a
    run longer than the watchdog's seconds, is the job's budget spent on a suite still making
    progress (``Hang.spent``), not a hang: no test can have run past the watchdog, which would
    have ended it. A run cut before the watchdog's seconds (started with less budget left than
    a test may take) is the budget spent too: no test in it ran long enough to be called stuck.
    Without a watchdog (TSan runs, older results) a stuck test looks the same as a slow suite:
    a hang, as before."""
    blocks = timeout_blocks(text)
    dumps = watchdog_dumps(text)
    if not timed_out_tests and not finished:
        # pytest-timeout's thread method, or our watchdog: the stacks, then the process ends,
        # with no report of the test
        if blocks and unfinished:
            timed_out_tests = [unfinished[-1]]
        elif dumps:
            timed_out_tests = _ended_tests(dumps, unfinished)
    if not timed_out_tests and not timed_out:
        return None
    per_test = [_hung_test(tid, text, blocks, dumps) for tid in timed_out_tests]
    running, why, spent = "", "", False
    stalled = STALLED_RE.search(text) if timed_out else None
    if stalled:  # the backend ended a run whose log stayed silent: frozen, not slow
        threads = asked_dumps(text)
        running = _stalled_test(threads, unfinished)
        why = (
            f"no output for {stalled.group('quiet')} s, then ended by ft-harness"
            f"{f' while running {running}' if running else ''}: the process froze so that "
            "neither pytest-timeout nor the watchdog could end it"
        )
        if running and threads and running not in timed_out_tests:
            per_test.append(_asked_test(running, threads, why))
    elif timed_out:
        running = unfinished[-1] if unfinished else ""
        if running and done and 0 < watchdog < duration and not per_test:
            spent = True
            why = (
                f"the job's budget ran out with the suite still running: {done} tests had finished "
                f"in this run of {duration:.0f} s, {running} was running (the watchdog ends a "
                f"test at {watchdog:g} s)"
            )
        elif 0 < duration <= watchdog and not per_test and not finished:  # cut with less budget
            # left than a test may take: no test in it can be called stuck
            spent = True
            why = (
                f"the job's budget ran out {duration:.0f} s into this run, before the watchdog's "
                f"{watchdog:g} s: nothing can be said of "
                f"{running or 'the test that was running'} ({done} tests had finished)"
            )
        elif running:
            why = f"job timeout while running {running}"
        elif finished:
            why = "job timeout after pytest's summary: the process did not exit (threads left running?)"
        else:
            why = "job timeout; the running test is not known"
    return Hang(
        tests=tuple(per_test), job_timeout=timed_out, running=running, why=why, spent=spent, stalled=bool(stalled)
    )


ASKED = "its stacks, asked from outside before the kill"


def _asked_test(tid: str, threads: list[tuple[str, list[str]]], why: str) -> HungTest:
    """A test named by the stacks its frozen run gave the silence watch: where each thread waits."""
    top, lines = _waits_text(threads)
    return HungTest(test_id=tid, stack_top=top, excerpt="\n".join([f"{tid}: {why}; {ASKED}:", *lines[:24]]))
