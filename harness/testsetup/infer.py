"""A package's test setup, inferred from its sdist (pure: files in, an Inferred out, no network).

Used when a matrix entry does not say ``tests``/``test_requires``/``pytest_args`` itself.  The
order is fixed and every decision is recorded in ``Inferred.sources`` as text:

1. **tests dir** (harness.testsetup.testdirs): the first that exists of ``tests/``, ``test/``, ``testing/``,
   ``src/<pkg>/tests``, ``<pkg>/tests`` (``<pkg>`` = the import name, ``-`` -> ``_``); else, in
   an sdist of per-version source trees (``py3.9/`` ... ``py3.15/``), the one for the target's
   ``python_version``; else a tests dir inside an import package (shipped by the install, run
   from site-packages); none -> ``""`` (pytest searches the source root).
2. **test deps**: the first source below that declares a group/extra/file wins, whole; sources
   are alternatives that say the same thing (a tox env reads the requirements file, an extra
   repeats the group), so no union.  Names are looked for in two passes: ``test``, ``tests``,
   ``testing`` through every source first, then ``dev`` through every source (a project's
   ``dev`` group is often linters and type checkers, its ``test`` extra is what the tests need).

   a. PEP 735 ``[dependency-groups]`` (``include-group`` followed, cycles cut);
   b. ``[project.optional-dependencies]``;
   c. setup.cfg ``[options.extras_require]`` (``%(key)s`` interpolated and a one-line value split
      on ``;``, as setuptools reads it);
   d. requirements files: ``requirements-test*.txt``, ``test-requirements.txt``,
      ``requirements/test*.txt``, ``tests/requirements*.txt`` (pattern order, shortest name
      first; ``-r`` followed inside the sdist; ``-e``, ``-c``, ``.`` and options skipped) --
      only in the first pass, their names already say "test";
   e. tox.ini ``[testenv] deps`` (``-r`` and ``{[section]key}`` followed, ``-e .[x]`` read as
      the package's extra, ``extras =`` read from (b)/(c); other substitutions and
      factor-conditional lines skipped with a note).

   Every value is checked for its type (a dependency group that is a string is a note, never
   its characters) and every substitution, ``-r`` chain and file read is bounded by a named
   limit (harness.core.limits); past one, a note names it.

   A self-reference (``attrs[tests]``, ``.[test]``) pulls in that extra.  Dropped: the package
   itself, the tools the harness pins (pytest, pytest-xdist, pytest-timeout,
   pytest-run-parallel), coverage tools, and requirements whose marker is false for the
   target interpreter.  An invalid line is skipped with a note, never an error.
2b. **conftest imports**: a module a ``conftest.py`` (at the root, on the way to the tests, or
   under them) imports unconditionally that (2) left out is added when the sdist declares its
   distribution in another group or extra (``trustme`` of urllib3's ``dev`` group); not when
   it is a runtime dependency (installed with the package) or declared nowhere (the run's
   ``setup-error`` finding then names it with the fix). harness.testsetup.conftests reads the imports.
3. **pytest config**: the ``addopts`` of the config pytest would pick (pytest.ini,
   .pytest.ini, pyproject.toml, tox.ini, setup.cfg) is neutralized with ``-o addopts=`` when
   it holds something that cannot work in the harness -- coverage options, ``-p`` of a plugin
   that is not installed, ``-n``/``--numprocesses`` (the harness picks workers per phase),
   ``--strict-config`` with ini keys no installed plugin knows -- and the harmless items are
   given back, minus the ones the harness sets itself (``-r``, ``-v``, ``--timeout``, ...).
   harness.testsetup.pytestcfg finds the config and neutralizes it.
"""

from __future__ import annotations

import configparser
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ..core import limits
from . import pytestcfg, testdirs
from .conftests import third_party_imports
from .sdistfiles import SdistFiles, read_text

TEST_NAMES = ("test", "tests", "testing")
DEV_NAMES = ("dev",)
HARNESS_PINS = {"pytest", "pytest-xdist", "pytest-timeout", "pytest-run-parallel"}
COVERAGE = {"coverage", "pytest-cov", "covdefaults", "coverage-enable-subprocess"}
REQ_PATTERNS = ("requirements-test*.txt", "test-requirements.txt", "requirements/test*.txt", "tests/requirements*.txt")


# The free-threaded interpreter the harness tests on, for evaluating markers.
TARGET_ENV = {
    "implementation_name": "cpython",
    "implementation_version": "3.13.5",
    "os_name": "posix",
    "platform_machine": "x86_64",
    "platform_release": "",
    "platform_system": "Linux",
    "platform_version": "",
    "python_full_version": "3.13.5",
    "platform_python_implementation": "CPython",
    "python_version": "3.13",
    "sys_platform": "linux",
    "extra": "",
}


@dataclass(frozen=True, kw_only=True)
class Inferred:
    """What the sdist says of its tests; harness.testsetup.decide makes the job's
    ``test_setup`` (harness.core.suiterecord.TestSetup) of it, the matrix's entry and a recipe."""

    __test__ = False  # not a pytest test class

    tests: str = ""  # relative to the source root; "" = none found
    requires: tuple[str, ...] = ()  # PEP 508 strings
    pytest_args: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()  # what was decided, and from where

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Inferred:
        return cls(
            tests=str(d.get("tests", "")),
            requires=tuple(d.get("requires", ())),
            pytest_args=tuple(d.get("pytest_args", ())),
            sources=tuple(d.get("sources", ())),
        )


def infer_test_setup(src: Path, dist_name: str, *, environment: Mapping[str, str] | None = None) -> Inferred:
    return infer_with_config(Path(src), SdistFiles(Path(src)), dist_name, environment)[0]


