"""ThreadSanitizer logs -> ``TsanReport`` values (harness.core.evidence; what ``Phase.tsan`` holds).

A TSan log (``<log_path>.<pid>``, one per process) holds blocks like::

    ==================
    WARNING: ThreadSanitizer: data race (pid=4242)
      Write of size 8 at 0x7f.. by thread T2:
        #0 incr .../_samples.c:19 (_samples.cpython-313t-x86_64-linux-gnu.so+0x1139)
        ...
      Previous write of size 8 at 0x7f.. by thread T1:
        ...
      Location is global 'counter' of size 8 at 0x7f.. (_samples...so+0x4040)
      Thread T2 (tid=4250, running) created by main thread at:
        ...
    SUMMARY: ThreadSanitizer: data race .../_samples.c:19 in incr
    ==================

plus, from ``harness/_inner/tsan_marker.py``, lines ``ft-harness: test start <nodeid>`` /
``ft-harness: test end <nodeid>`` that tell which test was running.  Deadly
signals (``==N==ERROR: ThreadSanitizer: SEGV on unknown address``) are reports
too.  The parser never raises: a truncated block becomes a report with
``complete=False``.
"""

from __future__ import annotations

import hashlib
import logging
import re
import sys
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from ..core.evidence import TsanFrame, TsanLocation, TsanReport, TsanSection, TsanStack, TsanThread
from ..util.safefiles import read_regular

log = logging.getLogger(__name__)

MARKER = "ft-harness: test "
LOG_PREFIX = "tsan"  # TSAN_OPTIONS log_path=<dir>/tsan -> files <dir>/tsan.<pid>
MAX_TEXT = 6000  # characters of a report's raw text kept in the result

_WARNING = re.compile(r"^WARNING: ThreadSanitizer: (?P<title>.*?)\s*(?:\(pid=(?P<pid>\d+)\))?\s*$")
_ERROR = re.compile(r"^==(?P<pid>\d+)==ERROR: ThreadSanitizer: (?P<title>.*?)\s*$")
_FATAL = re.compile(r"^(?:==\d+==)?FATAL: ThreadSanitizer:? (?P<title>.*?)\s*$")
_SUMMARY = re.compile(r"^SUMMARY: ThreadSanitizer: (?P<text>.*?)\s*$")
_SUMMARY_LOC = re.compile(r"(?P<file>\S+?):(?P<line>\d+)(?::\d+)? in (?P<func>.+)$")
# without debug line info TSan names the module and offset: "(/x/_count...so+0x1194) in bump"
_SUMMARY_MOD = re.compile(r"\((?P<file>[^()\s]+?)\+0x[0-9a-f]+\) in (?P<func>.+)$")
_FRAME = re.compile(r"^\s*#(?P<n>\d+)\s+(?P<body>.*?)\s*$")
_MODULE = re.compile(r"\((?P<module>[^()]*?)(?:\+0x[0-9a-f]+)?\)$")
_FILELINE = re.compile(r"^(?P<file>\S+?):(?P<line>\d+)(?::\d+)?$")
# pip builds a requirement in a temporary tree (/tmp/pip-install-x1y2/six_0abc/...): the path
# inside it is what names the file (the job strips its own source dir with strip_path_prefix)
_PIP_BUILD_DIR = re.compile(r"^/(?:[^/]+/)*?(?:pip-install-[^/]+/[^/]+|pip-req-build-[^/]+)/")
_THREAD = re.compile(r"\b(?:by|in) (?P<thread>main thread|thread T\d+)")
_ACCESS = re.compile(r"^(?P<prev>Previous )?(?P<access>(?:atomic )?(?:read|write))\b", re.I)
_SEPARATOR = re.compile(r"^={10,}\s*$")
_ABORTING = re.compile(r"^==\d+==ABORTING")

