"""ThreadSanitizer logs -> report dicts (the values stored in ``Phase.tsan``).

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
from pathlib import Path
from typing import Any

from ..model import read_regular

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
_ACCESS = re.compile(
    r"^(?P<prev>Previous )?(?P<access>(?:atomic )?(?:read|write))\b", re.I
)
_SEPARATOR = re.compile(r"^={10,}\s*$")
_ABORTING = re.compile(r"^==\d+==ABORTING")

# Frames of the sanitizer runtime and the C library: neither the package's nor the interpreter's.
_RUNTIME_MODULE = re.compile(
    r"^(?:libtsan|libc[.-]|libc\.so|libpthread|ld-linux|ld-|libstdc\+\+|libgcc|libm[.-]|libdl)"
)
_RUNTIME_FILE = re.compile(r"(?:libsanitizer|compiler-rt|/tsan_[^/]*$|^\.\./sysdeps|/sysdeps/|^\./nptl|/nptl/)")
# CPython's own source tree: the python binary, libpython, and stdlib extension modules.
_PY_MODULE = re.compile(r"^(?:python(?:\d[\d.]*t?)?(?:-\w+)?|libpython\d[\d.]*t?\.so.*)$")
_PY_FILE = re.compile(
    r"(?:^|/)(?:\./)?(?:Objects|Python|Include|Parser|Programs|Modules)/[^/].*\.[ch]$"
)


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


def parse_frame(line: str) -> dict[str, Any] | None:
    """``    #1 func file.c:12:5 (module.so+0x1f)`` -> frame dict; None if not a frame line."""
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
    return {
        "n": int(m.group("n")),
        "func": func,
        "file": file,
        "line": lineno,
        "module": module,
        "origin": _origin(file, module),
    }


def frame_str(fr: dict[str, Any]) -> str:
    where = f"{fr['file']}:{fr['line']}" if fr.get("file") else fr.get("module", "")
    return f"{fr.get('func') or '??'} {where}".strip()


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


