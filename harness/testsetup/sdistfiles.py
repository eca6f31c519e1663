"""The sdist's config files (pyproject.toml, setup.cfg, tox.ini, pytest.ini, PKG-INFO, ...), each
read once: ``SdistFiles`` holds what was read, and every reader of the suite setup
(harness.testsetup.infer, .deplookup, .reqlines, .pytestcfg, .recipeapply, .compiled) and the wheel store's
``static_requirements`` take it instead of opening the file again.

Regular files only, never through a link (package code may have run in the workspace),
at most MAX_CONFIG_BYTES; a parse error is a note, never an error.
"""

from __future__ import annotations

import configparser
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.limits import note, value
from ..util.safefiles import read_regular

MAX_CONFIG_BYTES = 4 * 1024 * 1024
# read when the value is made: the files at the top of the sdist its readers look at
TOP_FILES = ("pyproject.toml", "setup.cfg", "tox.ini", "pytest.ini", ".pytest.ini", "setup.py", "PKG-INFO")


def _read(p: Path) -> bytes | None:
    """The one place a config file of the sdist is opened (the test counting reads wraps it)."""
    return read_regular(p, MAX_CONFIG_BYTES)


def read_text(p: Path) -> str | None:
    """A file of the package's source: a regular file only, never through a link (package code
    may have run in the workspace), at most MAX_CONFIG_BYTES; None otherwise."""
    raw = read_regular(p, MAX_CONFIG_BYTES)
    return raw.decode("utf-8", errors="replace") if raw is not None else None


def nesting(text: str) -> int:
    """The deepest ``[``/``{`` nesting of a TOML or JSON text, strings and comments skipped
    (close enough to bound the parser's recursion: harness.core.limits' ``nesting``)."""
    depth = deepest = 0
    quote = ""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth = max(0, depth - 1)
        i += 1
    return deepest


def parse_toml(text: str | None, name: str, notes: list[str]) -> dict[str, Any]:
    """A TOML text ({} for none, or one that does not parse: a note says why)."""
    if text is None:
        return {}
    limit = value("nesting")
    if text.count("[") + text.count("{") > limit and nesting(text) > limit:
        notes.append(f"{name} not read: " + note("nesting", f"{name} nests deeper than {limit}"))
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        notes.append(f"{name} not read: {e}")
    except RecursionError:
        notes.append(f"{name} not read: " + note("nesting", f"{name} nests too deep to parse"))
    return {}


def parse_ini(text: str | None, name: str, notes: list[str]) -> configparser.ConfigParser | None:
    """An ini text (None for none, or one that does not parse: a note says why)."""
    if text is None:
        return None
    cp = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        cp.read_string(text, source=name)
    except (configparser.Error, ValueError) as e:
        notes.append(f"{name} not read: {(str(e).splitlines() or [type(e).__name__])[0][:300]}")
        return None
    return cp


def read_toml(p: Path, notes: list[str]) -> dict[str, Any]:
    return parse_toml(read_text(p), p.name, notes)


def read_ini(p: Path, notes: list[str]) -> configparser.ConfigParser | None:
    return parse_ini(read_text(p), p.name, notes)


@dataclass(frozen=True)
class SdistFiles:
    """The config files of the sdist at ``tree``, each read (and parsed) at most once: the top
    ones (TOP_FILES) when the value is made (``read``), one deeper (a tests dir's pytest.ini)
    when a reader first asks. Keyed by the path relative to the tree. The parsed tables are
    shared: readers must not change them."""

    tree: Path
    _raw: dict[str, bytes | None] = field(default_factory=dict, repr=False, compare=False)
    _parsed: dict[str, tuple[Any, tuple[str, ...]]] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def read(cls, tree: Path) -> SdistFiles:
        files = cls(Path(tree))
        for name in TOP_FILES:
            files.raw(name)
        return files

    def raw(self, rel: str) -> bytes | None:
        """The file's bytes (None: not a regular file of the tree)."""
        if rel not in self._raw:
            self._raw[rel] = _read(self.tree / rel)
        return self._raw[rel]

    def text(self, rel: str) -> str | None:
        raw = self.raw(rel)
        return raw.decode("utf-8", errors="replace") if raw is not None else None

    def _once(self, rel: str, kind: str, notes: list[str]) -> Any:
        """The parse of ``rel`` as ``kind``, made once; its notes are told to every reader."""
        key = f"{kind}:{rel}"
        if key not in self._parsed:
            said: list[str] = []
            name = Path(rel).name
            got = (parse_toml if kind == "toml" else parse_ini)(self.text(rel), name, said)
            self._parsed[key] = (got, tuple(said))
        got, said_once = self._parsed[key]
        notes.extend(said_once)
        return got

    def toml(self, rel: str, notes: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = self._once(rel, "toml", notes)
        return out

    def ini(self, rel: str, notes: list[str]) -> configparser.ConfigParser | None:
        out: configparser.ConfigParser | None = self._once(rel, "ini", notes)
        return out
