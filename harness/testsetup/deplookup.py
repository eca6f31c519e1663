"""Where an sdist declares its test deps (steps 2 and 2b of harness.testsetup.infer; pure).

The sources are looked up in harness.testsetup.infer's order -- dependency groups, the
project's extras, setup.cfg's extras, requirements files, tox.ini, PKG-INFO's extras -- the first that declares a
``test``/``tests``/``testing`` (then ``dev``) group wins, whole; every requirement any of them
declares is kept for step 2b, the modules a conftest imports.  harness.testsetup.reqlines reads
the lines and filters them for the target.
"""

from __future__ import annotations

import configparser
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ..util.pkginfo import parse_pkg_info
from .conftests import third_party_imports
from .reqlines import HARNESS_PINS, cfg_list, cfg_value, filter_reqs, req_file, req_lines, strings, table, tox_value
from .sdistfiles import SdistFiles

TEST_NAMES = ("test", "tests", "testing")
DEV_NAMES = ("dev",)
REQ_PATTERNS = ("requirements-test*.txt", "test-requirements.txt", "requirements/test*.txt", "tests/requirements*.txt")


Lookup = Callable[[str], "tuple[str, list[str]] | None"]  # name -> (label, raw lines) or None


def find_deps(
    src: Path, files: SdistFiles, dist: str, env: Mapping[str, str], notes: list[str]
) -> tuple[tuple[str, ...], dict[str, tuple[str, str]]]:
    """The test deps (step 2), and every requirement any group or extra declares: canonical
    name -> (where, the line), the first one seen (step 2b looks there)."""
    pyproject = files.toml("pyproject.toml", notes)
    setup_cfg = files.ini("setup.cfg", notes)
    tox = files.ini("tox.ini", notes)
    groups = _groups(pyproject, notes)
    extras = _cfg_extras(setup_cfg, notes)
    project = table(pyproject, "project", notes)
    pyextras: dict[str, list[str]] = {
        canonicalize_name(k): strings(v, f"[project.optional-dependencies] {k}", notes)
        for k, v in table(project, "optional-dependencies", notes, "project.").items()
    }
    pkginfo = pkginfo_extras(files.raw("PKG-INFO"), env)
    declared = _declared(project, setup_cfg, groups, pyextras, extras, pkginfo, notes)
    lookups: list[Lookup] = [
        _group_of(groups, notes),
        _extra_of(pyextras, "[project.optional-dependencies]"),
        _extra_of(extras, "setup.cfg extras_require"),
        lambda name: _reqfiles(src, name, notes),
        lambda name: _toxdeps(src, dist, tox, name, notes),
        _extra_of(pkginfo, "PKG-INFO extra"),  # setup.py's extras_require, as the sdist's build wrote it
    ]
    for names in (TEST_NAMES, DEV_NAMES):
        for look in lookups:
            for name in names:
                hit = look(name)
                if hit is not None:
                    label, lines = hit
                    notes.append(f"test deps from {label}")
                    return filter_reqs(lines, dist, {**pkginfo, **extras, **pyextras}, env, notes), declared
    notes.append("test deps: none declared")
    return (), declared


