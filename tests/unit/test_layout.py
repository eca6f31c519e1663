"""The shape of harness/ (#18): no import cycle, parse/ below the verdict, small modules.

The import graph is read from the source with ``ast``, not by importing: every ``import`` and
``from ... import`` anywhere in a module (top level, inside a function, under TYPE_CHECKING)
is an edge, since a lazy import that dodges a cycle at run time is still a cycle in the design.
``from . import x`` is an edge to the module ``pkg.x`` when there is one, and to the package's
``__init__`` only when ``x`` is a name defined there; a submodule is not taken to depend on its
package's ``__init__`` just because Python runs it first.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "harness"
MAX_LINES = 500
MAX_MAIN_LINES = 250
MAX_FUNCTION_LINES = 80  # def line to last line, decorators and nested functions included (#31)
# What parse/ must not know about: it turns logs into facts; deciding and showing come later.
PARSE_MUST_NOT_IMPORT = ("harness.verdict", "harness.config.matrix", "harness.render")


def _modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the package at ``root`` (harness/ in the checkout): dotted name -> file."""
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        rel = path.relative_to(root.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out[".".join(parts)] = path
    return out


def _is_package(name: str, modules: dict[str, Path]) -> bool:
    return modules[name].name == "__init__.py"


def _target(name: str, modules: dict[str, Path]) -> str | None:
    """The module of harness a dotted name refers to: itself, or the nearest enclosing module
    (``harness.config.matrix.Settings`` -> ``harness.config.matrix``); None outside harness."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(name: str, modules: dict[str, Path]) -> set[str]:
    """The harness modules that module ``name`` imports (see the module docstring)."""
    tree = ast.parse(modules[name].read_text(encoding="utf-8"), filename=str(modules[name]))
    package = name if _is_package(name, modules) else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (t := _target(alias.name, modules)) is not None:
                    out.add(t)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            for alias in node.names:
                full = f"{source}.{alias.name}"
                t = full if full in modules else _target(source, modules)
                if t is not None:
                    out.add(t)
    out.discard(name)
    return out


def _graph(root: Path = ROOT) -> dict[str, set[str]]:
    modules = _modules(root)
    return {name: _imports(name, modules) for name in modules}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for w in graph.get(todo.pop(), ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


# ------------------------------------------------------------------ the reader itself


def test_the_graph_reader_resolves_relative_imports_to_modules_not_packages():
    g = _graph()
    assert "harness.verdict.rules" in g and "harness.parse" in g  # packages are their __init__
    assert "harness.core.errors" in g["harness.config.matrix"]  # from ..core.errors import ConfigError
    assert "harness.core.yamlspec" in g["harness.config.matrix"]  # from . import yamlspec as y
    assert "harness.config.matrix" in g["harness.config.plan"]  # from .matrix import Interpreter, ...
    # rules' `from . import confirm` (or its equivalent) is verdict.confirm, not verdict/__init__
    assert "harness.verdict" not in g["harness.verdict.rules"]


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path / "pkg"


def test_a_package_reexport_is_a_cycle_only_when_a_submodule_needs_the_init(tmp_path):
    files = {
        "pkg/__init__.py": "from .b import f\nhelper = 1\n",
        "pkg/b.py": "from . import c\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/d.py": "from .. import c\nfrom ..b import f\n",
    }
    mutual = _graph(_tree(tmp_path / "mutual", {**files, "pkg/c.py": "from .b import f\n"}))
    assert mutual["pkg"] == {"pkg.b"} and mutual["pkg.b"] == {"pkg.c"}
    assert mutual["pkg.sub.d"] == {"pkg.c", "pkg.b"}
    assert _cycles(mutual) == [["pkg.b", "pkg.c"]]  # b <-> c: a real one
    ok = _graph(_tree(tmp_path / "ok", {**files, "pkg/c.py": "import json\n"}))
    assert _cycles(ok) == []
    looped = _graph(_tree(tmp_path / "looped", {**files, "pkg/c.py": "from . import helper\n"}))
    assert _cycles(looped) == [["pkg", "pkg.b", "pkg.c"]]  # helper lives in the __init__


def test_cycles_are_found():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


# ------------------------------------------------------------------ the rules


def test_no_import_cycle_inside_harness():
    cycles = _cycles(_graph())
    assert not cycles, "modules that import each other (directly or round a loop): " + "; ".join(
        " <-> ".join(c) for c in cycles
    )


@pytest.mark.parametrize("forbidden", PARSE_MUST_NOT_IMPORT)
def test_parse_knows_nothing_of_the_verdict_the_matrix_or_the_report(forbidden):
    g = _graph()
    parse = [m for m in g if _under(m, "harness.parse")]
    assert parse
    direct = {m: sorted(t for t in g[m] if _under(t, forbidden)) for m in parse}
    assert not {m: t for m, t in direct.items() if t}, f"parse/ imports {forbidden}"
    through = {m: sorted(t for t in _reachable(g, m) if _under(t, forbidden)) for m in parse}
    assert not {m: t for m, t in through.items() if t}, f"parse/ reaches {forbidden} indirectly"


# The matrix's parser is the plan's business: a later stage reads the values a job is made of
# from harness.core.jobspec (#45), never from harness.config.matrix.
MATRIX_READERS_NOT = ("harness.verdict", "harness.interpreters")


@pytest.mark.parametrize("folder", MATRIX_READERS_NOT)
def test_verdict_and_interpreters_do_not_import_the_matrix_parser(folder):
    g = _graph()
    mods = [m for m in g if _under(m, folder)]
    assert mods
    bad = {m: sorted(t for t in g[m] if _under(t, "harness.config.matrix")) for m in mods}
    assert not {m: t for m, t in bad.items() if t}, f"{folder} imports harness.config.matrix"


def test_main_is_only_the_parser_and_the_exit_codes():
    n = len((ROOT / "__main__.py").read_text(encoding="utf-8").splitlines())
    assert n < MAX_MAIN_LINES, f"harness/__main__.py has {n} lines (commands go in commands.py)"


def test_no_module_over_500_lines():
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in _modules().items()}
    big = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert not big, f"modules over {MAX_LINES} lines (split along a seam): {big}"


def _function_lengths(modules: dict[str, Path]) -> dict[str, int]:
    """Every function and method of ``modules`` (nested ones too): qualified name -> lines."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}.{child.name}"
                if not isinstance(child, ast.ClassDef):
                    assert child.end_lineno is not None
                    out[name] = child.end_lineno - child.lineno + 1
                visit(child, name)
            else:
                visit(child, prefix)

    for module, path in modules.items():
        visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), module)
    return out


