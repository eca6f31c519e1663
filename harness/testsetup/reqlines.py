"""Requirement lines as the sdist's files give them, and the ones the target installs (pure).

Shared by step 2 of harness.testsetup.infer (the test deps, harness.testsetup.deplookup) and a
community recipe's install command (harness.testsetup.recipeapply): the readers of requirements
files (``-r`` followed inside the sdist), tox.ini values (``{[section]key}`` substituted),
setup.cfg values (``%(key)s`` interpolated) and the project's extras, every chain and
substitution bounded by a named limit (harness.core.limits); and the filter that drops the
package itself, the harness's pinned tools, coverage tools and requirements whose marker is
false for the target interpreter.
"""

from __future__ import annotations

import configparser
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ..core import limits
from .sdistfiles import SdistFiles, read_text

HARNESS_PINS = {"pytest", "pytest-xdist", "pytest-timeout", "pytest-run-parallel"}
COVERAGE = {"coverage", "pytest-cov", "covdefaults", "coverage-enable-subprocess"}

# pip's per-requirement options (pip-compile / uv `--generate-hashes` output): not the requirement
_REQ_OPTION_RE = re.compile(r"\s+--(?:hash|config-settings|global-option)(?:=|\s+)\S+")


def req_lines(text: str) -> list[str]:
    """Requirement lines: comments dropped, backslash continuations joined, pip's per-requirement
    options (``--hash=sha256:...``) dropped."""
    out, cur = [], ""
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        line, cur = _REQ_OPTION_RE.sub("", " " + cur + line).strip(), ""
        if line:
            out.append(line)
    return out


def cfg_list(value: str) -> list[str]:
    """A setup.cfg requirements value as setuptools reads it: one a line, or, on a single line,
    separated by semicolons (deprecated, still accepted: stack_data's ``tests = pytest;
    typeguard; pygments``)."""
    if "\n" in value.strip():
        return req_lines(value)
    return [c.strip() for c in value.split(";") if c.strip() and not c.strip().startswith("#")]


def table(d: Mapping[str, Any], key: str, notes: list[str], where: str = "") -> dict[str, Any]:
    """``d[key]`` when it is a table (a dict), else {} with a note (pyproject.toml is the
    package's: ``dependency-groups = "x"`` is a note, not an AttributeError)."""
    v = d.get(key, {})
    if isinstance(v, dict):
        return v
    notes.append(f"pyproject.toml [{where}{key}]: not a table ({type(v).__name__}), ignored")
    return {}


def strings(v: Any, where: str, notes: list[str]) -> list[str]:
    """``v`` when it is a list of strings; the strings of it with a note otherwise."""
    if not isinstance(v, list):
        notes.append(f"pyproject.toml {where}: not a list ({type(v).__name__}), ignored")
        return []
    out = [x for x in v if isinstance(x, str)]
    if len(out) != len(v):
        notes.append(f"pyproject.toml {where}: {len(v) - len(out)} item(s) not a string, ignored")
    return out


def _note_once(notes: list[str], note: str) -> None:
    if note not in notes:
        notes.append(note)


def req_file(src: Path, f: Path, seen: set[Path], notes: list[str], depth: int = 0) -> list[str]:
    """The requirement lines of ``f`` and of the files it ``-r``-includes, inside the sdist, at
    most ``requirements_depth`` deep and ``requirements_files`` in all (harness.core.limits)."""
    root = src.resolve()
    try:
        f = f.resolve()
        shown = os.path.relpath(f, root)
    except (OSError, RuntimeError, ValueError) as e:  # a link loop, a name too long
        notes.append(f"requirements file {str(f)[:200]} skipped: {e}")
        return []
    text = read_text(f) if f.is_relative_to(root) else None
    if text is None:
        notes.append(f"requirements file {shown} skipped: not in the sdist")
        return []
    if f in seen:
        return []
    if depth >= limits.value("requirements_depth"):
        _note_once(notes, limits.note("requirements_depth", f"-r chain reaches {shown}"))
        return []
    if len(seen) >= limits.value("requirements_files"):
        _note_once(notes, limits.note("requirements_files", f"-r chain reaches {shown}"))
        return []
    seen.add(f)
    out = []
    for line in req_lines(text):
        if line.startswith(("-r", "--requirement")):
            inc = line.split(None, 1)[1] if " " in line else line[2:]
            out += req_file(src, f.parent / inc.strip().lstrip("="), seen, notes, depth + 1)
        elif line.startswith(("-c", "--constraint", "-e", "--editable", "-")) or line == ".":
            notes.append(f"{shown}: {line!r} skipped")
        else:
            out.append(line)
    return out


