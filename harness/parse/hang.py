"""Hangs: pytest-timeout's per-test timeouts and the job-level timeout.

pytest-timeout (``--timeout=N``, signal method) fails the test with
``Failed: Timeout (>N.0s) from pytest-timeout.`` and dumps every thread's
stack between ``+++ Timeout +++`` rulers; its thread method (the runs alone of
confirmation) dumps the same and ends the process, with no report of the test.
The excerpt says, per thread, where it waits: its innermost frames in the
package (site-packages) or the suite, with the source line.  When the harness's own timeout
kills the process group instead, the running test is the last one ``-v``
started without a result; if pytest had already printed its final line, the
process hung on exit (typically threads a timed-out test left behind).
"""

from __future__ import annotations

import re

from ..evidence import Hang, HungTest

RULER_RE = re.compile(r"^\++ Timeout \++$", re.M)
FRAME_RE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)', re.M)


def timeout_blocks(text: str) -> list[str]:
    """The stack dumps pytest-timeout printed, one string per timed-out test."""
    marks = [m.start() for m in RULER_RE.finditer(text)]
    out = []
    for a, b in zip(marks[0::2], marks[1::2], strict=False):
        out.append(text[a:b])
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
MACHINERY = ("/_pytest/", "/pluggy/", "/pytest_run_parallel/", "/xdist/", "/execnet/",
             "/pytest_timeout.py", "/pytest/__main__.py", "<frozen ")
WAIT_FRAMES = 3  # innermost frames shown per thread


def _short(path: str) -> str:
    """``ft_deadlock/ledger.py`` for an installed file, ``tests/test_x.py`` for the suite's own."""
    if "site-packages/" in path:
        return path.rsplit("site-packages/", 1)[1]
    parts = path.split("/")
    for anchor in ("tests", "test", "testing", "src"):
        if anchor in parts[:-1]:
            return "/".join(parts[len(parts) - 1 - parts[::-1].index(anchor):])
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
        body = block[h.end(): nxt.start() if nxt else len(block)]
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


def _waits_text(block: str) -> tuple[str, list[str]]:
    """(stack top, excerpt lines) from a dump: where each thread waits."""
    waits = thread_waits(block)
    lines = []
    for name, frames in waits:
        lines.append(f"{name} waits in {frames[0]}")
        lines += [f"    called from {f}" for f in frames[1:]]
    return (waits[0][1][0] if waits else ""), lines


def find_hang(
    text: str,
    *,
    timed_out_tests: list[str],
    timed_out: bool,
    unfinished: list[str],
    finished: bool,
) -> Hang | None:
    """What hung in a phase: None when nothing did."""
    blocks = timeout_blocks(text)
    if not timed_out_tests and blocks and unfinished and not finished:
        # pytest-timeout's thread method: the stacks, then os._exit; no report of the test
        timed_out_tests = [unfinished[-1]]
    if not timed_out_tests and not timed_out:
        return None
    per_test = []
    for tid in timed_out_tests:
        func = tid.rsplit("::", 1)[-1].split("[", 1)[0]
        block = next((b for b in blocks if f"in {func}" in b), "")
        top, lines = _waits_text(block)
        top = top or _report_location(text, func)
        per_test.append(HungTest(test_id=tid, stack_top=top,
                                 excerpt="\n".join([f"{tid}: Timeout from pytest-timeout", *lines[:24]])))
    running, why = "", ""
    if timed_out:
        running = unfinished[-1] if unfinished else ""
        if running:
            why = f"job timeout while running {running}"
        elif finished:
            why = "job timeout after pytest's summary: the process did not exit (threads left running?)"
        else:
            why = "job timeout; the running test is not known"
    return Hang(tests=tuple(per_test), job_timeout=timed_out, running=running, why=why)
