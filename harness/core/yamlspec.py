"""The YAML node walker under matrix.yaml: every error names the file, the line and the key.

A document is composed into nodes (which keep their marks), not loaded into plain values, so a
helper can say ``matrix.yaml:14: packages[2].threads must be a positive integer, got 'four'``
or ``unknown key 'iteration' in settings (did you mean 'iterations'?)`` instead of a traceback.
``where`` is the dotted path of the node (``packages[2].threads``); each helper checks one
shape and returns the plain value.  What a matrix *means* is harness.config.matrix.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError

PROJECT_NAME_RE = re.compile(r"^([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9])$")  # PEP 508
MAX_NAME = 100  # a job id and its directories are built from it
ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# matrix.yaml's rules for names and numbers; upper bounds that catch a typo (threads: 1000000000) before it becomes a run
LIMITS = {
    "threads": 256,
    "iterations": 10_000,
    "repeat": 1000,
    "test_timeout": 86_400,
    "job_timeout": 7 * 86_400,
    "install_timeout": 7 * 86_400,
    "confirm_budget": 86_400,
}


def compose(text: str, file: str) -> yaml.Node | None:
    """The document's root node (None for an empty one); a tab or a syntax error is a
    ConfigError at its line."""
    if "\t" in text:
        lineno = text[: text.index("\t")].count("\n") + 1
        raise ConfigError("a tab character; YAML indents with spaces only", file=file, line=lineno)
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except RecursionError:
        raise ConfigError("the YAML is nested too deeply to be a matrix", file=file, line=1) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else 1
        raise ConfigError(f"YAML syntax error: {e.problem or e.context}", file=file, line=line) from None
    except yaml.YAMLError as e:
        raise ConfigError(f"YAML error: {e}", file=file, line=1) from None


class Ctx:
    def __init__(self, file: str):
        self.file = file

    def fail(self, node: yaml.Node | None, msg: str) -> ConfigError:
        line = node.start_mark.line + 1 if node is not None else 1
        return ConfigError(msg, file=self.file, line=line)


def suggest(word: str, options: list[str]) -> str:
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else f" (expected one of: {', '.join(options)})"


def mapping(ctx: Ctx, node: yaml.Node, where: str, allowed: list[str]) -> dict[str, yaml.Node]:
    if not isinstance(node, yaml.MappingNode):
        raise ctx.fail(node, f"{where} must be a mapping, got {kind(node)}")
    out: dict[str, yaml.Node] = {}
    for knode, vnode in node.value:
        key = knode.value if isinstance(knode, yaml.ScalarNode) else None
        if not isinstance(key, str):
            raise ctx.fail(knode, f"{where} has a key that is not a string")
        if key not in allowed:
            prefix = f"{where}" if where != "top level" else "the top level"
            raise ctx.fail(knode, f"unknown key '{key}' in {prefix}{suggest(key, allowed)}")
        if key in out:
            raise ctx.fail(knode, f"{join(where, key)} is given twice")
        out[key] = vnode
    return out


def join(where: str, key: str) -> str:
    return key if where == "top level" else f"{where}.{key}"


def kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if node.tag.endswith(":null"):
        return "nothing"
    value = yaml.safe_load(yaml.serialize(node))
    return repr(value) if isinstance(value, str) else str(value)


def scalar(ctx: Ctx, node: yaml.Node, where: str) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        raise ctx.fail(node, f"{where} must be a single value, got {kind(node)}")
    return yaml.safe_load(yaml.serialize(node))


def string(ctx: Ctx, node: yaml.Node, where: str, *, empty_ok: bool = False) -> str:
    value = scalar(ctx, node, where)
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
        raise ctx.fail(node, f"{where} must be a string, got {kind(node)}")
    text = str(value)
    if not empty_ok and not text.strip():
        raise ctx.fail(node, f"{where} must not be empty")
    return text


def choice(ctx: Ctx, node: yaml.Node, where: str, options: tuple[str, ...]) -> str:
    """One of ``options``: ``runner: tox``, ``fallback_wheel: keep``."""
    text = string(ctx, node, where)
    if text not in options:
        raise ctx.fail(node, f"{where} must be one of {', '.join(options)}, got {text!r}{suggest(text, list(options))}")
    return text


def flag(ctx: Ctx, node: yaml.Node, where: str) -> bool:
    """``true`` or ``false``: ``wheel_store: false``, ``extensions_only: true``."""
    value = scalar(ctx, node, where)
    if not isinstance(value, bool):
        raise ctx.fail(node, f"{where} must be true or false, got {kind(node)}")
    return value


def pos_int(ctx: Ctx, node: yaml.Node, where: str) -> int:
    value = scalar(ctx, node, where)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ctx.fail(node, f"{where} must be a positive integer, got {kind(node)}")
    return value


def seq(ctx: Ctx, node: yaml.Node, where: str) -> list[yaml.Node]:
    if not isinstance(node, yaml.SequenceNode):
        raise ctx.fail(node, f"{where} must be a list, got {kind(node)}")
    return list(node.value)


def strings(ctx: Ctx, node: yaml.Node, where: str) -> tuple[str, ...]:
    return tuple(string(ctx, n, f"{where}[{i}]") for i, n in enumerate(seq(ctx, node, where)))


def mapping_any(ctx: Ctx, node: yaml.Node, where: str) -> dict[str, yaml.Node]:
    if not isinstance(node, yaml.MappingNode):
        raise ctx.fail(node, f"{where} must be a mapping, got {kind(node)}")
    out = {}
    for kn, vn in node.value:
        key = string(ctx, kn, f"{where} key")
        if key in out:
            raise ctx.fail(kn, f"{where}.{key} is given twice")
        out[key] = vn
    return out


def each(
    ctx: Ctx, node: yaml.Node, where: str, build: Callable[[Ctx, yaml.Node, str, Path], Any], base: Path
) -> list[tuple[yaml.Node, Any]]:
    items = seq(ctx, node, where)
    if not items:
        raise ctx.fail(node, f"{where} must list at least one entry")
    return [(n, build(ctx, n, f"{where}[{i}]", base)) for i, n in enumerate(items)]


def existing(ctx: Ctx, node: yaml.Node, where: str, base: Path, text: str) -> str:
    """``text`` (what the node says) as an absolute path under ``base``, which must exist."""
    if "\x00" in text:
        raise ctx.fail(node, f"{where} contains a NUL character")
    p = (base / text).resolve()
    if p == Path(p.anchor) or p == Path.home():
        raise ctx.fail(
            node,
            f"{where} names {text!r}, the filesystem root or the home directory: "
            "point it at the package's own source tree",
        )
    if not p.exists():
        raise ctx.fail(node, f"{where} names {text!r}, which does not exist (relative to {base})")
    return str(p)