# Frames of the sanitizer runtime and the C library: neither the package's nor the interpreter's.
_RUNTIME_MODULE = re.compile(
    r"^(?:libtsan|libc[.-]|libc\.so|libpthread|ld-linux|ld-|libstdc\+\+|libgcc|libm[.-]|libdl)"
)
_RUNTIME_FILE = re.compile(r"(?:libsanitizer|compiler-rt|/tsan_[^/]*$|^\.\./sysdeps|/sysdeps/|^\./nptl|/nptl/)")
# CPython's own source tree: the python binary, libpython, and stdlib extension modules.
_PY_MODULE = re.compile(r"^(?:python(?:\d[\d.]*t?)?(?:-\w+)?|libpython\d[\d.]*t?\.so.*)$")
_PY_FILE = re.compile(r"(?:^|/)(?:\./)?(?:Objects|Python|Include|Parser|Programs|Modules)/[^/].*\.[ch]$")


def _stdlib_ext(module: str) -> bool:
    """``_ctypes.cpython-313t-x86_64-linux-gnu.so`` is CPython's; no module name at all may be."""
    return not module or module.split(".", 1)[0] in sys.stdlib_module_names


def _origin(file: str, module: str) -> str:
    if _RUNTIME_MODULE.match(module) or _RUNTIME_FILE.search(file):
        return "runtime"
    if _PY_MODULE.match(module):
        return "interpreter"
    if file and _PY_FILE.search(file) and "site-packages" not in file and _stdlib_ext(module):
        # A stdlib extension (lib-dynload) compiled from CPython's Modules/; a package's own
        # Modules/x.c (python-ldap has one) in a module of its own is the package's.
        return "interpreter"
    if module in ("", "<unknown module>") and not file:
        return "unknown"
    return "package"


def parse_frame(line: str) -> TsanFrame | None:
    """``    #1 func file.c:12:5 (module.so+0x1f)`` -> its frame; None if not a frame line."""
    m = _FRAME.match(line)
    if not m:
        return None
    body = m.group("body")
    module = ""
    mm = _MODULE.search(body)
    if mm:
        module = mm.group("module").strip()
        body = body[: mm.start()].rstrip()
    file, lineno = "", None
    head, _, last = body.rpartition(" ")
    fl = _FILELINE.match(last)
    if fl and head:
        file, lineno = _PIP_BUILD_DIR.sub("", fl.group("file")), int(fl.group("line"))
        body = head
    elif last.startswith("<null>") and head.endswith("<null>"):
        body = head[: -len("<null>")].rstrip()
    func = body.strip()
    if func.startswith("0x") and " " not in func:  # an address with no symbol
        func = ""
    if func == "<null>":
        func = ""
    return TsanFrame(
        n=int(m.group("n")), func=func, file=file, line=lineno, module=module, origin=_origin(file, module)
    )


def frame_str(fr: TsanFrame) -> str:
    where = f"{fr.file}:{fr.line}" if fr.file else fr.module
    return f"{fr.func or '??'} {where}".strip()


def _kind(title: str) -> str:
    kind = re.sub(r"\s*\(.*\)\s*$", "", title).strip()
    if kind.startswith(("SEGV", "BUS", "FPE", "ILL", "ABRT")) or "on unknown address" in kind:
        return kind.split()[0]
    return kind or "unknown"


class _Block:
    def __init__(self, title: str, pid: int | None, test_id: str, deadly: bool) -> None:
        self.title = title
        self.pid = pid
        self.test_id = test_id
        self.deadly = deadly
        self.lines: list[str] = []
        self.summary = ""
        self.complete = False


def _sections(lines: list[str]) -> list[tuple[str, tuple[TsanFrame, ...]]]:
    """Split a block's body into (header, frames) sections; headers end with ':'."""
    out: list[tuple[str, tuple[TsanFrame, ...]]] = []
    header = ""
    frames: list[TsanFrame] = []
    for raw in lines:
        fr = parse_frame(raw)
        if fr is not None:
            frames.append(fr)
            continue
        text = raw.strip()
        if not text or text.startswith("Hint:"):
            continue
        if text.startswith("[failed to restore the stack]"):
            frames.append(TsanFrame(origin="unknown", unrestored=True))
            continue
        if header or frames:
            out.append((header, tuple(frames)))
        header, frames = text, []
    if header or frames:
        out.append((header, tuple(frames)))
    return out


