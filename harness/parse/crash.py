"""Crashes: exit by signal, faulthandler's ``Fatal Python error`` blocks, xdist's crashed workers.

With ``PYTHONFAULTHANDLER=1`` a dying interpreter prints::

    Fatal Python error: Segmentation fault
    <blank>
    Current thread 0x... (most recent call first):
      File "/src/tests/test_x.py", line 10 in test_y
      ...

pytest-xdist then reports ``worker 'gw1' crashed while running '<node id>'``
and goes on; without xdist the whole pytest process dies by the signal and
the running test is the last node id that ``-v`` printed without a result.
Worker stderr is interleaved with the controller's output, so blocks are
matched to crashed tests by the test function named in the stack.

Two threads that crash at once interleave their dumps: a ``Fatal Python error``
lands inside a frame line, the second block has no ``Current thread``, or the
only dump is cut before it (tests/data/parse/crash-interleaved, captured from
ft_realloc with 8 threads). A crash then takes its richest block, and a dump
without a ``Current thread`` takes the first thread in package or test code.
"""

from __future__ import annotations

import re
import signal as _signal
from typing import Any

from ..core.evidence import Crash
from .junit import CRASHED_RE

FATAL_RE = re.compile(r"Fatal Python error: (?P<what>[^\n]*)")
FRAME_RE = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')
CURRENT_RE = re.compile(r"^(?:Current thread|Thread) 0x[0-9a-f]+ .*most recent call first")
SIGNAL_OF = {
    "Segmentation fault": _signal.SIGSEGV,
    "Aborted": _signal.SIGABRT,
    "Bus error": _signal.SIGBUS,
    "Floating-point exception": _signal.SIGFPE,
    "Floating point exception": _signal.SIGFPE,
    "Illegal instruction": _signal.SIGILL,
}
MAX_FRAMES = 25
# xdist's live report of a worker that died: "[gw1] node down: Not properly terminated", then the
# test it ran as FAILED (maybe with stderr glued on). Its "worker 'gw1' crashed while running"
# comes only in the junit and the final summary, which a run cut by the job's budget never writes
# (sqlalchemy 2.1.9: the watchdog ended a memusage test, then the budget cut the run).
NODE_DOWN_RE = re.compile(
    r"^\[(?P<worker>gw\d+)\] node down: [^\n]*\n\[(?P=worker)\] \[ *\d+%\] FAILED (?P<id>[^\s']+::[^\s']+)", re.M
)


def signal_of(what: str) -> int | None:
    for name, sig in SIGNAL_OF.items():
        if what.startswith(name):
            return int(sig)
    return None


def _is_lib(path: str) -> bool:
    return "site-packages" in path or "/lib/python3" in path or path.startswith("<")


OTHER_FRAMES = 2  # innermost frames shown for each thread that is not the crashing one
MAX_THREADS = 16


def _dump_lines(lines: list[str]) -> list[tuple[str, list[str]]]:
    """faulthandler's dump after a ``Fatal Python error`` line: (thread header, its frames)."""
    threads: list[tuple[str, list[str]]] = []
    for nxt in lines:
        if FATAL_RE.search(nxt):
            break
        text = nxt.strip()
        if CURRENT_RE.match(text):
            threads.append((text.split(" (most recent", 1)[0], []))
        elif FRAME_RE.match(nxt) and threads:
            threads[-1][1].append(text)
        elif text and threads and not text.startswith("<no Python frame>"):
            break  # the dump is over ("Extension modules: ...", pytest's next line)
    return threads