def test_function_lengths_are_read_with_methods_and_nested_functions(tmp_path):
    text = "def f():\n    def g():\n        pass\n    return g\n\n\nclass C:\n    async def m(self):\n        pass\n"
    pkg = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": text})
    assert _function_lengths(_modules(pkg)) == {"pkg.a.f": 4, "pkg.a.f.g": 2, "pkg.a.C.m": 2}


def test_no_function_over_80_lines():
    lengths = _function_lengths(_modules())
    long = {name: n for name, n in lengths.items() if n > MAX_FUNCTION_LINES}
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split into helpers): {long}"


# ------------------------------------------------------------------ the folders (#31)

MAX_TOP_MODULES = 5  # .py files directly in harness/, __init__.py and __main__.py included
_ALL = {
    "core",
    "parse",
    "testsetup",
    "results",
    "config",
    "verdict",
    "render",
    "interpreters",
    "backends",
    "store",
    "reuse",
    "job",
    "cli",
    "util",
}
# Which folder of harness/ may import which, besides itself and the package's __init__ (which
# holds __version__ only).  Bottom up, in the pipeline's order: each folder imports only folders
# listed above it, so these rules leave no room for a cycle between folders.
LAYERS: dict[str, set[str]] = {
    "_inner": set(),  # runs inside the interpreter under test: the standard library only
    "util": set(),  # general utilities (textsafe, pool, stats, typecheck): nothing of harness
    "core": set(),  # model, evidence, testsetup, progress, errors, limits, wsfs, logcap, yamlspec, ...
    "parse": {"core"},  # logs -> facts
    "testsetup": {"core"},  # an sdist tree -> what it says about its tests
    "results": {"core", "parse"},  # result files -> the typed report
    "config": {"core", "testsetup", "results"},  # matrix.yaml -> the plan (plan reads durations)
    "verdict": {"core", "parse", "config"},  # facts -> findings (Settings: the modes asked for)
    "render": {"core", "results"},  # the report -> markdown, html, junit, the site
    "interpreters": {"core", "config"},
    "backends": {"core", "config", "interpreters"},
    "store": {"core"},  # the shared wheel store and tools layer: a cache with its own trust rules
    "reuse": {"core", "results", "config", "verdict"},  # earlier runs' results -> jobs not run again
    "job": {"core", "parse", "testsetup", "results", "config", "verdict", "interpreters", "backends", "store", "reuse"},
    "cli": _ALL,
    "__main__": _ALL,
}
for _f in set(LAYERS) - {"_inner", "util"}:  # util is below every folder but _inner
    LAYERS[_f] = LAYERS[_f] | {"util"}


