"""A package's test setup, inferred from its sdist (pure: files in, a TestSetup out, no network).

Used when a matrix entry does not say ``tests``/``test_requires``/``pytest_args`` itself.  The
order is fixed and every decision is recorded in ``TestSetup.sources`` as text:

1. **tests dir**: the first that exists of ``tests/``, ``test/``, ``testing/``,
   ``src/<pkg>/tests``, ``<pkg>/tests`` (``<pkg>`` = the import name, ``-`` -> ``_``);
   none -> ``""`` (pytest searches the source root).
2. **test deps**: the first source below that declares a group/extra/file wins, whole; sources
   are alternatives that say the same thing (a tox env reads the requirements file, an extra
   repeats the group), so no union.  Names are looked for in two passes: ``test``, ``tests``,
   ``testing`` through every source first, then ``dev`` through every source (a project's
   ``dev`` group is often linters and type checkers, its ``test`` extra is what the tests need).

   a. PEP 735 ``[dependency-groups]`` (``include-group`` followed, cycles cut);
   b. ``[project.optional-dependencies]``;
   c. setup.cfg ``[options.extras_require]``;
   d. requirements files: ``requirements-test*.txt``, ``test-requirements.txt``,
      ``requirements/test*.txt``, ``tests/requirements*.txt`` (pattern order, shortest name
      first; ``-r`` followed inside the sdist; ``-e``, ``-c``, ``.`` and options skipped) --
      only in the first pass, their names already say "test";
   e. tox.ini ``[testenv] deps`` (``-r`` and ``{[section]key}`` followed, ``extras =`` read
      from (b)/(c); other substitutions and factor-conditional lines skipped with a note).

   A self-reference (``attrs[tests]``, ``.[test]``) pulls in that extra.  Dropped: the package
   itself, the tools the harness pins (pytest, pytest-xdist, pytest-timeout,
   pytest-run-parallel), coverage tools, and requirements whose marker is false for the
   target interpreter.  An invalid line is skipped with a note, never an error.
2b. **conftest imports**: a module a ``conftest.py`` (at the root, on the way to the tests, or
   under them) imports unconditionally that (2) left out is added when the sdist declares its
   distribution in another group or extra (``trustme`` of urllib3's ``dev`` group); not when
   it is a runtime dependency (installed with the package) or declared nowhere (the run's
   ``setup-error`` finding then names it with the fix). harness.conftests reads the imports.
3. **pytest config**: the ``addopts`` of the config pytest would pick (pytest.ini,
   .pytest.ini, pyproject.toml, tox.ini, setup.cfg) is neutralized with ``-o addopts=`` when
   it holds something that cannot work in the harness -- coverage options, ``-p`` of a plugin
   that is not installed, ``-n``/``--numprocesses`` (the harness picks workers per phase),
   ``--strict-config`` with ini keys no installed plugin knows -- and the harmless items are
   given back, minus the ones the harness sets itself (``-r``, ``-v``, ``--timeout``, ...).
"""

from __future__ import annotations

import configparser
import os
import re
import shlex
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from .conftests import third_party_imports
from .model import read_regular

TEST_NAMES = ("test", "tests", "testing")
DEV_NAMES = ("dev",)
HARNESS_PINS = {"pytest", "pytest-xdist", "pytest-timeout", "pytest-run-parallel"}
COVERAGE = {"coverage", "pytest-cov", "covdefaults", "coverage-enable-subprocess"}
REQ_PATTERNS = ("requirements-test*.txt", "test-requirements.txt", "requirements/test*.txt",
                "tests/requirements*.txt")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# The free-threaded interpreter the harness tests on, for evaluating markers.
