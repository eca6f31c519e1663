"""An sdist's PKG-INFO (core metadata, RFC 822 headers), read as text: never executed."""

from __future__ import annotations

from email.message import Message
from email.parser import HeaderParser

MAX_CHARS = 1_000_000  # what of it is parsed


def parse_pkg_info(raw: bytes | None) -> Message | None:
    """Its headers (``Metadata-Version``, ``Requires-Dist``, ``Provides-Extra``, ...); None when
    there is none or it is not UTF-8."""
    if raw is None:
        return None
    try:
        return HeaderParser().parsestr(raw.decode("utf-8")[:MAX_CHARS])
    except UnicodeDecodeError:
        return None