def tox_value(
    tox: configparser.ConfigParser,
    section: str,
    key: str,
    notes: list[str],
    depth: int = 0,
    budget: list[int] | None = None,
) -> str:
    """A tox.ini value with its ``{[section]key}`` substitutions made, at most 5 deep, at most
    ``tox_expansions`` of them and ``tox_value_bytes`` read in all (harness.core.limits: an 841-byte
    tox.ini that refers to itself took 84 s here before)."""
    if budget is None:
        budget = [limits.value("tox_expansions"), limits.value("tox_value_bytes")]
    value = tox[section].get(key, "") if tox.has_section(section) else ""
    budget[1] -= len(value)
    if budget[1] < 0:
        _note_once(notes, limits.note("tox_value_bytes", f"tox.ini [{section}] {key}"))
        return ""

    def sub(m: re.Match[str]) -> str:
        sec, k = m.group(1), m.group(2)
        if depth > 5 or not tox.has_section(sec):
            _note_once(notes, f"tox.ini: {m.group(0)[:200]} not resolved")
            return ""
        budget[0] -= 1
        if budget[0] < 0 or budget[1] < 0:
            _note_once(
                notes,
                limits.note("tox_expansions", f"tox.ini [{section}] {key}")
                if budget[0] < 0
                else limits.note("tox_value_bytes", f"tox.ini [{section}] {key}"),
            )
            return ""
        return tox_value(tox, sec, k, notes, depth + 1, budget)

    return re.sub(r"\{\[([^\]]+)\]([^}]+)\}", sub, value)


def cfg_value(
    cp: configparser.ConfigParser,
    section: str,
    key: str,
    notes: list[str],
    depth: int = 0,
    budget: list[int] | None = None,
) -> str:
    """A setup.cfg value with the ``%(key)s`` interpolation setuptools' ConfigParser makes
    (geopy's ``dev = %(dev-test)s ...``): keys of the same section, 10 deep as ConfigParser,
    within the tox_expansions / tox_value_bytes budget (a value naming another many times)."""
    if budget is None:
        budget = [limits.value("tox_expansions"), limits.value("tox_value_bytes")]
    value = cp[section].get(key, "") if cp.has_section(section) else ""
    budget[1] -= len(value)

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "%%":
            return "%"
        k = m.group(1).lower()
        budget[0] -= 1
        if depth >= 10 or k not in cp[section] or budget[0] < 0 or budget[1] < 0:
            _note_once(
                notes,
                f"setup.cfg [{section}] {key}: {m.group(0)[:100]} not resolved"
                if budget[0] >= 0 and budget[1] >= 0
                else limits.note(
                    "tox_expansions" if budget[0] < 0 else "tox_value_bytes", f"setup.cfg [{section}] {key}"
                ),
            )
            return ""
        return cfg_value(cp, section, k, notes, depth + 1, budget)

    return re.sub(r"%%|%\(([^)]+)\)s", sub, value) if budget[1] >= 0 else ""


def filter_reqs(
    lines: Iterable[str], dist: str, extras: dict[str, list[str]], env: Mapping[str, str], notes: list[str]
) -> tuple[str, ...]:
    me = canonicalize_name(dist)
    out: list[str] = []
    dropped: list[str] = []
    todo = list(lines)
    seen_extras: set[str] = set()
    while todo:
        line = todo.pop(0)
        editable = re.match(r"^(?:-e|--editable)(?:\s+|=)?(\.(?:\[.*\])?)$", line)
        if editable:  # tox's `-e .[dev]` (pytokens, gql): the package itself, with the extra
            line = editable.group(1)
        if line == "." or line.startswith(".["):  # the package itself, maybe with extras
            line = f"{dist}{line[1:]}"
        if "{" in line or re.match(r"^[\w.,{}!-]+:\s", line):  # passlib's `!py33-!py34: rednose`
            notes.append(f"{line!r} skipped: tox substitution or factor")
            continue
        try:
            req = Requirement(line)
        except InvalidRequirement:
            notes.append(f"{line!r} skipped: not a requirement")
            continue
        name = canonicalize_name(req.name)
        if req.marker is not None and not _marker_true(req.marker, env):
            dropped.append(str(req))
            continue
        if name == me:
            for ex in sorted(canonicalize_name(e) for e in req.extras):
                if ex not in seen_extras and ex in extras:
                    seen_extras.add(ex)
                    todo += extras[ex]
                elif ex not in extras:  # gql's -e.[test]: its extras live in setup.py, not read
                    _note_once(notes, f"{dist}[{ex}]: no extra {ex!r} in pyproject.toml or setup.cfg")
            continue
        if name in HARNESS_PINS or name in COVERAGE:
            continue
        text = str(req)
        if text not in out:
            out.append(text)
    if dropped:
        notes.append("marker false for the target, not installed: " + ", ".join(dropped))
    return tuple(out)


def _marker_true(marker: Marker, env: Mapping[str, str]) -> bool:
    try:
        return marker.evaluate(dict(env))
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return True


def project_extras(files: SdistFiles, notes: list[str]) -> dict[str, list[str]]:
    """The project's extras as pyproject.toml and setup.cfg declare them (setup.py is never run)."""
    extras: dict[str, list[str]] = {}
    cfg = files.ini("setup.cfg", notes)
    if cfg is not None and cfg.has_section("options.extras_require"):
        for k in cfg["options.extras_require"]:
            extras[canonicalize_name(k)] = cfg_list(cfg_value(cfg, "options.extras_require", k, notes))
    project = table(files.toml("pyproject.toml", notes), "project", notes)
    for k, v in table(project, "optional-dependencies", notes, "project.").items():
        extras[canonicalize_name(k)] = strings(v, f"[project.optional-dependencies] {k}", notes)
    return extras
