"""Every field of a frozen dataclass read back from JSON checked against its annotation (#46).

``from_dict`` builds a value from whatever the file holds: a phase whose ``excerpt`` is a number
or whose ``counts`` hold a list reads back fine and raises later, deep in the verdict rules or a
renderer.  A result from an earlier run, a shard's artifact or a cache is untrusted input, so
``problem`` walks the whole value once, against the annotations the dataclasses declare, and
names the first field of the wrong type: the file is then refused, never decided.
"""

from __future__ import annotations

import math
import types
import typing
from dataclasses import fields, is_dataclass
from typing import Any

MAX_DEPTH = 32  # a result's dataclasses nest a few levels deep


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _check(value: Any, tp: Any, where: str, depth: int) -> str:
    if depth > MAX_DEPTH:
        return f"{where}: nested too deeply"
    if tp is Any or tp is object:
        return ""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        if any(not _check(value, a, where, depth + 1) for a in args):
            return ""
        return f"{where}: {type(value).__name__} where {_name(tp)} is expected"
    if origin is typing.Literal:
        return "" if value in args else f"{where}: {str(value)[:40]!r} is not one of {args}"
    if origin in (tuple, list):
        if not isinstance(value, origin):
            return f"{where}: {type(value).__name__} where a {origin.__name__} is expected"
        item = args[0] if args else Any
        for i, x in enumerate(value):
            if p := _check(x, item, f"{where}[{i}]", depth + 1):
                return p
        return ""
    if origin is dict:
        if not isinstance(value, dict):
            return f"{where}: {type(value).__name__} where an object is expected"
        kt, vt = args or (Any, Any)
        for k, v in value.items():
            if (p := _check(k, kt, f"{where} key", depth + 1)) or (
                p := _check(v, vt, f"{where}[{str(k)[:40]!r}]", depth + 1)
            ):
                return p
        return ""
    if tp is type(None):
        return "" if value is None else f"{where}: {type(value).__name__} where null is expected"
    if isinstance(tp, type) and is_dataclass(tp):
        if not isinstance(value, tp):
            return f"{where}: {type(value).__name__} where a {tp.__name__} is expected"
        return problem(value, where, depth + 1)
    if tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        return "" if ok else f"{where}: {str(value)[:40]!r} is not a finite number"
    if tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return "" if ok else f"{where}: {type(value).__name__} where an integer is expected"
    if tp is bool:
        return "" if isinstance(value, bool) else f"{where}: {type(value).__name__} where true/false is expected"
    if isinstance(tp, type):
        return "" if isinstance(value, tp) else f"{where}: {type(value).__name__} where {tp.__name__} is expected"
    return ""  # an annotation this checker does not know: not checked


def _name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def problem(value: Any, where: str = "", depth: int = 0) -> str:
    """'' when every field of the dataclass ``value`` (recursively) has its annotated type, else
    the first field that does not, named by its path (``phases[2].excerpt: int where str ...``)."""
    if depth > MAX_DEPTH:
        return f"{where}: nested too deeply"
    hints = _hints(type(value))
    for f in fields(value):
        name = f"{where}.{f.name}" if where else f.name
        if p := _check(getattr(value, f.name), hints[f.name], name, depth):
            return p
    return ""
