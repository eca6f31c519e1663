"""Hangs: pytest-timeout's per-test timeouts and the job-level timeout.

pytest-timeout (``--timeout=N``, signal method) fails the test with
``Failed: Timeout (>N.0s) from pytest-timeout.`` and dumps every thread's
stack between ``+++ Timeout +++`` rulers.  When the harness's own timeout
kills the process group instead, the running test is the last one ``-v``
started without a result; if pytest had already printed its final line, the
process hung on exit (typically threads a timed-out test left behind).
"""

from __future__ import annotations

import re
from typing import Any

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


def _test_frames(block: str) -> list[str]:
    return [
        m.group(0).strip()
        for m in FRAME_RE.finditer(block)
        if "site-packages" not in m.group("file") and "/lib/python3" not in m.group("file")
    ]


def find_hang(
    text: str,
    *,
    timed_out_tests: list[str],
    timed_out: bool,
    unfinished: list[str],
    finished: bool,
) -> dict[str, Any]:
    """What hung in a phase: {} when nothing did."""
    if not timed_out_tests and not timed_out:
        return {}
    blocks = timeout_blocks(text)
    per_test = []
    for tid in timed_out_tests:
        func = tid.rsplit("::", 1)[-1].split("[", 1)[0]
        block = next((b for b in blocks if f"in {func}" in b), "")
        frames = _test_frames(block)
        top = frames[0] if frames else _report_location(text, func)
        per_test.append({"test_id": tid, "stack_top": top,
                         "excerpt": "\n".join([f"{tid}: Timeout from pytest-timeout", *frames[:6]])})
    hang: dict[str, Any] = {"tests": per_test, "job_timeout": timed_out}
    if timed_out:
        running = unfinished[-1] if unfinished else ""
        hang["running"] = running
        if running:
            why = f"job timeout while running {running}"
        elif finished:
            why = "job timeout after pytest's summary: the process did not exit (threads left running?)"
        else:
            why = "job timeout; the running test is not known"
        hang["why"] = why
    first = per_test[0] if per_test else {}
    hang["test_id"] = first.get("test_id") or hang.get("running", "")
    hang["excerpt"] = first.get("excerpt") or hang.get("why", "")
    return hang