TARGET_ENV = {
    "implementation_name": "cpython", "implementation_version": "3.13.5", "os_name": "posix",
    "platform_machine": "x86_64", "platform_release": "", "platform_system": "Linux",
    "platform_version": "", "python_full_version": "3.13.5",
    "platform_python_implementation": "CPython", "python_version": "3.13", "sys_platform": "linux",
    "extra": "",
}
# ini keys pytest and the harness's plugins (xdist, timeout, run-parallel) know.
KNOWN_INI = _words("""
addopts cache_dir collect_imported_tests consider_namespace_packages console_output_style
disable_test_id_escaping_and_forfeit_all_rights_to_community_support doctest_encoding
doctest_optionflags empty_parameter_set_mark enable_assertion_pass_hook faulthandler_exit_on_timeout
faulthandler_timeout filterwarnings junit_duration_report junit_family junit_log_passing_tests
junit_logging junit_suite_name log_auto_indent log_cli log_cli_date_format log_cli_format
log_cli_level log_date_format log_file log_file_date_format log_file_format log_file_level
log_file_mode log_format log_level markers max_warnings minversion norecursedirs python_classes
python_files python_functions pythonpath required_plugins strict strict_config strict_markers
strict_parametrization_ids strict_xfail testpaths tmp_path_retention_count
tmp_path_retention_policy truncation_limit_chars truncation_limit_lines usefixtures
verbosity_assertions verbosity_subtests verbosity_test_cases xfail_strict
timeout timeout_method timeout_func_only timeout_disable_debugger_detection session_timeout
rsyncdirs rsyncignore looponfailroots thread_unsafe_fixtures thread_unsafe_functions
""")
BUILTIN_PLUGINS = _words("""
assertion cacheprovider capture debugging doctest faulthandler fixtures helpconfig junitxml
legacypath logging main mark monkeypatch nose pastebin pytester python python_path recwarn
reports runner setuponly setupplan skipping stepwise subtests terminal threadexception tmpdir
unittest unraisableexception warnings xdist xdist.plugin pytest_timeout timeout run_parallel
pytest_run_parallel
""")
VALUE_OPTS = {"-p", "-m", "-k", "-n", "-c", "-W", "-o", "-r", "--numprocesses", "--dist",
              "--maxprocesses", "--timeout", "--timeout-method", "--ignore", "--deselect",
              "--ignore-glob", "--import-mode", "--basetemp", "--tb", "--junitxml", "--junit-xml",
              "--rootdir", "--confcutdir", "--maxfail", "--durations", "--cov-report",
              "--cov-config", "--cov-context", "--cov-fail-under", "--override-ini"}
HARNESS_OPTS = {"-r", "-v", "-vv", "-q", "-qq", "--verbose", "--quiet", "--timeout",
                "--timeout-method", "--junitxml", "--junit-xml", "--rootdir", "--confcutdir", "-c",
                "-x", "--exitfirst", "--maxfail", "-n", "--numprocesses", "--dist", "--maxprocesses",
                "-d", "--lf", "--last-failed", "--ff", "--failed-first", "--sw", "--stepwise"}
PLUGINS_HARNESS_NEEDS = {"xdist", "timeout", "pytest_timeout", "run_parallel", "junitxml"}


@dataclass(frozen=True, kw_only=True)
class TestSetup:
    __test__ = False  # not a pytest test class

    tests: str = ""  # relative to the source root; "" = none found
    requires: tuple[str, ...] = ()  # PEP 508 strings
    pytest_args: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()  # what was decided, and from where

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TestSetup:
        return cls(tests=str(d.get("tests", "")), requires=tuple(d.get("requires", ())),
                   pytest_args=tuple(d.get("pytest_args", ())), sources=tuple(d.get("sources", ())))


