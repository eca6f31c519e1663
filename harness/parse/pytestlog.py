"""pytest's terminal output (``-v -rfE``, with or without pytest-xdist) -> per-test statuses.

Two line shapes carry a node id and a status:

- plain ``-v``: ``tests/test_x.py::test_y[p] PASSED          [ 50%]``
  (pytest-run-parallel: ``PARALLEL PASSED``, ``PARALLEL FAILED``,
  ``PASSED [thread-unsafe]: <reason>``, ``FAILED ([thread-unsafe]: <reason>)``)
- pytest-xdist ``-v``: ``[gw0] [ 50%] PASSED tests/test_x.py::test_y[p]``

and ``-rfE`` adds ``FAILED <id> - <msg>`` / ``ERROR <id> - <msg>`` lines at the end.
A node id printed on a line of its own (plain ``-v`` before the test runs,
xdist when a worker starts it) marks a test as started.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

STATUSES = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")
_STATUS_ALT = "PARALLEL PASSED|PARALLEL FAILED|" + "|".join(STATUSES)
_ID = r"(?P<id>[^\s\[]\S*?(?:\.py)(?:::\S.*?)?)"
# pytest's progress: "[ 42%]", "[ 12/345]" with console_output_style = count; none with classic
# (pandas 3.1.1's pyproject: "[gw1] PASSED <id>")
_PROGRESS = r"\[\s*\d+(?:%|/\d+)\]"
PLAIN_RE = re.compile(rf"^{_ID} (?P<status>{_STATUS_ALT})(?P<rest>.*?)\s*(?:{_PROGRESS})?\s*$")
XDIST_RE = re.compile(
    rf"^\[(?P<worker>gw\d+)\] (?:{_PROGRESS} )?(?P<status>{_STATUS_ALT}) (?P<id>\S.*?\.py(?:::.*?)?)(?P<rest>)\s*$"
)
SUMMARY_RE = re.compile(rf"^(?P<status>PARALLEL FAILED|FAILED|ERROR) {_ID}(?: - (?P<msg>.*))?$")
# a test ``-v`` started, with no result on its line: trailing spaces, or what another stream
# glued there (a crash's "Fatal Python error", pytest-timeout's thread-method ruler)
STARTED_RE = re.compile(r"^(?P<id>[^\s\[]\S*?\.py::.*?)(?: +| Fatal Python error:.*| \++ Timeout \++)$")
XDIST_CREATED_RE = re.compile(r"^(?:created: \d+/\d+ workers|\d+ workers \[\d+ items?\])", re.M)
FINAL_RE = re.compile(r"^=+ (?P<body>(?:\d+ \w+(?:, )?)+|no tests ran)\s.*in [\d.]+s.*=+$", re.M)
_UNSAFE_RE = re.compile(r"^\s*\(?\[thread-unsafe\]: (?P<reason>.*?)\)?\s*$")

OUTCOME_OF = {
    "PASSED": "passed",
    "PARALLEL PASSED": "passed",
    "XPASS": "passed",
    "FAILED": "failed",
    "PARALLEL FAILED": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
    "XFAIL": "skipped",
}


@dataclass(frozen=True, kw_only=True)
class LogTest:
    outcome: str
    status: str  # the word(s) pytest printed
    parallel: bool | None = None  # from pytest-run-parallel's markers
    unsafe_reason: str = ""
    message: str = ""


@dataclass(frozen=True, kw_only=True)
class PytestLog:
    tests: dict[str, LogTest] = field(default_factory=dict)
    started: tuple[str, ...] = ()  # ids seen starting, in order
    xdist: bool = False
    final: dict[str, int] = field(default_factory=dict)  # the "== 2 failed, 3 passed in ==" line
    finished: bool = False  # that final line is there

    @property
    def unfinished(self) -> list[str]:
        """Ids that started and have no result (the running test when the log ends)."""
        return [t for t in self.started if t not in self.tests]


def clean_id(text: str) -> str:
    """Cut what a crashed worker's stderr glued onto a node id: ``tests/t.py::t[a b] Fatal ...``."""
    text = text.strip()
    start = text.find("::")
    if start < 0:
        return text.split(" ", 1)[0]
    i, depth = start, 0
    while i < len(text):
        c = text[i]
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0 and (i + 1 == len(text) or text[i + 1] in " \t"):
                return text[: i + 1]
        elif c in " \t" and depth == 0:
            return text[:i]
        i += 1
    return text


def _merge(tests: dict[str, LogTest], tid: str, new: LogTest) -> None:
    old = tests.get(tid)
    if old is None:
        tests[tid] = new
        return
    # A setup/teardown ERROR after PASSED, or a summary line after the -v line:
    # keep the worse outcome, and whatever markers either line carried.
    worse = ("error", "failed") if new.outcome in ("error", "failed") else ()
    tests[tid] = LogTest(
        outcome=new.outcome if worse and old.outcome in ("passed", "skipped") else old.outcome,
        status=old.status,
        parallel=old.parallel if old.parallel is not None else new.parallel,
        unsafe_reason=old.unsafe_reason or new.unsafe_reason,
        message=old.message or new.message,
    )


def _entry(status: str, rest: str) -> LogTest:
    parallel: bool | None = None
    reason = ""
    if status.startswith("PARALLEL"):
        parallel = True
    else:
        m = _UNSAFE_RE.match(rest)
        if m:
            parallel, reason = False, m.group("reason").strip()
    msg = rest.strip().strip("()") if status in ("SKIPPED", "XFAIL") else ""
    return LogTest(
        outcome=OUTCOME_OF[status], status=status, parallel=parallel, unsafe_reason=reason, message=msg[:300]
    )


def parse_log(text: str) -> PytestLog:
    tests: dict[str, LogTest] = {}
    started: list[str] = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        m = XDIST_RE.match(line) or PLAIN_RE.match(line)
        if m:
            _merge(tests, clean_id(m.group("id")), _entry(m.group("status"), m.group("rest") or ""))
            continue
        m = SUMMARY_RE.match(line)
        if m:
            st = m.group("status")
            _merge(
                tests,
                clean_id(m.group("id")),
                LogTest(
                    outcome=OUTCOME_OF[st],
                    status=st,
                    parallel=True if st.startswith("PARALLEL") else None,
                    message=(m.group("msg") or "")[:300],
                ),
            )
            continue
        m = STARTED_RE.match(line)
        if m:
            started.append(clean_id(m.group("id")))
    final: dict[str, int] = {}
    finals = list(FINAL_RE.finditer(text))
    fm = finals[-1] if finals else None
    if fm and fm.group("body") != "no tests ran":
        for n, word in re.findall(r"(\d+) (\w+)", fm.group("body")):
            final[word] = int(n)
    return PytestLog(
        tests=tests,
        started=tuple(dict.fromkeys(started)),
        xdist=bool(XDIST_CREATED_RE.search(text)),
        final=final,
        finished=fm is not None,
    )