def _sections(lines: list[str]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Split a block's body into (header, frames) sections; headers end with ':'."""
    out: list[tuple[str, list[dict[str, Any]]]] = []
    header = ""
    frames: list[dict[str, Any]] = []
    for raw in lines:
        fr = parse_frame(raw)
        if fr is not None:
            frames.append(fr)
            continue
        text = raw.strip()
        if not text or text.startswith("Hint:"):
            continue
        if text.startswith("[failed to restore the stack]"):
            frames.append({"n": 0, "func": "", "file": "", "line": None, "module": "",
                           "origin": "unknown", "unrestored": True})
            continue
        if header or frames:
            out.append((header, frames))
        header, frames = text, []
    if header or frames:
        out.append((header, frames))
    return out


def _signature(kind: str, stacks: list[dict[str, Any]]) -> str:
    """Stable across runs: kind + top package (else interpreter) frames of each stack,
    without addresses, thread numbers or line numbers, order-independent."""
    parts = []
    for st in stacks:
        frames = [f for f in st["frames"] if f["origin"] == "package"]
        if not frames:
            frames = [f for f in st["frames"] if f["origin"] == "interpreter"]
        parts.append("|".join(f"{f['func']}@{Path(f['file']).name or f['module']}" for f in frames[:3]))
    blob = kind + "\0" + "\0".join(sorted(set(parts)))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _report(b: _Block) -> dict[str, Any]:
    kind = _kind(b.title)
    stacks: list[dict[str, Any]] = []
    threads: list[dict[str, Any]] = []
    other: list[dict[str, Any]] = []
    location_text = ""
    for header, frames in _sections(b.lines):
        th = _THREAD.search(header)
        entry: dict[str, Any] = {"title": header.rstrip(":"), "frames": frames}
        if header.startswith("Thread T") or header.startswith("Thread main"):
            entry["thread"] = header.split()[1]
            threads.append(entry)
        elif header.startswith("Location is"):
            location_text = header.rstrip(":")
            other.append(entry)
        elif (
            _ACCESS.match(header)
            or header.startswith("Mutex M") and " acquired here" in header
            or b.deadly and frames and not stacks
        ):
            am = _ACCESS.match(header)
            if not header:  # a deadly signal's stack has no header line
                entry["title"] = b.title
            entry["thread"] = th.group("thread").removeprefix("thread ") if th else ""
            entry["access"] = am.group("access").lower() if am else ""
            entry["previous"] = bool(am and am.group("prev"))
            stacks.append(entry)
        elif frames or header:
            other.append(entry)
    summary_loc: dict[str, Any] = {}
    sm = _SUMMARY_LOC.search(b.summary)
    if sm:
        summary_loc = {"file": _PIP_BUILD_DIR.sub("", sm.group("file")), "line": int(sm.group("line")),
                       "func": sm.group("func").strip()}
    elif mm := _SUMMARY_MOD.search(b.summary):
        summary_loc = {"file": mm.group("file"), "line": None, "func": mm.group("func").strip()}
    seen: set[str] = set()
    package_frames: list[dict[str, Any]] = []
    interpreter_frames: list[dict[str, Any]] = []
    for st in stacks:
        for fr in st["frames"]:
            key = frame_str(fr)
            if key in seen:
                continue
            seen.add(key)
            if fr["origin"] == "package":
                package_frames.append(fr)
            elif fr["origin"] == "interpreter":
                interpreter_frames.append(fr)
    top = package_frames[0] if package_frames else None
    text = "\n".join(b.lines)
    return {
        "kind": kind,
        "title": b.title,
        "pid": b.pid,
        "deadly": b.deadly,
        "summary": b.summary,
        "location": summary_loc,
        "location_text": location_text,
        "stacks": stacks,
        "threads": [{"thread": t["thread"], "title": t["title"]} for t in threads],
        "other": [{"title": o["title"], "frames": o["frames"][:8]} for o in other],
        "package_frames": package_frames,
        "interpreter_frames": interpreter_frames[:20],
        "top_package_frame": frame_str(top) if top else "",
        "in_package": bool(package_frames),
        "signature": _signature(kind, stacks),
        "test_id": b.test_id,
        "complete": b.complete,
        "text": text[:MAX_TEXT],
    }


def parse_tsan(text: str) -> list[dict[str, Any]]:
    """All reports in one TSan log, in order, each with the test that was running."""
    reports: list[dict[str, Any]] = []
    current_test = ""
    block: _Block | None = None
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if line.startswith(MARKER):
            verb, _, nodeid = line[len(MARKER):].partition(" ")
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


def parse_tsan_dir(log_dir: Path, prefix: str = LOG_PREFIX) -> list[dict[str, Any]]:
    """Reports of every process's log in ``log_dir`` (unreadable files are logged and skipped)."""
    reports: list[dict[str, Any]] = []
    for path in tsan_logs(log_dir, prefix):
        raw = read_regular(path, 64 * 1024 * 1024)  # a link package code planted is not followed
        if raw is None:
            log.warning("TSan log %s is not a regular file: skipped", path)
            continue
        text = raw.decode("utf-8", errors="replace")
        for r in parse_tsan(text):
            r["log"] = path.name
            reports.append(r)
    return reports


def dedup(reports: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per signature (first seen kept), with ``count`` and every ``test_ids``."""
    out: dict[str, dict[str, Any]] = {}
    for r in reports:
        sig = r.get("signature", "")
        if sig not in out:
            first = dict(r)
            first["count"] = 0
            first["test_ids"] = []
            out[sig] = first
        entry = out[sig]
        entry["count"] += int(r.get("count", 1))
        for tid in r.get("test_ids", [r.get("test_id", "")]):
            if tid and tid not in entry["test_ids"]:
                entry["test_ids"].append(tid)
        if not entry.get("test_id") and r.get("test_id"):
            entry["test_id"] = r["test_id"]
    return list(out.values())


def excerpt(report: dict[str, Any], frames_per_stack: int = 8) -> str:
    """The two access stacks (or the deadly stack), trimmed, for a finding's evidence."""
    lines = [f"WARNING: ThreadSanitizer: {report.get('title', report.get('kind', ''))}"]
    for st in report.get("stacks", [])[:2]:
        lines.append(f"  {st.get('title', '')}:")
        for fr in st.get("frames", [])[:frames_per_stack]:
            mark = "*" if fr.get("origin") == "package" else " "
            lines.append(f"   {mark}#{fr.get('n', 0)} {frame_str(fr)}")
        if len(st.get("frames", [])) > frames_per_stack:
            lines.append(f"    ... {len(st['frames']) - frames_per_stack} more frames")
    if report.get("location_text"):
        lines.append(f"  {report['location_text']}")
    if report.get("summary"):
        lines.append(f"SUMMARY: ThreadSanitizer: {report['summary']}")
    return "\n".join(lines)