def _folder(name: str) -> str:
    # harness.job.runner -> job; harness.__main__ -> __main__; harness -> harness (its __init__)
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for m, targets in graph.items():
        for t in targets:
            if _folder(m) != _folder(t) and _folder(t) != "harness":
                out.setdefault(_folder(m), set()).add(_folder(t))
    return out


def test_at_most_5_modules_at_the_top_of_harness():
    top = sorted(p.name for p in ROOT.glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, f"modules at the top of harness/ (give them a folder): {top}"


def test_every_folder_has_its_import_rules():
    folders = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    top = {p.stem for p in ROOT.glob("*.py")} - {"__init__"}
    assert folders | top <= set(LAYERS), f"no rules for {sorted((folders | top) - set(LAYERS))}"
    assert folders >= _ALL


def test_the_rules_leave_no_cycle_between_folders():
    assert _cycles({f: set(allowed) for f, allowed in LAYERS.items()}) == []


def test_imports_between_folders_follow_the_rules():
    g = _graph()
    bad = sorted(
        f"{m} -> {t}"
        for m, targets in g.items()
        for t in targets
        if _folder(m) != _folder(t) and _folder(t) != "harness" and _folder(t) not in LAYERS[_folder(m)]
    )
    assert not bad, "imports the folder rules (LAYERS) do not allow: " + "; ".join(bad)


def test_no_import_cycle_between_folders():
    cycles = _cycles(_folder_graph(_graph()))
    assert not cycles, "folders that import each other: " + "; ".join(" <-> ".join(c) for c in cycles)


# ------------------------------------------------------------------ one name, one thing (#45)

# Module names that may appear in more than one folder, each with the folders it may be in: one
# subject, and the folder says which step of it the module is.  Any other name in two folders
# (a module, or a module and a package of harness/) is a clash: rename one of the two.
SHARED_NAMES: dict[str, set[str]] = {
    # parse/ reads a failed build's log for what its machine lacked; verdict/ decides from that
    # fact that the machine, not the package, failed the install.
    "buildenv": {"parse", "verdict"},
    # parse/ reads ThreadSanitizer's logs into reports; verdict/ turns the reports into findings
    # (the job's TSan environment is job/tsanenv).
    "tsan": {"parse", "verdict"},
    # the import probe: _inner/ is the script run by the interpreter under test (copied into the
    # workspace by its file name), parse/ reads the probe.json it writes.
    "probe": {"_inner", "parse"},
    # what a run tells whoever watches it: core/ the interface (the runner imports no CLI), cli/
    # the terminal's implementation of it.
    "progress": {"core", "cli"},
    # the test-deps phase: testsetup/ which inferred test dependencies to install, parse/ which
    # of them did not install (the phase's record).
    "testdeps": {"parse", "testsetup"},
}


def _names(root: Path = ROOT) -> dict[str, set[str]]:
    """Each module basename (and each package of harness/) -> the folders it is in ("" for the
    top of harness/).  A module named as its own folder (interpreters/interpreters.py) is that
    folder's one name, not a clash."""
    out: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        folder = path.parent.relative_to(root).as_posix()
        folder = "" if folder == "." else folder
        name = folder.rpartition("/")[2] if path.name == "__init__.py" else path.stem
        if path.name == "__init__.py":
            folder = folder.rpartition("/")[0]
        elif name == folder.rpartition("/")[2]:
            continue
        if name:
            out.setdefault(name, set()).add(folder)
    return out


def test_names_are_read_with_packages_and_own_folder_names(tmp_path):
    pkg = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a/__init__.py": "",
            "pkg/a/x.py": "",
            "pkg/a/a.py": "",
            "pkg/b/__init__.py": "",
            "pkg/b/x.py": "",
            "pkg/b/a.py": "",
        },
    )
    assert _names(pkg) == {"a": {"", "b"}, "b": {""}, "x": {"a", "b"}}