def infer_test_setup(src: Path, dist_name: str, *,
                     environment: Mapping[str, str] | None = None) -> TestSetup:
    """Everything the harness needs to run ``src``'s tests that the sdist itself tells."""
    src = Path(src)
    notes: list[str] = []
    env = {**TARGET_ENV, **(environment or {})}
    tests = _tests_dir(src, dist_name)
    notes.append(f"tests dir: {tests}/" if tests else "tests dir: none found (pytest searches the root)")
    reqs, declared = _requires(src, dist_name, env, notes)
    reqs += _conftest_deps(src, tests, dist_name, reqs, declared, env, notes)
    config = pytest_config(src, tests, notes)  # read once: the deps and the args both look at it
    if kept := _named_by_filterwarnings(config, reqs):
        reqs += kept
        notes.append(f"{', '.join(kept)} kept: a filterwarnings entry names it")
    args = _pytest_args(config, reqs, dist_name, notes)
    return TestSetup(tests=tests, requires=reqs, pytest_args=args, sources=tuple(notes))


def _named_by_filterwarnings(found: tuple[str, dict[str, Any]] | None,
                             reqs: tuple[str, ...]) -> tuple[str, ...]:
    """``coverage`` when a ``filterwarnings`` entry names a category of it (aiohttp's
    ``ignore:...:coverage.exceptions.CoverageWarning``): pytest imports that module to read the
    entry, so the library dropped with the coverage tools is needed after all."""
    text = str(found[1].get("filterwarnings", "")) if found else ""
    have = {canonicalize_name(Requirement(r).name) for r in reqs}
    if re.search(r"\bcoverage\.", text) and "coverage" not in have:
        return ("coverage",)
    return ()


# --------------------------------------------------------------------------- tests dir


def _tests_dir(src: Path, dist_name: str) -> str:
    pkg = canonicalize_name(dist_name).replace("-", "_")
    for cand in ("tests", "test", "testing", f"src/{pkg}/tests", f"{pkg}/tests"):
        if (src / cand).is_dir():
            return cand
    return ""


# --------------------------------------------------------------------------- test deps


MAX_CONFIG_BYTES = 4 * 1024 * 1024


def _text(p: Path) -> str | None:
    """A file of the package's source: a regular file only, never through a link (package code
    may have run in the workspace), at most MAX_CONFIG_BYTES; None otherwise."""
    raw = read_regular(p, MAX_CONFIG_BYTES)
    return raw.decode("utf-8", errors="replace") if raw is not None else None


def _read_toml(p: Path, notes: list[str]) -> dict[str, Any]:
    text = _text(p)
    if text is None:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        notes.append(f"{p.name} not read: {e}")
        return {}


def _read_ini(p: Path, notes: list[str]) -> configparser.ConfigParser | None:
    text = _text(p)
    if text is None:
        return None
    cp = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        cp.read_string(text, source=p.name)
    except configparser.Error as e:
        notes.append(f"{p.name} not read: {str(e).splitlines()[0]}")
        return None
    return cp


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


Lookup = Callable[[str], "tuple[str, list[str]] | None"]  # name -> (label, raw lines) or None


