"""A package's pytest configuration, read the way pytest finds it, and the ``addopts`` that
cannot work in the harness neutralized (step 3 of harness.testsetup.infer's order).

The config files themselves are read once, by harness.testsetup.sdistfiles.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from .sdistfiles import SdistFiles


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


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
VALUE_OPTS = {
    "-p",
    "-m",
    "-k",
    "-n",
    "-c",
    "-W",
    "-o",
    "-r",
    "--numprocesses",
    "--dist",
    "--maxprocesses",
    "--timeout",
    "--timeout-method",
    "--ignore",
    "--deselect",
    "--ignore-glob",
    "--import-mode",
    "--basetemp",
    "--tb",
    "--junitxml",
    "--junit-xml",
    "--rootdir",
    "--confcutdir",
    "--maxfail",
    "--durations",
    "--cov-report",
    "--cov-config",
    "--cov-context",
    "--cov-fail-under",
    "--override-ini",
}
HARNESS_OPTS = {
    "-r",
    "-v",
    "-vv",
    "-q",
    "-qq",
    "--verbose",
    "--quiet",
    "--timeout",
    "--timeout-method",
    "--junitxml",
    "--junit-xml",
    "--rootdir",
    "--confcutdir",
    "-c",
    "-x",
    "--exitfirst",
    "--maxfail",
    "-n",
    "--numprocesses",
    "--dist",
    "--maxprocesses",
    "-d",
    "--lf",
    "--last-failed",
    "--ff",
    "--failed-first",
    "--sw",
    "--stepwise",
}
PLUGINS_HARNESS_NEEDS = {"xdist", "timeout", "pytest_timeout", "run_parallel", "junitxml"}


# --------------------------------------------------------------------------- pytest config


def pytest_config(
    src: Path, tests: str, notes: list[str], files: SdistFiles | None = None
) -> tuple[str, dict[str, Any]] | None:
    """(file name, ini options) of the config pytest picks, walking up from the tests (a dir
    or a file) to the top of the package's source, never above it; None when there is none.
    ``files``: the sdist's config files as read once (None: read them now)."""
    files = files if files is not None else SdistFiles(Path(src))
    start = (src / tests) if tests else src
    if not start.is_dir():
        start = start.parent
    root = src.resolve()
    for here in [start.resolve(), *start.resolve().parents]:
        for name, section in (
            ("pytest.ini", "pytest"),
            (".pytest.ini", "pytest"),
            ("pyproject.toml", ""),
            ("tox.ini", "pytest"),
            ("setup.cfg", "tool:pytest"),
        ):
            f = here / name
            if not f.is_file() or f.is_symlink():
                continue
            rel = str(f.relative_to(root))
            if name == "pyproject.toml":
                tool = files.toml(rel, []).get("tool")
                table = tool.get("pytest") if isinstance(tool, dict) else None
                if isinstance(table, dict):  # [tool.pytest.ini_options], or pytest 9's [tool.pytest]
                    ini = table.get("ini_options")
                    return rel, ini if isinstance(ini, dict) else table
                continue
            cp = files.ini(rel, notes)
            if cp is not None and cp.has_section(section):
                return rel, dict(cp[section])
            if name in ("pytest.ini", ".pytest.ini"):
                return rel, {}
        if here == root or root not in here.parents:
            break
    return None


def _split(addopts: Any) -> list[str]:
    if isinstance(addopts, list):  # pytest takes each item as one argument, unsplit
        return [t for a in addopts for t in _list_item(str(a).strip())]
    text = "\n".join(line for line in str(addopts).splitlines() if not line.strip().startswith("#"))
    return shlex.split(text)


def own_packages(src: Path) -> list[str]:
    """The top-level import packages the sdist ships: directories with an ``__init__.py`` at
    its root, under ``lib/`` or under ``src/`` (no link followed)."""
    out: list[str] = []
    for base in (src, src / "lib", src / "src"):
        if base.is_symlink() or not base.is_dir():
            continue
        out += sorted(
            d.name for d in base.iterdir() if d.is_dir() and not d.is_symlink() and (d / "__init__.py").is_file()
        )
    return out


