"""``reported.yaml``: the findings a user has filed upstream, kept by hand (issue #57).

One mapping, a finding's id (findings.json's ``id``: 16 hex digits) to the upstream issue's
https URL::

    # the findings we filed
    3f2a9c0d1e4b5a67: https://github.com/example/six/issues/412

Read once, at the edge, before any work: anything else is one line naming the file, the line,
what is wrong and the fix (a ConfigError, exit 2).  An id that names no finding of the report is
not an error (the finding may be gone, or the file shared between matrices): the report command
says so in a warning line (harness.results.feed.build returns those ids).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..core.errors import ConfigError
from ..core.yamlspec import compose
from .feed import ID_RE, https_url

MAX_BYTES = 4 << 20  # a hand-kept list of links: a few KB


@dataclass(frozen=True, kw_only=True)
class Reported:
    """reported.yaml as read: id -> URL, and the line each id is on (for warnings)."""

    file: str = ""
    links: dict[str, str] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)


def _text(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ConfigError(
            "no such file (write one: `<finding id>: https://<the upstream issue>` a line)", file=str(path)
        ) from None
    except OSError as e:
        raise ConfigError(f"cannot read it: {e.strerror}", file=str(path)) from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError("not a regular file (a directory, FIFO or device?)", file=str(path))
        raw = f.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise ConfigError(f"larger than {MAX_BYTES >> 20} MiB; it holds one line per filed finding", file=str(path))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"not UTF-8 (byte {e.start})", file=str(path)) from None


def load(path: Path) -> Reported:
    """reported.yaml checked: a ConfigError (one line, exit 2) at its first problem."""
    file = str(path)
    root = compose(_text(Path(path)), file)
    if root is None:
        return Reported(file=file)

    def fail(node: yaml.Node, msg: str) -> ConfigError:
        return ConfigError(msg, file=file, line=node.start_mark.line + 1)

    if not isinstance(root, yaml.MappingNode):
        raise fail(root, "the top level must be a mapping of finding id to issue URL (`<id>: https://...`)")
    links: dict[str, str] = {}
    lines: dict[str, int] = {}
    for knode, vnode in root.value:
        key = knode.value if isinstance(knode, yaml.ScalarNode) else None
        if not isinstance(key, str) or not ID_RE.match(key):
            shown = repr(key)[:40] if isinstance(key, str) else "a key that is not text"
            raise fail(knode, f"{shown} is not a finding id: copy the 16 hex digits of its `id` in findings.json")
        if key in links:
            raise fail(knode, f"{key}: listed twice (first on line {lines[key]}); keep one line per finding")
        value = vnode.value if isinstance(vnode, yaml.ScalarNode) and vnode.tag.endswith(":str") else None
        if not isinstance(value, str) or not https_url(value):
            got = repr(value)[:80] if isinstance(value, str) else "no URL" if _empty(vnode) else "not a URL"
            raise fail(
                vnode,
                f"{key}: the upstream issue must be an https:// URL, got {got} (e.g. https://github.com/OWNER/REPO/issues/N)",
            )
        links[key] = value
        lines[key] = knode.start_mark.line + 1
    return Reported(file=file, links=links, lines=lines)


def _empty(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.value in ("", "~", "null", "Null", "NULL")


def warnings(reported: Reported, unplaced: list[str]) -> list[str]:
    """A warning line per id of reported.yaml that names no finding of the report."""
    return [
        f"{reported.file}:{reported.lines.get(rid, 1)}: warning: {rid} names no finding of this report "
        "(gone, or of another matrix); left out of findings.json"
        for rid in unplaced
    ]