def _requires(src: Path, dist: str, env: Mapping[str, str],
              notes: list[str]) -> tuple[tuple[str, ...], dict[str, tuple[str, str]]]:
    """The test deps (step 2), and every requirement any group or extra declares: canonical
    name -> (where, the line), the first one seen (step 2b looks there)."""
    pyproject = _read_toml(src / "pyproject.toml", notes)
    setup_cfg = _read_ini(src / "setup.cfg", notes)
    tox = _read_ini(src / "tox.ini", notes)
    groups: dict[str, Any] = {canonicalize_name(k): v
                              for k, v in pyproject.get("dependency-groups", {}).items()}
    extras: dict[str, list[str]] = {}
    if setup_cfg is not None and setup_cfg.has_section("options.extras_require"):
        for k, v in setup_cfg["options.extras_require"].items():
            extras.setdefault(canonicalize_name(k), _lines(v))
    opt_deps = pyproject.get("project", {}).get("optional-dependencies", {})
    pyextras: dict[str, list[str]] = {canonicalize_name(k): list(v) for k, v in opt_deps.items()
                                      if isinstance(v, list)}
    all_extras = {**extras, **pyextras}
    declared: dict[str, tuple[str, str]] = {}
    runtime = list(pyproject.get("project", {}).get("dependencies", []))
    if setup_cfg is not None and setup_cfg.has_section("options"):
        runtime += _lines(setup_cfg["options"].get("install_requires", ""))
    everywhere = [(RUNTIME, runtime)]
    everywhere += [(f"[dependency-groups] {g}", _group_lines(groups, g, set(), [])) for g in groups]
    everywhere += [(f"[project.optional-dependencies] {e}", v) for e, v in pyextras.items()]
    everywhere += [(f"setup.cfg extras_require {e}", v) for e, v in extras.items()]
    for label, lines in everywhere:
        for line in lines:
            try:
                declared.setdefault(canonicalize_name(Requirement(line).name), (label, line))
            except InvalidRequirement:
                continue

    def group(name: str) -> tuple[str, list[str]] | None:
        if name not in groups:
            return None
        return f"[dependency-groups] {name}", _group_lines(groups, name, set(), notes)

    def extra_of(table: dict[str, list[str]], label: str) -> Lookup:
        return lambda name: (f"{label} {name}", table[name]) if name in table else None

    def reqfiles(name: str) -> tuple[str, list[str]] | None:
        if name != TEST_NAMES[0]:  # one lookup, in the first pass
            return None
        for pattern in REQ_PATTERNS:
            found = sorted(src.glob(pattern), key=lambda p: (len(p.name), p.name))
            for f in found:
                if f.is_file():
                    ft = f.with_name(f"{f.stem}-ft{f.suffix}")  # aiohttp's test-ft.txt
                    if ft.is_file() and not ft.is_symlink():
                        f = ft
                        notes.append(f"{f.relative_to(src)}: the free-threaded variant of "
                                     f"{f.relative_to(src).parent / (f.stem[:-3] + f.suffix)}")
                    return f"{f.relative_to(src)}", _req_file(src, f, set(), notes)
        return None

    def toxdeps(name: str) -> tuple[str, list[str]] | None:
        if name != TEST_NAMES[0] or tox is None or not tox.has_section("testenv"):
            return None
        deps = _tox_value(tox, "testenv", "deps", notes)
        lines = []
        for line in _lines(deps):
            if line.startswith("-r"):
                f = (src / line[2:].strip().replace("{toxinidir}/", "")).resolve()
                lines += _req_file(src, f, set(), notes)
            else:
                lines.append(line)
        for ex in re.split(r"[\s,]+", tox["testenv"].get("extras", "")):
            if ex:
                lines.append(f"{dist}[{ex}]")
        return "tox.ini [testenv] deps", lines

    lookups: list[Lookup] = [group, extra_of(pyextras, "[project.optional-dependencies]"),
                             extra_of(extras, "setup.cfg extras_require"), reqfiles, toxdeps]
    for names in (TEST_NAMES, DEV_NAMES):
        for look in lookups:
            for name in names:
                hit = look(name)
                if hit is not None:
                    label, lines = hit
                    notes.append(f"test deps from {label}")
                    return _filter(lines, dist, all_extras, env, notes), declared
    notes.append("test deps: none declared")
    return (), declared


RUNTIME = "[project] dependencies"  # installed with the package: never a test dep to add
# a module a conftest imports -> the distribution that provides it, where the names differ
MODULE_DISTS = {"yaml": "pyyaml", "dateutil": "python-dateutil", "OpenSSL": "pyopenssl",
                "attr": "attrs", "PIL": "pillow", "jwt": "pyjwt", "dotenv": "python-dotenv",
                "bs4": "beautifulsoup4", "zmq": "pyzmq", "serial": "pyserial",
                "Crypto": "pycryptodome", "sklearn": "scikit-learn", "_pytest": "pytest"}


