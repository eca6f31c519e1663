"""What an upstream issue quotes from a run's output dir (issue #57): the evidence at hand.

The report keeps a job's phases without their per-test outcomes, crashes or hangs; the job's
result file (``out/results/<job id>.json``) and its kept logs and JUnit files (``logs/`` and
``junit/`` stay after a job, harness.core.artifactcopy) hold the rest.  Read here, once per
finding, all of it as text a package wrote (read with ``read_regular``: no symlink followed, a
size cap), never trusted beyond being shown:

- ``failing_runs``: the runs of a finding's test that failed, crashed or hung, first one first;
- ``first_failure``: the first failure in full (the JUnit traceback, the crash's faulthandler dump,
  every thread's stack of a hang, the GIL warning, the compiler's error), capped at
  ``MAX_FAILURE`` characters;
- ``tool_versions``: pytest and its plugins as the failing run's log header names them.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from ..core.model import Finding, JobResult, Phase
from ..results.load import read_one
from ..results.report import JobEntry
from ..util.safefiles import read_regular

MAX_FAILURE = 12_000  # characters of the first failure an issue quotes (GitHub takes 65,536 in all)
READ_LIMIT = 4 * 1024 * 1024
_BAD = ("failed", "error", "crashed", "timeout", "hang")


@dataclass(frozen=True, kw_only=True)
class RunRef:
    """One run (phase) of a job where the finding showed, and where its log is (under out/)."""

    name: str
    gil: int | None
    log: str = ""
    junit: str = ""


@dataclass(frozen=True, kw_only=True)
class Facts:
    """What the output dir adds to the report for one finding."""

    failure: str = ""  # the first failure in full ('' when nothing kept shows it)
    failure_from: str = ""  # where it was read: "threads-gil0-r3 (JUnit)", "probe log", ...
    runs: tuple[RunRef, ...] = ()  # the runs that showed it, first one first
    tools: tuple[str, ...] = ()  # "pytest 8.4.2", "pytest-run-parallel 0.10.0", ...


def read_result(out: Path, p: JobEntry) -> JobResult | None:
    """The job's result file, per-test outcomes kept; None when it is not there or not usable."""
    path = out / "results" / f"{p.job_id}.json"
    if "/" in p.job_id or not path.is_file():
        return None
    res, _ = read_one(path)
    return res


def _text(out: Path, rel: str) -> str:
    if not rel or rel.startswith("/") or ".." in rel.split("/"):
        return ""
    data = read_regular(out / rel, READ_LIMIT)
    return data.decode("utf-8", "replace") if data is not None else ""


def _shows(ph: Phase, f: Finding) -> bool:
    """Whether run ``ph`` shows finding ``f`` (its test failed, crashed or hung in it)."""
    if f.kind in ("gil-reenabled",):
        return ph.kind == "probe" and bool(ph.gil_modules or (ph.probe and ph.probe.gil_enabled))
    if f.kind == "build-failure":
        return ph.kind == "install" and not ph.ok
    if ph.kind not in ("plain", "threads", "confirm", "tsan"):
        return False
    if not f.test_id:
        return ph.name == f.phase
    if f.kind in ("crash", "ft-crash") and any(c.test_id == f.test_id for c in ph.crashes):
        return True
    if f.kind == "hang" and ph.hang is not None and ph.hang.test_id == f.test_id:
        return True
    case = ph.tests.get(f.test_id)
    return case is not None and case.outcome in _BAD


def failing_runs(res: JobResult, f: Finding) -> list[Phase]:
    """The runs of the job that show ``f``, the finding's first phase first."""
    hits = [ph for ph in res.phases if _shows(ph, f)]
    hits.sort(key=lambda ph: ph.name != f.phase)
    return hits