def fatal_blocks(text: str) -> list[dict[str, Any]]:
    """Every ``Fatal Python error`` with the crashing thread's stack and where the others were.

    ``excerpt`` is the error line, the crashing ("Current") thread's innermost frames, and for
    each other thread its innermost frames outside the standard library and pytest's machinery.
    """
    lines = text.splitlines()
    blocks = []
    for i, line in enumerate(lines):
        m = FATAL_RE.search(line)
        if not m:
            continue
        what = m.group("what").strip()
        threads = _dump_lines(lines[i + 1 : i + 2000])
        named = next((head for head, fr in threads if head.startswith("Current thread")), "")
        if not named:  # interleaved or cut: the innermost thread in package or test code
            named = next((head for head, fr in threads if fr and not _is_lib(_file(fr[0]))), "")
        current = next((fr for head, fr in threads if head == named), [])
        frames = current[:MAX_FRAMES]
        test_frame = next((f for f in frames if (fm := FRAME_RE.match("  " + f)) and not _is_lib(fm.group("file"))), "")
        excerpt = [f"Fatal Python error: {what}"]
        for head, fr in threads[:MAX_THREADS]:
            if head == named:
                said = (
                    "crashed"
                    if head.startswith("Current thread")
                    else "in package code; the dump names no crashing thread"
                )
                excerpt += [f"{head} ({said}):", *(f"  {f}" for f in fr[:8])]
                continue
            own = [f for f in fr if not _is_machinery(f)][:OTHER_FRAMES]
            excerpt += [f"{head}:", *(f"  {f}" for f in own or fr[:1])]
        blocks.append(
            {
                "fatal": what,
                "signal": signal_of(what),
                "stack": frames,
                "stack_top": frames[0] if frames else "",
                "test_frame": test_frame,
                "excerpt": "\n".join(excerpt),
            }
        )
    return blocks


def _file(frame: str) -> str:
    m = FRAME_RE.match("  " + frame)
    return m.group("file") if m else ""


def richest(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """The block that says most: with a stack, then with a known signal; the last of equals."""
    return max(reversed(blocks), key=lambda b: (bool(b["stack"]), b["signal"] is not None), default={})


MACHINERY = ("/_pytest/", "/pluggy/", "/pytest_run_parallel/", "/xdist/", "/execnet/", "<frozen ")


def _is_machinery(frame: str) -> bool:
    path = _file(frame)
    return any(x in path for x in MACHINERY) or ("/lib/python3" in path and "site-packages" not in path)


def _func(test_id: str) -> str:
    return test_id.rsplit("::", 1)[-1].split("[", 1)[0]


def _frame_func(frame: str) -> str:
    m = FRAME_RE.match("  " + frame)
    return m.group("func") if m else ""


def phase_signal(exit_code: int | None, sig: int | None) -> int | None:
    if sig:
        return sig
    if exit_code is not None and exit_code < 0:
        return -exit_code
    if exit_code is not None and 128 < exit_code < 128 + 65:
        return exit_code - 128  # via a shell
    return None


def find_crashes(text: str, *, exit_code: int | None, sig: int | None, unfinished: list[str]) -> list[Crash]:
    """One entry per crashed test (or one without a test id when none can be named)."""
    blocks = fatal_blocks(text)
    used: set[int] = set()
    crashes: list[Crash] = []
    said: dict[str, str] = {}  # crashed test id -> the line that says so, xdist's summary's first
    for m in [*CRASHED_RE.finditer(text), *NODE_DOWN_RE.finditer(text)]:
        said.setdefault(m.group("id"), m.group(0))
    crashed_ids = list(said)

    def take(test_id: str) -> dict[str, Any]:
        for i, b in enumerate(blocks):
            if i not in used and b["test_frame"] and _frame_func(b["test_frame"]) == _func(test_id):
                used.add(i)
                return b
        for i, b in enumerate(blocks):
            if i not in used and not b["test_frame"]:
                used.add(i)
                return b
        return {}

    for tid in crashed_ids:
        b = take(tid)
        line = said[tid]
        crashes.append(
            Crash(
                test_id=tid,
                signal=b.get("signal"),
                fatal=b.get("fatal", ""),
                stack_top=b.get("stack_top", ""),
                test_frame=b.get("test_frame", ""),
                excerpt="\n".join(x for x in (line, b.get("excerpt", "")) if x),
                worker=True,
            )
        )
    psig = phase_signal(exit_code, sig)
    if psig is not None and psig not in (_signal.SIGKILL, _signal.SIGTERM, _signal.SIGINT):
        b = richest([b for i, b in enumerate(blocks) if i not in used])
        tid = unfinished[-1] if unfinished else ""
        if not tid and b.get("test_frame"):
            tid = ""  # a stack without a node id: keep the frame as evidence only
        crashes.append(
            Crash(
                test_id=tid,
                signal=psig,
                fatal=b.get("fatal", ""),
                stack_top=b.get("stack_top", ""),
                test_frame=b.get("test_frame", ""),
                excerpt=b.get("excerpt", "") or f"process ended by signal {psig}",
            )
        )
    return crashes
