"""How a package's suite is run: where its tests are, which pytest config and options, and the
command (pytest directly, or through tox) that ``harness.job.job`` runs in every test phase.
"""

from __future__ import annotations

from pathlib import Path

from ..backends.base import Workspace
from ..config.plan import Job
from ..core.model import TestCommand
from ..testsetup import pytestcfg
from .watchdog import PASS_ENV as WATCHDOG_PASS_ENV

# The test tools every job installs, pinned so two runs test with the same tools.
TOOLS = ("pytest==8.4.2", "pytest-run-parallel==0.10.0", "pytest-xdist==3.8.0", "pytest-timeout==2.4.0")
# ... and for a suite whose config is pytest 9's native [tool.pytest] table, which pytest 8 does
# not read (pytestcfg.needs_pytest9); the plugins' same releases run under pytest 9.2.0.
TOOLS_PYTEST9 = ("pytest==9.2.0", *TOOLS[1:])


def tools(pytest9: bool) -> tuple[str, ...]:
    """The pinned test tools for a suite (pytest 9 only where its config needs it)."""
    return TOOLS_PYTEST9 if pytest9 else TOOLS
TOX = ("tox==4.67.15",)


VENDORED = frozenset({"_vendored", "vendored", "_vendor", "vendor", "third_party", "_third_party"})


def has_tests(src_host: Path, tests: str) -> bool:
    """Whether ``tests`` (a file, or a dir with test_*.py / *_test.py files) is in the source.
    With no tests path (pytest searches the root), test files inside a vendored copy of another
    project (``_vendored/``, ``vendor/``, ``third_party/`` ...) are not the package's: debugpy
    1.8.22's sdist ships only pydevd's, under ``src/debugpy/_vendored/``."""
    root = src_host / tests if tests else src_host
    if root.is_file():
        return True
    if not root.is_dir():
        return False
    found = (f for pattern in ("test_*.py", "*_test.py") for f in root.rglob(pattern))
    return any(tests or not VENDORED & set(f.relative_to(root).parts[:-1]) for f in found)


def has_pytest_config(src_host: Path, tests: str) -> bool:
    """Whether pytest, started on ``tests``, finds a configuration inside the package's source
    (``pytestcfg.pytest_config``: files read without following links)."""
    return pytestcfg.pytest_config(src_host, tests, []) is not None


def pytest_options(job: Job, *, rootdir: str, config: str = "") -> tuple[str, ...]:
    """pytest's options for every test phase; rootdir and conftest search pinned to the source
    (or to the installed copy: ``installed_tests``), and the configuration always named: the
    package's own ``config`` file, else an empty one. pytest walks up from its arguments to the
    first configuration it can read; left to it, a config it cannot read (pytest 9's
    ``[tool.pytest]`` under pytest 8) or none at all sends it out of the package to whatever lies
    above ``--out`` (a pyproject.toml with ``--strict-markers``). parse.setup checks the
    ``configfile:`` line of every run against what was named."""
    cfg = ("-c", config or "/dev/null")
    opts = [f"--timeout={job.settings.test_timeout}", "-rfE", "-v",
            f"--rootdir={rootdir}", f"--confcutdir={rootdir}", *cfg]
    exprs = []
    for s in job.package.skip:
        if "::" in s.test or s.test.endswith(".py"):
            opts.append(f"--deselect={s.test}")
        else:
            exprs.append(f"not ({s.test})")
    if exprs:
        opts += ["-k", " and ".join(exprs)]
    return (*opts, *job.package.pytest_args)


def shadowing(src_host: Path, tests: str, name: str) -> str:
    """Why pytest's default import mode would import the source tree instead of the installed
    package (a tests dir that is a package, next to the package's own directory), or ""."""
    top = src_host / name.replace("-", "_").lower()
    if tests and (src_host / tests / "__init__.py").is_file() and (top / "__init__.py").is_file():
        return (f"--import-mode=append: {tests}/ is a package and {top.name}/ sits beside it, so the "
                "default mode would import the source tree, not the installed build")
    return ""


def tests_in_package(src_host: Path, tests: str) -> str | None:
    """The tests' path below the import root when they sit inside the package's own import
    directory with no ``conftest.py`` of the source outside it (``installed_tests``), else None.
    Read from the source before the install runs package code."""
    parts = Path(tests).parts if tests else ()
    for i in range(len(parts)):  # the import root: the first dir whose child is a package
        if (src_host.joinpath(*parts[: i + 1]) / "__init__.py").is_file():
            root, rel = src_host.joinpath(*parts[:i]), Path(*parts[i:])
            break
    else:
        return None
    if len(rel.parts) < 2:  # a top-level tests package is not inside the package (and may clash)
        return None
    if any((d / "conftest.py").is_file() for d in [root, *root.parents] if d == src_host or src_host in d.parents):
        return None
    return str(rel)


def installed_tests(src_host: Path, tests: str, venv_host: Path) -> tuple[Path, str] | None:
    """(site-packages dir, the tests' path in it) when the suite lives inside the package's own
    import directory (``numpy/tests``, ``src/pkg/tests``) and the install shipped it, with no
    ``conftest.py`` of the source outside that package. Run from the source tree, pytest would
    import the source's package for its conftest.py while the tests import the installed one
    (``ImportPathMismatchError``, numpy) or test the unbuilt source; run from site-packages, the
    suite tests the build. None otherwise."""
    rel = tests_in_package(src_host, tests)
    if rel is None:
        return None
    for sp in sorted(venv_host.glob("lib/python*/site-packages")):
        # the install ran package code: a link out of the venv is not followed
        if (sp / rel).is_dir() and venv_host.resolve() in (sp / rel).resolve().parents:
            return sp, str(rel)
    return None


def tox_overrides(job: Job, ws: Workspace, pins: tuple[str, ...] = TOOLS) -> list[str]:
    env = job.package.tox_env
    return ["-x", f"testenv:{env}.basepython={ws.python}",
            "-x", f"testenv:{env}.deps+={chr(10).join(pins)}",
            "-x", f"testenv:{env}.pass_env+={','.join(WATCHDOG_PASS_ENV)}"]


def command(job: Job, ws: Workspace, vpy: str, tests: str, *, src: str, config: str = "",
            pins: tuple[str, ...] = TOOLS) -> TestCommand:
    """pytest directly, or tox with the pytest arguments as posargs (its env must pass {posargs})."""
    if job.package.runner == "tox":  # the tox env's command runs pytest
        head: tuple[str, ...] = (vpy, "-m", "tox", "-e", job.package.tox_env, "--skip-pkg-install",
                                 *tox_overrides(job, ws, pins), "--")
    else:
        head = (vpy, "-P", "-m", "pytest", "-p", "no:cacheprovider")
    return TestCommand(head=head, options=pytest_options(job, rootdir=src, config=config),
                       paths=(tests,) if tests else ())