def _conftest_deps(src: Path, tests: str, dist: str, reqs: tuple[str, ...],
                   declared: Mapping[str, tuple[str, str]], env: Mapping[str, str],
                   notes: list[str]) -> tuple[str, ...]:
    """Step 2b: a module a conftest imports unconditionally that the test deps leave out, when
    the sdist declares its distribution in another group or extra (urllib3's ``trustme``, in
    ``[dependency-groups] dev``). One not declared anywhere is left to the run, whose
    ``setup-error`` finding names it with the fix."""
    have: set[str] = {canonicalize_name(Requirement(r).name) for r in reqs}
    have |= HARNESS_PINS | {canonicalize_name(dist)}
    out: list[str] = []
    for mod, at in third_party_imports(src, tests).items():
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
    return out


def _req_file(src: Path, f: Path, seen: set[Path], notes: list[str]) -> list[str]:
    f = f.resolve()
    root = src.resolve()
    shown = os.path.relpath(f, root)
    text = _text(f) if f.is_relative_to(root) else None
    if text is None:
        notes.append(f"requirements file {shown} skipped: not in the sdist")
        return []
    if f in seen:
        return []
    seen.add(f)
    out = []
    for line in _lines(text):
        if line.startswith(("-r", "--requirement")):
            inc = line.split(None, 1)[1] if " " in line else line[2:]
            out += _req_file(src, f.parent / inc.strip().lstrip("="), seen, notes)
        elif line.startswith(("-c", "--constraint", "-e", "--editable", "-")) or line == ".":
            notes.append(f"{shown}: {line!r} skipped")
        else:
            out.append(line)
    return out


def _tox_value(tox: configparser.ConfigParser, section: str, key: str, notes: list[str],
               depth: int = 0) -> str:
    value = tox[section].get(key, "") if tox.has_section(section) else ""

    def sub(m: re.Match[str]) -> str:
        sec, k = m.group(1), m.group(2)
        if depth > 5 or not tox.has_section(sec):
            notes.append(f"tox.ini: {m.group(0)} not resolved")
            return ""
        return _tox_value(tox, sec, k, notes, depth + 1)

    return re.sub(r"\{\[([^\]]+)\]([^}]+)\}", sub, value)


def _filter(lines: Iterable[str], dist: str, extras: dict[str, list[str]],
            env: Mapping[str, str], notes: list[str]) -> tuple[str, ...]:
    me = canonicalize_name(dist)
    out: list[str] = []
    dropped: list[str] = []
    todo = list(lines)
    seen_extras: set[str] = set()
    while todo:
        line = todo.pop(0)
        if line == "." or line.startswith(".["):  # the package itself, maybe with extras
            line = f"{dist}{line[1:]}"
        if "{" in line or re.match(r"^[\w.,{}-]+:\s", line):
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


# --------------------------------------------------------------------------- pytest config


def pytest_config(src: Path, tests: str, notes: list[str]) -> tuple[str, dict[str, Any]] | None:
    """(file name, ini options) of the config pytest picks, walking up from the tests (a dir
    or a file) to the top of the package's source, never above it; None when there is none."""
    start = (src / tests) if tests else src
    if not start.is_dir():
        start = start.parent
    root = src.resolve()
    for here in [start.resolve(), *start.resolve().parents]:
        for name, section in (("pytest.ini", "pytest"), (".pytest.ini", "pytest"),
                              ("pyproject.toml", ""), ("tox.ini", "pytest"),
                              ("setup.cfg", "tool:pytest")):
            f = here / name
            if not f.is_file() or f.is_symlink():
                continue
            if name == "pyproject.toml":
                table = _read_toml(f, []).get("tool", {}).get("pytest")
                if isinstance(table, dict):  # [tool.pytest.ini_options], or pytest 9's [tool.pytest]
                    ini = table.get("ini_options")
                    return str(f.relative_to(root)), ini if isinstance(ini, dict) else table
                continue
            cp = _read_ini(f, notes)
            if cp is not None and cp.has_section(section):
                return str(f.relative_to(root)), dict(cp[section])
            if name in ("pytest.ini", ".pytest.ini"):
                return str(f.relative_to(root)), {}
        if here == root or root not in here.parents:
            break
    return None


