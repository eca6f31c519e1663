"""pytest-run-parallel's account of which tests ran in threads.

What it prints (pytest-run-parallel 0.10, checked on real runs):

- after collection: ``Collected N items to run in parallel`` (N counts every
  item not judged thread-unsafe, including ones that will skip or xfail);
- per test with ``-v`` and *without* xdist: ``PARALLEL PASSED`` /
  ``PARALLEL FAILED`` for threaded tests, ``PASSED [thread-unsafe]: <reason>``
  / ``FAILED ([thread-unsafe]: <reason>)`` for tests it ran once;
- a ``pytest-run-parallel report`` section: with ``-v``, one line
  ``<id> was not run in parallel: <reason>`` (``was skipped`` with
  ``--skip-thread-unsafe``) per thread-unsafe test; without ``-v`` only
  ``K tests were not run in parallel ...``; or ``All tests were run in parallel! 🎉``.

Under pytest-xdist none of that is true: the controller has no items, so it
prints no "Collected" line, plain ``PASSED``/``FAILED`` and "All tests were run
in parallel!" whatever happened. Such a log is marked ``trusted: False``;
a ``--collect-only`` run of the same command (no workers start) gives the
truth, and the verdict step combines the two.
"""

from __future__ import annotations

import re

from ..core.evidence import ParallelInfo
from .pytestlog import PytestLog, clean_id

COLLECTED_RE = re.compile(r"^Collected (?P<n>\d+) items? to run in parallel\s*$", re.M)
SECTION_RE = re.compile(r"^=+ pytest-run-parallel report =+$", re.M)
UNSAFE_LINE_RE = re.compile(
    r"^(?P<id>\S.*?\.py(?:::.*?)?) (?P<how>was not run in parallel|was skipped): (?P<reason>.*)$"
)
COUNT_LINE_RE = re.compile(r"^(?P<n>\d+) tests? (?:was|were) (?:not run in parallel|skipped) because")
ALL_RE = re.compile(r"^All tests were run in parallel!", re.M)
COLLECT_ONLY_RE = re.compile(r"^=+ (?:\d+(?:/\d+)? tests? collected|no tests collected)", re.M)


def _section(text: str) -> list[str]:
    m = SECTION_RE.search(text)
    if not m:
        return []
    out = []
    for line in text[m.end() :].splitlines()[1:]:
        if line.startswith("="):
            break
        out.append(line.rstrip())
    return out


def parse_parallel(text: str, plog: PytestLog, *, collect_only: bool = False) -> ParallelInfo | None:
    """Coverage facts from one log; None when pytest-run-parallel said nothing."""
    found = list(COLLECTED_RE.finditer(text))
    m = found[-1] if found else None
    section = _section(text)
    markers = {tid: t for tid, t in plog.tests.items() if t.parallel is not None}
    if m is None and not section and not markers:
        return None
    single: dict[str, str] = {}
    skipped: dict[str, str] = {}
    unsafe_count = None
    for line in section:
        um = UNSAFE_LINE_RE.match(line)
        if um:
            tid = clean_id(um.group("id"))
            (skipped if um.group("how") == "was skipped" else single)[tid] = um.group("reason")
            continue
        cm = COUNT_LINE_RE.match(line)
        if cm:
            unsafe_count = int(cm.group("n"))
    for tid, t in markers.items():
        if t.parallel is False:
            single.setdefault(tid, t.unsafe_reason)
    if unsafe_count is None and (single or skipped or ALL_RE.search(text)):
        unsafe_count = len(single) + len(skipped)
    collect_only = collect_only or bool(COLLECT_ONLY_RE.search(text))
    trusted = collect_only or not plog.xdist
    return ParallelInfo(
        trusted=trusted,
        source="collect" if collect_only else ("xdist" if plog.xdist else "log"),
        collected_parallel=int(m.group("n")) if m else None,
        unsafe_count=unsafe_count,
        single=single,
        skipped=skipped,
        in_threads=tuple(sorted(t for t, v in markers.items() if v.parallel and v.outcome != "skipped")),
        all_parallel_claimed=bool(ALL_RE.search(text)),
    )