def _signature(kind: str, stacks: list[TsanStack]) -> str:
    """Stable across runs: kind + top package (else interpreter) frames of each stack,
    without addresses, thread numbers or line numbers, order-independent."""
    parts = []
    for st in stacks:
        frames = [f for f in st.frames if f.origin == "package"]
        if not frames:
            frames = [f for f in st.frames if f.origin == "interpreter"]
        parts.append("|".join(f"{f.func}@{Path(f.file).name or f.module}" for f in frames[:3]))
    blob = kind + "\0" + "\0".join(sorted(set(parts)))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _report(b: _Block) -> TsanReport:
    kind = _kind(b.title)
    stacks: list[TsanStack] = []
    threads: list[TsanThread] = []
    other: list[TsanSection] = []
    location_text = ""
    for header, frames in _sections(b.lines):
        th = _THREAD.search(header)
        title = header.rstrip(":")
        if header.startswith("Thread T") or header.startswith("Thread main"):
            threads.append(TsanThread(thread=header.split()[1], title=title))
        elif header.startswith("Location is"):
            location_text = title
            other.append(TsanSection(title=title, frames=frames[:8]))
        elif (
            _ACCESS.match(header)
            or header.startswith("Mutex M")
            and " acquired here" in header
            or b.deadly
            and frames
            and not stacks
        ):
            am = _ACCESS.match(header)
            stacks.append(
                TsanStack(
                    title=title if header else b.title,  # a deadly signal's stack has no header line
                    frames=frames,
                    thread=th.group("thread").removeprefix("thread ") if th else "",
                    access=am.group("access").lower() if am else "",
                    previous=bool(am and am.group("prev")),
                )
            )
        elif frames or header:
            other.append(TsanSection(title=title, frames=frames[:8]))
    location: TsanLocation | None = None
    sm = _SUMMARY_LOC.search(b.summary)
    if sm:
        location = TsanLocation(
            file=_PIP_BUILD_DIR.sub("", sm.group("file")), line=int(sm.group("line")), func=sm.group("func").strip()
        )
    elif mm := _SUMMARY_MOD.search(b.summary):
        location = TsanLocation(file=mm.group("file"), line=None, func=mm.group("func").strip())
    seen: set[str] = set()
    package_frames: list[TsanFrame] = []
    interpreter_frames: list[TsanFrame] = []
    for st in stacks:
        for fr in st.frames:
            key = frame_str(fr)
            if key in seen:
                continue
            seen.add(key)
            if fr.origin == "package":
                package_frames.append(fr)
            elif fr.origin == "interpreter":
                interpreter_frames.append(fr)
    top = package_frames[0] if package_frames else None
    text = "\n".join(b.lines)
    return TsanReport(
        kind=kind,
        title=b.title,
        pid=b.pid,
        deadly=b.deadly,
        summary=b.summary,
        location=location,
        location_text=location_text,
        stacks=tuple(stacks),
        threads=tuple(threads),
        other=tuple(other),
        package_frames=tuple(package_frames),
        interpreter_frames=tuple(interpreter_frames[:20]),
        top_package_frame=frame_str(top) if top else "",
        in_package=bool(package_frames),
        signature=_signature(kind, stacks),
        test_id=b.test_id,
        complete=b.complete,
        text=text[:MAX_TEXT],
    )


