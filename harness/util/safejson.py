"""JSON that another process could have written (a result, a report, a manifest, a record of
resolved versions, a probe, a pip report), parsed without letting a number end the program.

``json.loads`` turns an integer of over 4,300 digits into a ValueError that is not a
JSONDecodeError (CPython's limit on int-string conversion), and one of fewer digits that still
no count, size or time can have (``10**4000``) raises later, where it is compared with a float
or printed (#56).  :func:`loads` refuses any integer of more than ``MAX_INT_DIGITS`` digits as
a :class:`NumberTooLong`, a ``json.JSONDecodeError`` with its line, so every reader that already
tells a file that is not JSON in one line tells this one too.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["MAX_INT_DIGITS", "NumberTooLong", "loads"]

MAX_INT_DIGITS = 20  # every 64-bit integer; the harness writes none longer than 19 digits


class NumberTooLong(json.JSONDecodeError):
    """An integer of more than ``MAX_INT_DIGITS`` digits (its ``msg`` says how many)."""


class _Refused(Exception):
    def __init__(self, text: str) -> None:
        self.text = text


def _int(s: str) -> int:
    if len(s.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(s)
    return int(s)


def _where(doc: str, number: str) -> int:
    """Where ``number`` stands as a value in ``doc`` (after ``:``, ``[``, ``,`` or at the start,
    not followed by more of a number); 0 when it cannot be found."""
    pat = rf"(?:^|(?<=[:\[,\s])){re.escape(number)}(?![0-9.eE])"
    m = re.search(pat, doc)
    return m.start() if m else 0


def loads(raw: str | bytes) -> Any:
    """``json.loads(raw)``, but an integer of more than ``MAX_INT_DIGITS`` digits is a
    NumberTooLong.  Everything else raises as ``json.loads`` does (UnicodeDecodeError,
    JSONDecodeError, RecursionError)."""
    doc = raw.decode("utf-8") if isinstance(raw, bytes | bytearray) else raw
    try:
        return json.loads(doc, parse_int=_int)
    except _Refused as e:
        digits = len(e.text.lstrip("-"))
        msg = f"an integer of {digits} digits (at most {MAX_INT_DIGITS})"
        raise NumberTooLong(msg, doc, _where(doc, e.text)) from None
