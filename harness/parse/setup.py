"""Setup failures: the suite could not be collected or run because of its environment.

A test dependency that was not installed, a fixture or plugin that is not there, an option
``addopts`` names that no installed plugin knows: none of that is the package's failure on the
free-threaded build, so the verdict must not say ``baseline-failure``. Each problem found in a
pytest log carries the real cause (``ModuleNotFoundError: No module named 'hypothesis'`` with
the file and line) and what would fix it in matrix.yaml (``test_requires: [hypothesis]``).
"""

from __future__ import annotations

import os
import re
import shlex

from ..core.model import SetupProblem

MODULE_RE = re.compile(r"^E\s+ModuleNotFoundError: No module named '(?P<mod>[\w.]+)'", re.M)
WHILE_RE = re.compile(r"^ImportError while (?P<what>loading conftest|importing test module) '(?P<file>[^']+)'", re.M)
AT_RE = re.compile(r"^(?P<loc>[^\s:]+\.py:\d+): in ", re.M)
# a plugin a conftest's pytest_plugins (or -p) names, that cannot be imported: before collection
PLUGIN_RE = re.compile(
    r"^ImportError: Error importing plugin \"(?P<plugin>[\w.]+)\": No module named '(?P<mod>[\w.]+)'", re.M
)
FIXTURE_RE = re.compile(r"^E\s+fixture '(?P<name>\w+)' not found", re.M)
ARGS_RE = re.compile(r"^(?:[\w.]+: )?error: unrecognized arguments: (?P<args>.+)$", re.M)
MARKER_RE = re.compile(r"'(?P<name>\w+)' not found in `markers` configuration option")
# the same under `filterwarnings = error` (python-dateutil): a warning turned into an error
MARK_WARNING_RE = re.compile(r"PytestUnknownMarkWarning: Unknown pytest\.mark\.(?P<name>\w+)")
# fixtures of well-known plugins: the fix for a missing one
FIXTURE_PLUGINS = {
    "mocker": "pytest-mock",
    "class_mocker": "pytest-mock",
    "module_mocker": "pytest-mock",
    "benchmark": "pytest-benchmark",
    "httpserver": "pytest-httpserver",
    "freezer": "pytest-freezer",
    "time_machine": "time-machine",
    "event_loop": "pytest-asyncio",
    "aiohttp_client": "pytest-aiohttp",
    "datadir": "pytest-datadir",
    "snapshot": "syrupy",
    "requests_mock": "requests-mock",
    "httpx_mock": "pytest-httpx",
    "subtests": "pytest-subtests",
    "loop": "pytest-aiohttp",
    "anyio_backend": "anyio",
    "fs": "pyfakefs",
    "xprocess": "pytest-xprocess",
}
# options of well-known plugins that addopts often names
OPTION_PLUGINS = {
    "--cov": "pytest-cov",
    "--benchmark": "pytest-benchmark",
    "--mypy": "pytest-mypy",
    "--doctest-plus": "pytest-doctestplus",
    "--reruns": "pytest-rerunfailures",
    "--hypothesis": "hypothesis",
    "--asyncio-mode": "pytest-asyncio",
    "--randomly": "pytest-randomly",
    "--flake8": "pytest-flake8",
}
MAX_PROBLEMS = 10


def _location(text: str, start: int, end: int) -> str:
    """The innermost ``path:line: in`` of the traceback, outside the standard library."""
    locs = [m.group("loc") for m in AT_RE.finditer(text, start, end)]
    own = [x for x in locs if not ("/lib/python3" in x and "site-packages" not in x)]
    return (own or locs or [""])[-1]


def _missing_modules(text: str) -> list[SetupProblem]:
    out = []
    for w in WHILE_RE.finditer(text):
        m = MODULE_RE.search(text, w.end(), w.end() + 4000)
        if not m:
            continue
        mod = m.group("mod")
        top = mod.split(".", 1)[0]
        where = _location(text, w.end(), m.start()) or w.group("file")
        in_what = "conftest" if w.group("what") == "loading conftest" else "test module"
        out.append(
            SetupProblem(
                kind="missing-module",
                name=mod,
                where=where,
                excerpt=f"{where}: ModuleNotFoundError: No module named '{mod}' (while {w.group('what')})",
                fix=f"test_requires: [{top}]  (the distribution that provides `{top}`, imported by a {in_what})",
            )
        )
    return out


WARNING_CONFIG_RE = re.compile(
    r"^ERROR: while parsing the following warning configuration:\s*\n\s*\n\s*(?P<filter>[^\n]+)", re.M
)


def _warning_filters(text: str) -> list[SetupProblem]:
    """A ``filterwarnings`` entry whose category lives in a module that is not installed."""
    out = []
    for w in WARNING_CONFIG_RE.finditer(text):
        m = re.search(r"ModuleNotFoundError: No module named '(?P<mod>[\w.]+)'", text[w.end() : w.end() + 4000])
        if m:
            mod = m.group("mod")
            out.append(
                SetupProblem(
                    kind="missing-module",
                    name=mod,
                    where=f"filterwarnings: {w.group('filter').strip()}",
                    excerpt=f"ModuleNotFoundError: No module named '{mod}' (a filterwarnings entry names it)",
                    fix=f"test_requires: [{mod.split('.', 1)[0]}]  (or drop that filterwarnings entry "
                    'with pytest_args: ["-W", "default"])',
                )
            )
    return out