def _junit_failure(xml: str, test_id: str) -> str:
    """The failure (or error) text of ``test_id``'s testcase in a JUnit file: pytest's full
    traceback.  Parsed with the stdlib's parser on text of at most READ_LIMIT bytes."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError:
        return ""
    path, _, name = test_id.rpartition("::")
    mod = path.removesuffix(".py").replace("/", ".")
    for case in root.iter("testcase"):
        cls, nm = case.get("classname", ""), case.get("name", "")
        if nm != name and nm.split("[")[0] != name:
            continue
        if mod and not (cls == mod or cls.startswith(mod + ".") or mod.endswith(cls)):
            continue
        for tag in ("failure", "error"):
            el = case.find(tag)
            if el is not None:
                body = (el.text or "").strip("\n")
                head = el.get("message", "")
                return body or head
    return ""


_FATAL = re.compile(r"^.*(Fatal Python error|\+{5,} Timeout \+{5,}|Timeout \(\d|Thread 0x[0-9a-f]+).*$", re.M)
_TIMEOUT = re.compile(r"^.*(\+{5,} Timeout \+{5,}|Timeout \(\d).*$", re.M)  # pytest-timeout's stacks
_ABORTED = re.compile(r"^.*Fatal Python error: Aborted.*$", re.M)
_SECTION = re.compile(r"^_{3,} (?P<name>.+?) _{3,}$", re.M)


def _log_failure(log: str, f: Finding) -> str:
    """A crash's dump or a hang's stacks (from the first such line on), or the test's section of
    pytest's failure report, from a log."""
    if f.kind in ("crash", "ft-crash", "hang"):
        # a hang: pytest-timeout's or faulthandler's stacks, or the silence watch's SIGABRT dump
        m = (_TIMEOUT.search(log) or _ABORTED.search(log)) if f.kind == "hang" else _FATAL.search(log)
        if m:
            tail = log[m.start() :]
            end = re.search(r"^(=+ .* =+|\[gw\d+\] .*)$", tail, re.M)
            return tail[: end.start()] if end and end.start() > 0 else tail
    name = f.test_id.rpartition("::")[2]
    for m in _SECTION.finditer(log):
        if m.group("name").split("[")[0] == name or m.group("name").endswith("." + name):
            rest = log[m.end() :]
            nxt = re.search(r"^(_{3,} .+ _{3,}|=+ .* =+)$", rest, re.M)
            return m.group(0) + rest[: nxt.start() if nxt else len(rest)]
    return ""


def _cap(text: str) -> str:
    text = text.strip("\n")
    if len(text) <= MAX_FAILURE:
        return text
    half = MAX_FAILURE // 2
    return f"{text[:half]}\n[... {len(text) - MAX_FAILURE} characters cut ...]\n{text[-half:]}"


def first_failure(out: Path, ph: Phase | None, f: Finding) -> tuple[str, str]:
    """(the first failure in full, where it was read) for ``f`` seen first in run ``ph``."""
    if ph is not None:
        if f.test_id and f.kind not in ("crash", "ft-crash", "hang"):
            got = _junit_failure(_text(out, ph.junit), f.test_id)
            if got:
                return _cap(got), f"{ph.name} (its JUnit file)"
        for c in ph.crashes:
            if c.excerpt and (not f.test_id or c.test_id == f.test_id) and f.kind in ("crash", "ft-crash"):
                log = _log_failure(_text(out, ph.log), f)
                return _cap(log or c.excerpt), f"{ph.name} (its log)"
        got = _log_failure(_text(out, ph.log), f)
        if got:
            return _cap(got), f"{ph.name} (its log)"
        if ph.hang is not None and ph.hang.excerpt:
            return _cap(ph.hang.excerpt), f"{ph.name} (its log, as parsed)"
    if f.excerpt:
        return _cap(f.excerpt), "the finding's excerpt"
    return "", ""


_PLATFORM = re.compile(r"^platform \S+ -- Python (?P<py>[^,]+), pytest-(?P<pytest>[^,\s]+)", re.M)
_PLUGINS = re.compile(r"^plugins: (?P<list>.+)$", re.M)
_PLUGIN_NAMES = {"run-parallel": "pytest-run-parallel", "xdist": "pytest-xdist", "timeout": "pytest-timeout"}


def tool_versions(log: str) -> tuple[str, ...]:
    """("pytest 8.4.2", "pytest-run-parallel 0.10.0", ...) as a pytest log's header says them."""
    m = _PLATFORM.search(log)
    if not m:
        return ()
    out = [f"pytest {m.group('pytest')}"]
    p = _PLUGINS.search(log)
    for item in p.group("list").split(", ") if p else ():
        name, _, version = item.strip().rpartition("-")
        if name in _PLUGIN_NAMES and re.fullmatch(r"[0-9][0-9A-Za-z.+]*", version):
            out.append(f"{_PLUGIN_NAMES[name]} {version}")
    return tuple(out)


def facts(out: Path, p: JobEntry, f: Finding, res: JobResult | None = None) -> Facts:
    """What out/ adds for finding ``f`` of job ``p`` (``res``: its result file, read if None)."""
    res = res if res is not None else read_result(out, p)
    if res is None:
        return Facts(failure=f.excerpt, failure_from="the finding's excerpt" if f.excerpt else "")
    runs = failing_runs(res, f)
    first = runs[0] if runs else next((ph for ph in res.phases if ph.name == f.phase), None)
    failure, where = first_failure(out, first, f)
    tools: tuple[str, ...] = ()
    for ph in [*runs, *res.phases]:
        if ph.kind in ("plain", "threads", "confirm") and (tools := tool_versions(_text(out, ph.log)[:20_000])):
            break
    return Facts(
        failure=failure,
        failure_from=where,
        runs=tuple(RunRef(name=ph.name, gil=ph.gil, log=ph.log, junit=ph.junit) for ph in runs),
        tools=tools,
    )