def _split(addopts: Any) -> list[str]:
    if isinstance(addopts, list):  # an item may hold an option and its value: "-p instafail" (psutil)
        return [t for a in addopts for t in shlex.split(str(a))]
    text = "\n".join(line for line in str(addopts).splitlines() if not line.strip().startswith("#"))
    return shlex.split(text)


def _items(tokens: list[str]) -> list[tuple[str, ...]]:
    """Options paired with their values: ['-p', 'x', '--cov'] -> [('-p', 'x'), ('--cov',)]."""
    out: list[tuple[str, ...]] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        takes = t in VALUE_OPTS or (t == "--cov" and i + 1 < len(tokens)
                                    and not tokens[i + 1].startswith("-"))
        if takes and i + 1 < len(tokens):
            out.append((t, tokens[i + 1]))
            i += 2
        else:
            out.append((t,))
            i += 1
    return out


def _pytest_args(found: tuple[str, dict[str, Any]] | None, reqs: tuple[str, ...], dist: str,
                 notes: list[str]) -> tuple[str, ...]:
    if found is None or "addopts" not in found[1]:
        return ()
    cfg, ini = found
    installed = {canonicalize_name(Requirement(r).name).replace("-", "_") for r in reqs}
    installed.add(canonicalize_name(dist).replace("-", "_"))
    bad: list[str] = []
    kept: list[str] = []
    items = _items(_split(ini["addopts"]))
    for item in items:
        opt = item[0].split("=", 1)[0]
        plugin = item[1] if opt == "-p" and len(item) > 1 else (item[0][2:] if opt.startswith("-p") and len(opt) > 2 and not opt.startswith("--") else "")
        text = " ".join(item)
        if opt.startswith(("--cov", "--no-cov")) or plugin in ("pytest_cov", "cov"):
            bad.append(f"{text} (coverage is not measured)")
        elif plugin.startswith("no:") and plugin[3:] in PLUGINS_HARNESS_NEEDS:
            bad.append(f"{text} (the harness needs it)")
        elif plugin and not plugin.startswith("no:") and plugin not in BUILTIN_PLUGINS \
                and canonicalize_name(plugin.split(".")[0]).replace("-", "_") not in installed:
            bad.append(f"{text} ({plugin} not installed)")
        elif opt in ("-n", "--numprocesses") or (opt.startswith("-n") and opt[2:].isdigit()):
            bad.append(f"{text} (the harness picks workers per phase)")
        elif opt == "--strict-config":
            unknown = sorted(k for k in ini if k not in KNOWN_INI)
            if unknown:
                bad.append(f"{text} (ini keys no installed plugin may know: {', '.join(unknown)})")
            else:
                kept.append(item[0])
        elif opt in HARNESS_OPTS or (opt.startswith("-r") and not opt.startswith("--")) \
                or re.fullmatch(r"-[vq]+", opt):
            continue  # the harness sets its own; dropped only if addopts is neutralized
        else:
            kept.extend(item)
    # an option of a plugin dropped above (psutil: "-p instafail" and "--instafail") goes with it
    gone = {b.split(" (", 1)[0].split()[-1] for b in bad if b.endswith("not installed)")}
    for opt in [k for k in kept if any(k.startswith(f"--{g}") for g in gone)]:
        kept.remove(opt)
        bad.append(f"{opt} (its plugin is not installed)")
    if not bad:
        return ()
    notes.append(f"addopts neutralized ({cfg}): " + ", ".join(bad))
    if kept:
        notes.append("addopts kept: " + " ".join(kept))
    return ("-o", "addopts=", *kept)