COMMAND_RE = re.compile(r"\A\$ (?P<cmd>[^\n]*)\n(?:# cwd: (?P<cwd>[^\n]*)\n)?")
ROOTDIR_RE = re.compile(r"^rootdir: (?P<rootdir>[^\n,]+)(?:, configfile: (?P<cf1>[^\n,]+))?$", re.M)
CONFIGFILE_RE = re.compile(r"^configfile: (?P<cf>[^\n]+)$", re.M)


def config_outside(text: str) -> SetupProblem | None:
    """A pytest that took its configuration from another file than the one the harness named
    with ``-c`` (or, with none named, from outside its rootdir): pytest 8 does not read pytest 9's
    ``[tool.pytest]`` and walks up to the first config above the package (ujson 6.1.0 ran under
    the outer project's ``--strict-markers``). The harness's setup error, never the package's."""
    head = text[:20000]
    m, r = COMMAND_RE.match(head), ROOTDIR_RE.search(head)
    if not m or not r:
        return None
    c = CONFIGFILE_RE.search(head, r.end())
    found = r.group("cf1") or (c.group("cf") if c and c.start() - r.end() < 3 else "")
    if not found:
        return None
    rootdir = r.group("rootdir").strip()
    took = os.path.normpath(os.path.join(rootdir, found.strip()))
    try:
        argv = shlex.split(m.group("cmd"))
    except ValueError:
        return None
    named = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-c"), "")
    if named:
        want = os.path.normpath(os.path.join(m.group("cwd") or rootdir, named))
        if took == want:
            return None
    elif not os.path.relpath(took, rootdir).startswith(".."):
        return None
    return SetupProblem(
        kind="config-outside",
        name=took,
        where=f"rootdir {rootdir}",
        excerpt=f"pytest read its configuration from {took}"
        + (f", not {named}" if named else f", outside its rootdir {rootdir}"),
        fix="a harness setup error (the package's own config, or an empty one, must be named with -c)",
    )


def find_setup_problems(text: str) -> tuple[SetupProblem, ...]:
    """Every distinct setup problem in a pytest log, in the order they appear."""
    found: list[SetupProblem] = _missing_modules(text) + _warning_filters(text)
    outside = config_outside(text)
    if outside:
        found.insert(0, outside)
    for m in PLUGIN_RE.finditer(text):
        mod, plugin = m.group("mod"), m.group("plugin")
        top = mod.split(".", 1)[0]
        found.append(
            SetupProblem(
                kind="missing-module",
                name=mod,
                where=f"the plugin {plugin} (pytest_plugins or -p)",
                excerpt=m.group(0),
                fix=f"test_requires: [{top}]  (the distribution that provides `{top}`; when it is "
                f"installed, its install does not ship `{mod}`: the suite needs the source tree)",
            )
        )
    for m in FIXTURE_RE.finditer(text):
        name = m.group("name")
        plugin = FIXTURE_PLUGINS.get(name)
        found.append(
            SetupProblem(
                kind="missing-fixture",
                name=name,
                where=_before_file(text, m.start()),
                excerpt=f"fixture '{name}' not found",
                fix=f"test_requires: [{plugin}]"
                if plugin
                else f"test_requires: [<the plugin that provides the '{name}' fixture>]",
            )
        )
    for m in ARGS_RE.finditer(text):
        args = m.group("args").strip()
        plugin = next((p for opt, p in OPTION_PLUGINS.items() if args.startswith(opt)), "")
        found.append(
            SetupProblem(
                kind="unknown-option",
                name=args.split()[0] if args else "",
                where="addopts",
                excerpt=m.group(0).strip(),
                fix='pytest_args: ["-o", "addopts="]' + (f" (or test_requires: [{plugin}])" if plugin else ""),
            )
        )
    for m in MARKER_RE.finditer(text):
        found.append(
            SetupProblem(
                kind="unknown-marker",
                name=m.group("name"),
                where="",
                excerpt=m.group(0),
                fix='pytest_args: ["-o", "addopts="] (its --strict-markers) or the plugin that registers the marker',
            )
        )
    for m in MARK_WARNING_RE.finditer(text):
        found.append(
            SetupProblem(
                kind="unknown-marker",
                name=m.group("name"),
                where="filterwarnings = error",
                excerpt=f"{m.group(0)} (a warning its filterwarnings makes an error)",
                fix="test_requires: [the plugin that registers the marker], or pytest_args: "
                '["-W", "ignore::pytest.PytestUnknownMarkWarning"]',
            )
        )
    seen: set[tuple[str, str]] = set()
    out = []
    for p in found:
        if (p.kind, p.name) not in seen:
            seen.add((p.kind, p.name))
            out.append(p)
    return tuple(out[:MAX_PROBLEMS])


def _before_file(text: str, at: int) -> str:
    """``file /src/tests/test_c.py, line 1`` printed above a fixture error, as path:line."""
    head = text.rfind("\nfile ", 0, at)
    if head < 0:
        return ""
    line = text[head + 6 : text.find("\n", head + 1)]
    m = re.match(r"(?P<file>.+), line (?P<line>\d+)$", line.strip())
    return f"{m.group('file')}:{m.group('line')}" if m else ""


def is_setup_message(message: str, own: frozenset[str] = frozenset()) -> bool:
    """A test's failure message that is a setup problem (its fixture or import is missing):
    also a module that could not be collected for it (parse.junit puts the error in the
    message), unless the missing module is one of the package's own (``own``: its top-level
    import names; ``pkg._speedups`` not built is the package's failure)."""
    m = re.search(r"ModuleNotFoundError: No module named '(?P<mod>[\w.]+)'", message)
    if m:
        return m.group("mod").split(".", 1)[0] not in own
    return bool(re.search(r"fixture '\w+' not found", message))