def test_no_module_name_in_two_folders():
    clashes = {n: f for n, f in _names().items() if len(f) > 1}
    bad = {n: sorted(f) for n, f in clashes.items() if not f <= SHARED_NAMES.get(n, set())}
    assert not bad, f"names in more than one folder (rename one, or say why in SHARED_NAMES): {bad}"


# ------------------------------------------------------------------ verdict/ is pure (#45)

# verdict/ decides from facts: it reads no file and runs nothing.  What is checkable from the
# source: no module of verdict/ imports one of these, and none calls one of these names (a file
# opened, read, written, walked or tested for existence).  The exceptions, each with its reason:
VERDICT_MUST_NOT_IMPORT = (
    "os",
    "subprocess",
    "shutil",
    "tempfile",
    "glob",
    "io",
    "tarfile",
    "zipfile",
    "pathlib",
    "urllib",
    "socket",
)
VERDICT_IO_CALLS = (
    "open",
    "read_text",
    "read_bytes",
    "write_text",
    "write_bytes",
    "glob",
    "rglob",
    "iterdir",
    "walk",
    "exists",
    "is_file",
    "is_dir",
    "stat",
    "scandir",
    "listdir",
    "mkdir",
    "unlink",
    "rename",
    "run",
    "Popen",
    "system",
)
# No exception: artifact.compiled_evidence (it walks the sdist) is testsetup/compiled's now.
VERDICT_IO_ALLOWED: set[tuple[str, str]] = set()


def _io_uses(name: str, path: Path) -> list[str]:
    """``module: import X`` and ``module.function: X(...)`` for every I/O import and call."""
    out: list[str] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            at = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                at = f"{where}.{child.name}"
            if isinstance(child, ast.Import):
                mods = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom) and not child.level:
                mods = [child.module or ""]
            else:
                mods = []
            for m in mods:
                top = m.partition(".")[0]
                if top in VERDICT_MUST_NOT_IMPORT and (name, top) not in VERDICT_IO_ALLOWED:
                    out.append(f"{name}: import {m}")
            if isinstance(child, ast.Call):
                f = child.func
                called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                if called in VERDICT_IO_CALLS and not any(
                    (at == w or at.startswith(w + ".")) and not n for w, n in VERDICT_IO_ALLOWED
                ):
                    out.append(f"{at}: {called}(...)")
            visit(child, at)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), name)
    return out


def test_io_uses_are_found(tmp_path):
    text = (
        "import os\nfrom pathlib import Path\nimport json\n\n\ndef f(p):\n"
        "    return Path(p).read_text() + json.dumps(open(p).read())\n"
    )
    pkg = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": text})
    assert _io_uses("pkg.a", pkg / "a.py") == [
        "pkg.a: import os",
        "pkg.a: import pathlib",
        "pkg.a.f: read_text(...)",
        "pkg.a.f: open(...)",
    ]


