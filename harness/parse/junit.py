"""JUnit XML from pytest (plain, pytest-xdist, pytest-run-parallel) -> per-test outcomes.

pytest writes ``classname="tests.test_x.TestK" name="test_y[p]"``; the node id
``tests/test_x.py::TestK::test_y[p]`` is not recoverable from that alone
(a dot may separate directories, a module or a class), so :func:`junit_key`
maps a node id *to* the JUnit form and the caller matches against node ids
seen in the log; :func:`guess_nodeid` is the fallback when the log is silent.

A truncated or garbled file never raises: what can be read is returned, the
rest is recovered by a tolerant scan of ``<testcase>`` elements.
"""

from __future__ import annotations

import html
import logging
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

log = logging.getLogger(__name__)

CRASHED_RE = re.compile(r"worker '(?P<worker>[^']+)' crashed while running '(?P<id>[^']+)'")
TIMEOUT_RE = re.compile(r"Timeout \(>[\d.]+s\) from pytest-timeout|^Failed: Timeout\b", re.M)
MESSAGE_CHARS = 300


@dataclass(frozen=True, kw_only=True)
class JUnitCase:
    classname: str
    name: str
    file: str = ""
    outcome: str  # one of model.OUTCOMES
    message: str = ""
    seconds: float = 0.0  # its time="" (the whole item: every thread and iteration under run-parallel)

    @property
    def key(self) -> tuple[str, str]:
        return (self.classname, self.name)


def junit_key(nodeid: str) -> tuple[str, str]:
    """The (classname, name) pytest's junitxml writes for a node id."""
    names = nodeid.split("::")
    names[0] = names[0].replace("/", ".")
    if names[0].endswith(".py"):
        names[0] = names[0][: -len(".py")]
    if len(names) == 1:  # a collection error on a module
        return ("", names[0])
    return (".".join(names[:-1]), names[-1])


def guess_nodeid(case: JUnitCase) -> str:
    """Best node id without the log: use ``file`` when pytest wrote it, else guess."""
    if not case.classname:
        return case.name.replace(".", "/") + ".py"
    parts = case.classname.split(".")
    if case.file and case.file.endswith(".py"):
        mod = case.file[: -len(".py")].replace("\\", "/")
        depth = len(mod.split("/"))
        return "::".join([case.file.replace("\\", "/"), *parts[depth:], case.name])
    # Classes are CamelCase by pytest's default python_classes = Test*.
    i = len(parts)
    while i > 1 and parts[i - 1][:1].isupper():
        i -= 1
    return "::".join(["/".join(parts[:i]) + ".py", *parts[i:], case.name])


def _short(text: str) -> str:
    text = (text or "").strip()
    return text[:MESSAGE_CHARS]


# pytest's message for a module that could not be collected says nothing of why; the error
# is the body's last "E   " line ("E   ModuleNotFoundError: No module named 'hypothesis'")
_E_LINE_RE = re.compile(r"^E\s+(\S.*)$", re.M)


def _with_cause(message: str, body: str) -> str:
    if message.strip() != "collection failure":
        return message
    found = _E_LINE_RE.findall(body)
    if not found:
        return message
    cause = found[-1].split("</", 1)[0].strip()  # a scanned body still holds its </error>
    return f"collection failure: {cause}"


def _classify(kind: str, typ: str, message: str, body: str) -> str:
    if kind == "skipped":
        return "skipped"
    blob = f"{message}\n{body}"
    if CRASHED_RE.search(blob):
        return "crashed"
    if TIMEOUT_RE.search(blob):
        return "timeout"
    return "failed" if kind == "failure" else "error"


def _from_element(tc: ET.Element) -> JUnitCase:
    outcome, message = "passed", ""
    for child in tc:
        tag = child.tag
        if tag not in ("failure", "error", "skipped"):
            continue
        msg = child.get("message", "") or ""
        this = _classify(tag, child.get("type", ""), msg, child.text or "")
        if tag == "skipped" and child.get("type") == "pytest.xfail":
            msg = f"xfail: {msg}".strip()
        # failure/crash/timeout beat skipped; the first bad child gives the message
        if outcome in ("passed", "skipped") or (this in ("crashed", "timeout")):
            outcome, message = this, _with_cause(msg, child.text or "") or (child.text or "")
    return JUnitCase(
        classname=tc.get("classname", "") or "",
        name=tc.get("name", "") or "",
        file=tc.get("file", "") or "",
        outcome=outcome,
        message=_short(message),
        seconds=_seconds(tc.get("time", "")),
    )


def _seconds(text: str | None) -> float:
    try:
        return max(0.0, float(text or 0))
    except ValueError:
        return 0.0


_TC_RE = re.compile(r"<testcase\b(?P<attrs>[^>]*?)(?:/>|>(?P<body>.*?)(?:</testcase>|(?=<testcase\b)|\Z))", re.S)
_ATTR_RE = re.compile(r'(\w+)="([^"]*)"')
_CHILD_RE = re.compile(r"<(failure|error|skipped)\b([^>]*)", re.S)


def _scan(text: str) -> list[JUnitCase]:
    """Tolerant scan for a truncated or malformed file."""
    cases = []
    for m in _TC_RE.finditer(text):
        attrs = {k: html.unescape(v) for k, v in _ATTR_RE.findall(m.group("attrs"))}
        if "name" not in attrs or not m.group("attrs").rstrip().endswith('"'):
            continue  # cut inside the tag itself
        body = m.group("body") or ""
        closed = m.group("body") is None or "</testcase>" in m.group(0)
        if not closed and not _CHILD_RE.search(body):
            continue  # cut before its outcome was written: unknown, not "passed"
        outcome, message = "passed", ""
        for cm in _CHILD_RE.finditer(body):
            cattrs = {k: html.unescape(v) for k, v in _ATTR_RE.findall(cm.group(2))}
            this = _classify(cm.group(1), cattrs.get("type", ""), cattrs.get("message", ""), body)
            if outcome in ("passed", "skipped") or this in ("crashed", "timeout"):
                outcome, message = this, _with_cause(cattrs.get("message", ""), html.unescape(body))
        cases.append(
            JUnitCase(
                classname=attrs.get("classname", ""),
                name=attrs["name"],
                file=attrs.get("file", ""),
                outcome=outcome,
                message=_short(message),
                seconds=_seconds(attrs.get("time")),
            )
        )
    return cases


def parse_junit(text: str) -> tuple[list[JUnitCase], bool]:
    """All test cases in a JUnit XML text, and whether the file parsed cleanly."""
    if not text.strip():
        return [], False
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        log.debug("junit does not parse (%s); scanning", e)
        return _scan(text), False
    return [_from_element(tc) for tc in root.iter("testcase")], True