def pkginfo_extras(raw: bytes | None, env: Mapping[str, str]) -> dict[str, list[str]]:
    """PKG-INFO's extras: canonical name -> its ``Requires-Dist`` lines (``psleak; extra ==
    "test"``), each without its marker, which is evaluated here for the target (a line whose
    marker is false there is left out). The only static form of a ``setup.py``'s
    ``extras_require``: psutil 7.2.2 declares its test deps (psleak, which
    tests/test_memleaks.py imports) nowhere else."""
    msg = parse_pkg_info(raw)
    if msg is None:
        return {}
    out: dict[str, list[str]] = {}
    for extra in (str(e).strip() for e in msg.get_all("Provides-Extra") or ()):
        lines = []
        for line in msg.get_all("Requires-Dist") or ():
            try:
                req = Requirement(str(line))
                if req.marker is None:
                    continue
                inside = req.marker.evaluate({**env, "extra": extra})
                outside = req.marker.evaluate({**env, "extra": ""})
            except (InvalidRequirement, InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
                continue
            if inside and not outside:
                req.marker = None
                lines.append(str(req))
        out.setdefault(canonicalize_name(extra), lines)
    return out


def _groups(pyproject: Mapping[str, Any], notes: list[str]) -> dict[str, Any]:
    """pyproject.toml's [dependency-groups]: canonical name -> its list (what is not a list is
    named in ``notes`` and left out)."""
    groups: dict[str, Any] = {}
    for k, v in table(pyproject, "dependency-groups", notes).items():
        if isinstance(v, list):  # its items are checked where they are read (_group_lines)
            groups[canonicalize_name(k)] = v
        else:
            notes.append(f"pyproject.toml [dependency-groups] {k}: not a list ({type(v).__name__}), ignored")
    return groups


def _cfg_extras(setup_cfg: configparser.ConfigParser | None, notes: list[str]) -> dict[str, list[str]]:
    """setup.cfg's [options.extras_require]: canonical name -> its requirement lines."""
    extras: dict[str, list[str]] = {}
    if setup_cfg is not None and setup_cfg.has_section("options.extras_require"):
        for k in setup_cfg["options.extras_require"]:
            v = cfg_value(setup_cfg, "options.extras_require", k, notes)
            extras.setdefault(canonicalize_name(k), cfg_list(v))
    return extras


def _declared(
    project: Mapping[str, Any],
    setup_cfg: configparser.ConfigParser | None,
    groups: dict[str, Any],
    pyextras: dict[str, list[str]],
    extras: dict[str, list[str]],
    pkginfo: dict[str, list[str]],
    notes: list[str],
) -> dict[str, tuple[str, str]]:
    """Every requirement the runtime deps, a group or an extra declares: canonical name ->
    (where, the line), the first one seen."""
    runtime = strings(project.get("dependencies", []), "[project] dependencies", notes)
    if setup_cfg is not None and setup_cfg.has_section("options"):
        runtime += cfg_list(setup_cfg["options"].get("install_requires", ""))
    everywhere = [(RUNTIME, runtime)]
    everywhere += [(f"[dependency-groups] {g}", _group_lines(groups, g, set(), [])) for g in groups]
    everywhere += [(f"[project.optional-dependencies] {e}", v) for e, v in pyextras.items()]
    everywhere += [(f"setup.cfg extras_require {e}", v) for e, v in extras.items()]
    everywhere += [(f"PKG-INFO extra {e}", v) for e, v in pkginfo.items()]
    declared: dict[str, tuple[str, str]] = {}
    for label, lines in everywhere:
        for line in lines:
            try:
                declared.setdefault(canonicalize_name(Requirement(line).name), (label, line))
            except InvalidRequirement:
                continue
    return declared


def _group_of(groups: dict[str, Any], notes: list[str]) -> Lookup:
    def group(name: str) -> tuple[str, list[str]] | None:
        if name not in groups:
            return None
        return f"[dependency-groups] {name}", _group_lines(groups, name, set(), notes)

    return group


def _extra_of(found: dict[str, list[str]], label: str) -> Lookup:
    return lambda name: (f"{label} {name}", found[name]) if name in found else None


def _reqfiles(src: Path, name: str, notes: list[str]) -> tuple[str, list[str]] | None:
    """The first requirements file of REQ_PATTERNS (its ``-ft`` variant when there is one)."""
    if name != TEST_NAMES[0]:  # one lookup, in the first pass
        return None
    for pattern in REQ_PATTERNS:
        found = sorted(src.glob(pattern), key=lambda p: (len(p.name), p.name))
        for f in found:
            if f.is_file():
                ft = f.with_name(f"{f.stem}-ft{f.suffix}")  # aiohttp's test-ft.txt
                if ft.is_file() and not ft.is_symlink():
                    f = ft
                    notes.append(
                        f"{f.relative_to(src)}: the free-threaded variant of "
                        f"{f.relative_to(src).parent / (f.stem[:-3] + f.suffix)}"
                    )
                return f"{f.relative_to(src)}", req_file(src, f, set(), notes)
    return None


def _toxdeps(
    src: Path, dist: str, tox: configparser.ConfigParser | None, name: str, notes: list[str]
) -> tuple[str, list[str]] | None:
    """tox.ini's [testenv] deps (``-r`` files read) and extras."""
    if name != TEST_NAMES[0] or tox is None or not tox.has_section("testenv"):
        return None
    deps = tox_value(tox, "testenv", "deps", notes)
    lines = []
    for line in req_lines(deps):
        if line.startswith("-r"):
            path = line[2:].strip().replace("{toxinidir}/", "").replace("{/}", "/")  # {/}: os.sep
            lines += req_file(src, src / path, set(), notes)
        else:
            lines.append(line)
    for ex in re.split(r"[\s,]+", tox["testenv"].get("extras", "")):
        if ex:
            lines.append(f"{dist}[{ex}]")
    return "tox.ini [testenv] deps", lines


RUNTIME = "[project] dependencies"  # installed with the package: never a test dep to add
# a module a conftest imports -> the distribution that provides it, where the names differ
MODULE_DISTS = {
    "yaml": "pyyaml",
    "dateutil": "python-dateutil",
    "OpenSSL": "pyopenssl",
    "attr": "attrs",
    "PIL": "pillow",
    "jwt": "pyjwt",
    "dotenv": "python-dotenv",
    "bs4": "beautifulsoup4",
    "zmq": "pyzmq",
    "serial": "pyserial",
    "Crypto": "pycryptodome",
    "sklearn": "scikit-learn",
    "_pytest": "pytest",
}


def conftest_deps(
    src: Path,
    tests: str,
    dist: str,
    reqs: tuple[str, ...],
    declared: Mapping[str, tuple[str, str]],
    env: Mapping[str, str],
    notes: list[str],
) -> tuple[str, ...]:
    """Step 2b: a module a conftest imports unconditionally that the test deps leave out, when
    the sdist declares its distribution in another group or extra (urllib3's ``trustme``, in
    ``[dependency-groups] dev``). One not declared anywhere is left to the run, whose
    ``setup-error`` finding names it with the fix."""
    have: set[str] = {canonicalize_name(Requirement(r).name) for r in reqs}
    have |= HARNESS_PINS | {canonicalize_name(dist)}
    out: list[str] = []
    for mod, at in third_party_imports(src, tests, notes).items():
        name = canonicalize_name(MODULE_DISTS.get(mod, mod))
        if name in have or name not in declared or declared[name][0] == RUNTIME:
            continue  # installed with the package, or not declared: the run will say
        label, line = declared[name]
        got = filter_reqs([line], dist, {}, env, notes)
        if got:
            have.add(name)
            out += got
            notes.append(f"{got[0]} from {label}: {at} imports {mod}")
    return tuple(out)


def _group_lines(groups: dict[str, Any], name: str, seen: set[str], notes: list[str]) -> list[str]:
    if name in seen:
        notes.append(f"include-group cycle at {name!r} cut")
        return []
    seen.add(name)
    out = []
    for item in groups.get(name, []):
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and isinstance(item.get("include-group"), str):
            inc = canonicalize_name(item["include-group"])
            if inc not in groups:
                notes.append(f"include-group {inc!r} of {name!r} does not exist")
                continue
            out += _group_lines(groups, inc, seen, notes)
        else:
            notes.append(
                f"[dependency-groups] {name}: an item that is neither a requirement nor "
                f"an include-group ({type(item).__name__}), ignored"
            )
    return out
