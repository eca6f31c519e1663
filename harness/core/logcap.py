"""A phase's log kept within ``log_bytes`` (harness.core.limits), the cut said in the log itself.

The command writes its log directly (a file the backend appends to); a suite that prints 100 MB
of passing tests, or package code that floods stdout, would otherwise make every later reader
(parsers, reports, CI uploads) pay for it.  When the command has ended, a log past the limit is
rewritten in place as its first and last halves with one line between that says how much was
cut; docker's own log (what reached the container's stdout past the shell's redirect) is read
as a stream and stops at the limit.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

from .limits import value
from .wsfs import open_beneath

CUT = "[ft-harness] log cut"


def cut_line(cut: int, limit: int) -> str:
    return (
        f"{CUT}: {cut} bytes in the middle not kept (limit log_bytes ({limit}) exceeded; "
        f"FT_HARNESS_LIMIT_LOG_BYTES raises it)"
    )


def cap_log(dirfd: int, rel: str) -> str:
    """Cut the log at ``rel`` below the workspace ``dirfd`` (reached through no link) to its head
    and tail when it is past ``log_bytes``; the line that says so, or "" when it was within."""
    limit = value("log_bytes")
    try:
        fd = open_beneath(dirfd, rel, os.O_RDWR | os.O_NONBLOCK)
    except (OSError, ValueError):
        return ""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size <= limit:
            return ""
        half = limit // 2
        keep = max(0, limit - half - 300)  # the cut line fits in the rest: the log ends within the limit
        tail = os.pread(fd, keep, st.st_size - keep)
        line = cut_line(st.st_size - half - len(tail), limit)
        data = f"\n{line}\n".encode() + tail
        os.pwrite(fd, data, half)
        os.ftruncate(fd, half + len(data))
        return line
    finally:
        os.close(fd)


def capped(chunks: Iterable[bytes]) -> bytes:
    """The bytes of a stream (docker's log) up to ``log_bytes``; past it, reading stops and a
    last line says so."""
    limit = value("log_bytes")
    out = bytearray()
    for chunk in chunks:
        room = limit - len(out)
        if len(chunk) > room:
            out += chunk[:room]
            out += (
                f"\n{CUT}: the rest not read (limit log_bytes ({limit}) exceeded; "
                "FT_HARNESS_LIMIT_LOG_BYTES raises it)\n"
            ).encode()
            break
        out += chunk
    return bytes(out)