def test_verdict_does_no_io():
    mods = {n: p for n, p in _modules().items() if _under(n, "harness.verdict")}
    assert mods
    found = [u for n, p in sorted(mods.items()) for u in _io_uses(n, p)]
    assert not found, "I/O in verdict/ (it goes in job/ or testsetup/): " + "; ".join(found)


# The suite setup is one stage (#45): the job reaches testsetup/ through its entry point only
# (harness.testsetup.suitesetup: read_suite and its result types, and the recipe's pre-fetch skip).
SETUP_ENTRY = "harness.testsetup.suitesetup"


def test_the_job_reaches_the_suite_setup_through_its_entry_point_only():
    g = _graph()
    bad = sorted(
        f"{m} -> {t}"
        for m, targets in g.items()
        for t in targets
        if _folder(m) in ("job", "cli", "__main__") and _folder(t) == "testsetup" and t != SETUP_ENTRY
    )
    assert not bad, f"import the suite setup from {SETUP_ENTRY} only: " + "; ".join(bad)


# What job/ takes from the setup stage: the one call (read_suite) and the values it returns.  So one
# job's walk through a run crosses into testsetup/ once and back once (#45, acceptance 1); the
# recipe registry's pre-fetch skip is decided for the plan (config.plan.with_skips), not by the job.
JOB_TAKES_FROM_SETUP = {"read_suite", "SuiteSetup", "RunFrom", "DataDir", "TOOLS"}


def test_a_job_calls_into_the_suite_setup_once():
    mods = {n: p for n, p in _modules().items() if _under(n, "harness.job")}
    taken = {}
    for n, p in mods.items():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("testsetup.suitesetup"):
                taken[n] = {a.name for a in node.names}
    assert taken and all(names <= JOB_TAKES_FROM_SETUP for names in taken.values()), taken
    calls = [
        n
        for n, p in mods.items()
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "read_suite"
    ]
    assert calls == ["harness.job.stages"], calls  # one call site: the suite-setup stage


# tests/unit/ mirrors harness/ (#45): a folder per package of harness/, the tests of a module in
# its package's folder; besides them, the repository's other code (benchmarks/, tools/), and at
# the top the tests of the whole (this file, the docs, packaging, tiers, workflows).
UNIT = Path(__file__).resolve().parent
NOT_HARNESS = {"benchmarks", "tools"}
UNTESTED_HERE = {"_inner"}  # scripts run inside a job's interpreter: the integration tests run them


def test_the_unit_tests_mirror_the_package():
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    folders = {p.name for p in UNIT.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders - NOT_HARNESS <= packages, f"not a folder of harness/: {sorted(folders - NOT_HARNESS - packages)}"
    assert packages - UNTESTED_HERE <= folders, f"no tests/unit/ folder: {sorted(packages - UNTESTED_HERE - folders)}"
    assert all((UNIT / f / "__init__.py").is_file() for f in folders)


# The wheel store is one step with one entry point (#56): the rest of the harness reaches
# harness/store/ through harness.store.take alone (its verb take_or_build and the values it
# returns), so the store's policy and mechanism stay in store/ and a job's walk crosses into
# it once. The backends name the store's root only (harness.core.stored), not store/.
STORE_ENTRY = "harness.store.take"


def test_the_store_is_reached_through_its_one_entry_point():
    g = _graph()
    reached = sorted(
        f"{m} -> {t}" for m, targets in g.items() for t in targets if _folder(m) != "store" and _folder(t) == "store"
    )
    assert reached, "nothing reaches the store"
    bad = [r for r in reached if not r.endswith(f" -> {STORE_ENTRY}")]
    assert not bad, f"reach harness/store/ through {STORE_ENTRY} only: " + "; ".join(bad)


def test_a_job_asks_the_store_once():
    """One call of the verb in job/ (the job's port, harness.job.wheelsteps.prepare)."""
    calls = [
        n
        for n, p in _modules().items()
        if _under(n, "harness.job")
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "take_or_build"
    ]
    assert calls == ["harness.job.wheelsteps"], calls