def _list_item(item: str) -> list[str]:
    """One item of a TOML ``addopts`` list as pytest's argparse reads it: an option with its
    value attached after a space ("-p instafail", psutil; "-m default or default_async",
    pymongo: the whole rest is the value) -> [option, value]; anything else is one argument."""
    m = re.fullmatch(r"(-[^\s=]+)\s+(\S.*)", item, re.S)
    return [m.group(1), m.group(2).strip()] if m and not m.group(2).startswith("-") else [item]


def _items(tokens: list[str]) -> list[tuple[str, ...]]:
    """Options paired with their values: ['-p', 'x', '--cov'] -> [('-p', 'x'), ('--cov',)]."""
    out: list[tuple[str, ...]] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        takes = t in VALUE_OPTS or (t == "--cov" and i + 1 < len(tokens) and not tokens[i + 1].startswith("-"))
        if takes and i + 1 < len(tokens):
            out.append((t, tokens[i + 1]))
            i += 2
        else:
            out.append((t,))
            i += 1
    return out


def neutralized_addopts(
    found: tuple[str, dict[str, Any]] | None,
    reqs: tuple[str, ...],
    dist: str,
    notes: list[str],
    own: Iterable[str] = (),
) -> tuple[str, ...]:
    """``own``: the sdist's top-level import packages (``own_packages``): a plugin that is the
    package's own module (``-p Crypto.SelfTest.plugin``, pycryptodome) is installed with it."""
    if found is None or "addopts" not in found[1]:
        return ()
    cfg, ini = found
    installed = {canonicalize_name(Requirement(r).name).replace("-", "_") for r in reqs}
    installed.add(canonicalize_name(dist).replace("-", "_"))
    installed.update(canonicalize_name(n).replace("-", "_") for n in own)
    bad: list[str] = []
    kept: list[str] = []
    raw = ini["addopts"]
    try:
        if not isinstance(raw, str | list):
            raise ValueError(f"a {type(raw).__name__}, not a string or a list")
        items = _items(_split(raw))
    except ValueError as e:  # shlex: "No closing quotation"; pytest cannot read it either
        notes.append(f"addopts neutralized ({cfg}): it cannot be read ({e}): {str(raw)[:200]!r}")
        return ("-o", "addopts=")
    for item in items:
        opt = item[0].split("=", 1)[0]
        plugin = (
            item[1]
            if opt == "-p" and len(item) > 1
            else (item[0][2:] if opt.startswith("-p") and len(opt) > 2 and not opt.startswith("--") else "")
        )
        text = " ".join(item)
        if opt.startswith(("--cov", "--no-cov")) or plugin in ("pytest_cov", "cov"):
            bad.append(f"{text} (coverage is not measured)")
        elif plugin.startswith("no:") and plugin[3:] in PLUGINS_HARNESS_NEEDS:
            bad.append(f"{text} (the harness needs it)")
        elif (
            plugin
            and not plugin.startswith("no:")
            and plugin not in BUILTIN_PLUGINS
            and canonicalize_name(plugin.split(".")[0]).replace("-", "_") not in installed
        ):
            bad.append(f"{text} ({plugin} not installed)")
        elif opt in ("-n", "--numprocesses") or (opt.startswith("-n") and opt[2:].isdigit()):
            bad.append(f"{text} (the harness picks workers per phase)")
        elif opt == "--strict-config":
            unknown = sorted(k for k in ini if k not in KNOWN_INI)
            if unknown:
                bad.append(f"{text} (ini keys no installed plugin may know: {', '.join(unknown)})")
            else:
                kept.append(item[0])
        elif opt in HARNESS_OPTS or (opt.startswith("-r") and not opt.startswith("--")) or re.fullmatch(r"-[vq]+", opt):
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


def named_by_filterwarnings(found: tuple[str, dict[str, Any]] | None, reqs: tuple[str, ...]) -> tuple[str, ...]:
    """``coverage`` when a ``filterwarnings`` entry names a category of it (aiohttp's
    ``ignore:...:coverage.exceptions.CoverageWarning``): pytest imports that module to read the
    entry, so the library dropped with the coverage tools is needed after all."""
    text = str(found[1].get("filterwarnings", "")) if found else ""
    have = {canonicalize_name(Requirement(r).name) for r in reqs}
    if re.search(r"\bcoverage\.", text) and "coverage" not in have:
        return ("coverage",)
    return ()


