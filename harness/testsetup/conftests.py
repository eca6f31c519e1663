"""The third-party modules a suite's ``conftest.py`` files import unconditionally.

pytest imports every conftest.py on the way to the tests before it collects one, so a module one
of them imports that is not installed stops the whole suite ("ImportError while loading
conftest"). harness.testsetup.deplookup (step 2b of harness.testsetup.infer) installs such a module
when the sdist declares it somewhere other than the test group it picked (urllib3's ``trustme``:
``[dependency-groups] dev``).

Pure: files in, names out. Only statements at module level count, not those inside ``try:`` or
``if`` (optional imports); relative imports, the standard library and the sdist's own modules
(the package, test helpers beside a conftest) are left out.
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

from ..core.limits import note, value
from ..util.safefiles import read_regular

MAX_FILES = 50
SKIP_DIRS = {"build", "dist", "node_modules", "site-packages", "venv", "__pycache__"}


def conftest_files(src: Path, tests: str) -> list[Path]:
    """conftest.py at the source root, on the way down to the tests dir, and under it (no links
    followed, at most MAX_FILES)."""
    dirs = [src]
    root = src / tests if tests else src
    if tests and root.is_dir() and not root.is_symlink():
        dirs += [src / p for p in reversed(Path(tests).parents) if p != Path(".")]
        for dirpath, dirnames, _ in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
            dirs.append(Path(dirpath))
            if len(dirs) >= 20 * MAX_FILES:
                break
    out = [d / "conftest.py" for d in dirs]
    return [f for f in out if f.is_file() and not f.is_symlink()][:MAX_FILES]


def module_imports(path: Path, notes: list[str] | None = None) -> dict[str, int]:
    """Top-level module name -> line of its first unconditional absolute import in ``path``;
    one past ``conftest_bytes`` (harness.core.limits), or that ``ast`` cannot parse (a syntax error, or
    nesting that makes it raise RecursionError/MemoryError), gives none, with a note."""
    notes = [] if notes is None else notes
    limit = value("conftest_bytes")
    raw = read_regular(path, limit + 1)
    if raw is None:
        return {}
    if len(raw) > limit:
        notes.append(note("conftest_bytes", f"{path.name} not scanned for imports"))
        return {}
    try:
        tree = ast.parse(raw, filename=str(path))
    except (SyntaxError, ValueError):
        return {}
    except (RecursionError, MemoryError) as e:
        notes.append(f"{path.name} not scanned for imports: ast raised {type(e).__name__}")
        return {}
    found: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            found.setdefault(name.split(".", 1)[0], node.lineno)
    return found


def _local(src: Path, near: Path, mod: str) -> bool:
    """A module of the sdist itself: the package (at the root or under src/), or a helper beside
    the conftest or at the tests' import root."""
    for d in (src, src / "src", near, *near.parents):
        if d == src.parent:
            break
        if (d / mod).is_dir() or (d / f"{mod}.py").is_file():
            return True
    return False


def third_party_imports(src: Path, tests: str, notes: list[str] | None = None) -> dict[str, str]:
    """Module -> ``path:line`` (relative to ``src``) of its first import by a conftest, for the
    modules that are neither the standard library's nor the sdist's own."""
    out: dict[str, str] = {}
    for f in conftest_files(src, tests):
        for mod, line in module_imports(f, notes).items():
            if mod in out or mod in sys.stdlib_module_names or mod == "__future__":
                continue
            if not _local(src, f.parent, mod):
                out[mod] = f"{f.relative_to(src)}:{line}"
    return out