def parse_tsan(text: str) -> list[TsanReport]:
    """All reports in one TSan log, in order, each with the test that was running."""
    reports: list[TsanReport] = []
    current_test = ""
    block: _Block | None = None
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if line.startswith(MARKER):
            verb, _, nodeid = line[len(MARKER) :].partition(" ")
            if verb == "start":
                current_test = nodeid.strip()
            elif verb == "end" and nodeid.strip() == current_test:
                current_test = ""
            continue
        m = _WARNING.match(line) or _ERROR.match(line) or _FATAL.match(line)
        if m:
            if block is not None:
                reports.append(_report(block))
            pid = m.groupdict().get("pid")
            deadly = m.re is not _WARNING
            title = re.sub(r"\s*\(pc 0x[0-9a-f]+.*\)$", "", m.group("title"))
            block = _Block(title, int(pid) if pid else None, current_test, deadly)
            continue
        if block is None:
            continue
        sm = _SUMMARY.match(line)
        if sm:
            block.summary = sm.group("text")
            block.complete = True
            reports.append(_report(block))
            block = None
            continue
        if _SEPARATOR.match(line) or _ABORTING.match(line):
            if block.deadly and _ABORTING.match(line):
                block.complete = True
            if block.complete or _ABORTING.match(line):
                reports.append(_report(block))
                block = None
            continue
        if line.startswith("==") and block.deadly:
            continue  # "==N==The signal is caused by a READ memory access."
        block.lines.append(line)
    if block is not None:
        reports.append(_report(block))  # truncated log: keep what we have
    return reports


def tsan_logs(log_dir: Path, prefix: str = LOG_PREFIX) -> list[Path]:
    """The per-process TSan logs ``<prefix>.<pid>`` in ``log_dir``, oldest pid first."""
    if not log_dir.is_dir():
        return []
    found = [p for p in log_dir.iterdir() if p.name.startswith(prefix + ".") and p.is_file()]
    return sorted(found, key=lambda p: (len(p.name), p.name))


def parse_tsan_dir(log_dir: Path, prefix: str = LOG_PREFIX) -> list[TsanReport]:
    """Reports of every process's log in ``log_dir`` (unreadable files are logged and skipped)."""
    reports: list[TsanReport] = []
    for path in tsan_logs(log_dir, prefix):
        raw = read_regular(path, 64 * 1024 * 1024)  # a link package code planted is not followed
        if raw is None:
            log.warning("TSan log %s is not a regular file: skipped", path)
            continue
        text = raw.decode("utf-8", errors="replace")
        reports += [replace(r, log=path.name) for r in parse_tsan(text)]
    return reports


def dedup(reports: Iterable[TsanReport]) -> list[TsanReport]:
    """One entry per signature (first seen kept), with ``count`` and every ``test_ids``."""
    out: dict[str, TsanReport] = {}
    for r in reports:
        entry = out.get(r.signature)
        if entry is None:
            entry = replace(r, count=0, test_ids=())
        tids = [t for t in r.test_ids or (r.test_id,) if t and t not in entry.test_ids]
        out[r.signature] = replace(
            entry,
            count=entry.count + r.count,
            test_ids=entry.test_ids + tuple(dict.fromkeys(tids)),
            test_id=entry.test_id or r.test_id,
        )
    return list(out.values())


def excerpt(report: TsanReport, frames_per_stack: int = 8) -> str:
    """The two access stacks (or the deadly stack), trimmed, for a finding's evidence."""
    lines = [f"WARNING: ThreadSanitizer: {report.title}"]
    for st in report.stacks[:2]:
        lines.append(f"  {st.title}:")
        for fr in st.frames[:frames_per_stack]:
            mark = "*" if fr.origin == "package" else " "
            lines.append(f"   {mark}#{fr.n} {frame_str(fr)}")
        if len(st.frames) > frames_per_stack:
            lines.append(f"    ... {len(st.frames) - frames_per_stack} more frames")
    if report.location_text:
        lines.append(f"  {report.location_text}")
    if report.summary:
        lines.append(f"SUMMARY: ThreadSanitizer: {report.summary}")
    return "\n".join(lines)