def infer_with_config(
    src: Path, files: SdistFiles, dist_name: str, environment: Mapping[str, str] | None
) -> tuple[Inferred, tuple[str, dict[str, Any]] | None]:
    """Everything the harness needs to run ``src``'s tests that the sdist tells, and the pytest config found."""
    notes: list[str] = []
    env = {**TARGET_ENV, **(environment or {})}
    tests, why = testdirs.find(src, dist_name, env["python_version"])  # per-version trees, in-package tests
    notes.append(why)
    reqs, declared = _requires(src, files, dist_name, env, notes)
    reqs += _conftest_deps(src, tests, dist_name, reqs, declared, env, notes)
    config = pytestcfg.pytest_config(src, tests, notes, files)  # read once: the deps and the args both look at it
    if kept := pytestcfg.named_by_filterwarnings(config, reqs):
        reqs += kept
        notes.append(f"{', '.join(kept)} kept: a filterwarnings entry names it")
    args = pytestcfg.neutralized_addopts(config, reqs, dist_name, notes, pytestcfg.own_packages(src))
    return Inferred(tests=tests, requires=reqs, pytest_args=args, sources=tuple(notes)), config


# --------------------------------------------------------------------------- test deps


# pip's per-requirement options (pip-compile / uv `--generate-hashes` output): not the requirement
_REQ_OPTION_RE = re.compile(r"\s+--(?:hash|config-settings|global-option)(?:=|\s+)\S+")


def _lines(text: str) -> list[str]:
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


def _cfg_list(value: str) -> list[str]:
    """A setup.cfg requirements value as setuptools reads it: one a line, or, on a single line,
    separated by semicolons (deprecated, still accepted: stack_data's ``tests = pytest;
    typeguard; pygments``)."""
    if "\n" in value.strip():
        return _lines(value)
    return [c.strip() for c in value.split(";") if c.strip() and not c.strip().startswith("#")]


Lookup = Callable[[str], "tuple[str, list[str]] | None"]  # name -> (label, raw lines) or None


def _requires(
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
    declared = _declared(project, setup_cfg, groups, pyextras, extras, notes)
    lookups: list[Lookup] = [
        _group_of(groups, notes),
        _extra_of(pyextras, "[project.optional-dependencies]"),
        _extra_of(extras, "setup.cfg extras_require"),
        lambda name: _reqfiles(src, name, notes),
        lambda name: _toxdeps(src, dist, tox, name, notes),
    ]
    for names in (TEST_NAMES, DEV_NAMES):
        for look in lookups:
            for name in names:
                hit = look(name)
                if hit is not None:
                    label, lines = hit
                    notes.append(f"test deps from {label}")
                    return _filter(lines, dist, {**extras, **pyextras}, env, notes), declared
    notes.append("test deps: none declared")
    return (), declared


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
            v = _cfg_value(setup_cfg, "options.extras_require", k, notes)
            extras.setdefault(canonicalize_name(k), _cfg_list(v))
    return extras


def _declared(
    project: Mapping[str, Any],
    setup_cfg: configparser.ConfigParser | None,
    groups: dict[str, Any],
    pyextras: dict[str, list[str]],
    extras: dict[str, list[str]],
    notes: list[str],
) -> dict[str, tuple[str, str]]:
    """Every requirement the runtime deps, a group or an extra declares: canonical name ->
    (where, the line), the first one seen."""
    runtime = strings(project.get("dependencies", []), "[project] dependencies", notes)
    if setup_cfg is not None and setup_cfg.has_section("options"):
        runtime += _cfg_list(setup_cfg["options"].get("install_requires", ""))
    everywhere = [(RUNTIME, runtime)]
    everywhere += [(f"[dependency-groups] {g}", _group_lines(groups, g, set(), [])) for g in groups]
    everywhere += [(f"[project.optional-dependencies] {e}", v) for e, v in pyextras.items()]
    everywhere += [(f"setup.cfg extras_require {e}", v) for e, v in extras.items()]
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
                return f"{f.relative_to(src)}", _req_file(src, f, set(), notes)
    return None


def _toxdeps(
    src: Path, dist: str, tox: configparser.ConfigParser | None, name: str, notes: list[str]
) -> tuple[str, list[str]] | None:
    """tox.ini's [testenv] deps (``-r`` files read) and extras."""
    if name != TEST_NAMES[0] or tox is None or not tox.has_section("testenv"):
        return None
    deps = _tox_value(tox, "testenv", "deps", notes)
    lines = []
    for line in _lines(deps):
        if line.startswith("-r"):
            path = line[2:].strip().replace("{toxinidir}/", "").replace("{/}", "/")  # {/}: os.sep
            lines += _req_file(src, src / path, set(), notes)
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


def _conftest_deps(
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
        got = _filter([line], dist, {}, env, notes)
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


def _req_file(src: Path, f: Path, seen: set[Path], notes: list[str], depth: int = 0) -> list[str]:
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
    for line in _lines(text):
        if line.startswith(("-r", "--requirement")):
            inc = line.split(None, 1)[1] if " " in line else line[2:]
            out += _req_file(src, f.parent / inc.strip().lstrip("="), seen, notes, depth + 1)
        elif line.startswith(("-c", "--constraint", "-e", "--editable", "-")) or line == ".":
            notes.append(f"{shown}: {line!r} skipped")
        else:
            out.append(line)
    return out


def _tox_value(
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
        return _tox_value(tox, sec, k, notes, depth + 1, budget)

    return re.sub(r"\{\[([^\]]+)\]([^}]+)\}", sub, value)


def _cfg_value(
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
        return _cfg_value(cp, section, k, notes, depth + 1, budget)

    return re.sub(r"%%|%\(([^)]+)\)s", sub, value) if budget[1] >= 0 else ""


def _filter(
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