# a test tool whose fixture keeps one state per test: called from pytest-run-parallel's threads it
# fails by design ("The benchmark fixture can only be used once per test": pytest-codspeed 5.0.3 in
# wcwidth 0.9.5's test_benchmarks.py, in both GIL modes), which says nothing of the package. Such a
# fixture is named in run-parallel's own ``thread_unsafe_fixtures``: its tests run in one thread.
UNSAFE_FIXTURES_OF = {"pytest-benchmark": "benchmark", "pytest-codspeed": "benchmark"}


def thread_unsafe_fixtures(
    found: tuple[str, dict[str, Any]] | None, names: Iterable[str], notes: list[str]
) -> tuple[str, ...]:
    """``-o thread_unsafe_fixtures=...`` naming the fixtures of the test tools among ``names``
    (canonical requirement names) with the config's own list kept first; () when none is added."""
    names = set(names)
    tools = sorted(t for t in UNSAFE_FIXTURES_OF if t in names)
    raw = found[1].get("thread_unsafe_fixtures", "") if found else ""
    theirs = [x.strip() for x in (raw if isinstance(raw, list) else str(raw).splitlines()) if str(x).strip()]
    new = [f for f in dict.fromkeys(UNSAFE_FIXTURES_OF[t] for t in tools) if f not in theirs]
    if not new:
        return ()
    notes.append(
        f"thread_unsafe_fixtures: {', '.join(new)} ({', '.join(tools)}: one state per test, so "
        "pytest-run-parallel runs the tests that use it in one thread)"
    )
    return ("-o", "thread_unsafe_fixtures=" + "\n".join([*theirs, *new]))


# a number or a bool written as a TOML string ("0", "true"), for an option pytest types so
_TYPED_STRING_RE = re.compile(r"-?\d+(?:\.\d+)?|true|false", re.I)
TYPED_INI = _words("""
verbosity_assertions verbosity_test_cases verbosity_subtests faulthandler_timeout
faulthandler_exit_on_timeout tmp_path_retention_count truncation_limit_lines
truncation_limit_chars junit_log_passing_tests log_cli enable_assertion_pass_hook xfail_strict
consider_namespace_packages collect_imported_tests strict strict_config strict_markers
strict_parametrization_ids strict_xfail
""")


def typed_strings(files: SdistFiles, found: tuple[str, dict[str, Any]] | None, notes: list[str]) -> tuple[str, ...]:
    """``-o key=value`` for each number or bool that pytest 9's native ``[tool.pytest]`` table
    holds as a string. That table is typed: pytest 9.2.0 refuses psutil 7.2.2's
    ``verbosity_subtests = "0"`` ("config option 'verbosity_subtests' expects one of int |
    'auto', got str: '0'") in every test, and under pytest-xdist a worker then ends mid-test
    (INTERNALERROR ``assert not crashitem``), every run. Given with ``-o``, the value is read
    as an ini file's text is, as the pytest the project tested with did."""
    if found is None or not needs_pytest9(files, found):
        return ()
    args: list[str] = []
    for key, value in found[1].items():
        if key in TYPED_INI and isinstance(value, str) and _TYPED_STRING_RE.fullmatch(value.strip()):
            args += ["-o", f"{key}={value.strip()}"]
    if args:
        notes.append(
            f"{' '.join(args[1::2])}: given with -o ({found[0]} [tool.pytest] holds a string where "
            "pytest 9.2 wants a number or a bool, and refuses it)"
        )
    return tuple(args)


def needs_pytest9(files: SdistFiles, found: tuple[str, dict[str, Any]] | None) -> bool:
    """Whether the config pytest would pick is pytest 9's native ``[tool.pytest]`` table of a
    pyproject.toml (no ``ini_options``): pytest 8 does not read it and walks on up past the
    package (ujson 6.1.0), so such a suite runs with ``suite.TOOLS_PYTEST9``."""
    if found is None or Path(found[0]).name != "pyproject.toml":
        return False
    table = files.toml(found[0], []).get("tool", {})
    table = table.get("pytest") if isinstance(table, dict) else None
    return isinstance(table, dict) and "ini_options" not in table
