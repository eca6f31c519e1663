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
      factor-conditional lines skipped with a note);
   f. PKG-INFO's ``Requires-Dist: X; extra == "test"``: a ``setup.py``'s ``extras_require``,
      static only there (psutil 7.2.2's psleak), each marker evaluated for the target.

   Every value is checked for its type (a dependency group that is a string is a note, never
   its characters) and every substitution, ``-r`` chain and file read is bounded by a named
   limit (harness.core.limits); past one, a note names it.

   A self-reference (``attrs[tests]``, ``.[test]``) pulls in that extra.  Dropped: the package
   itself, the tools the harness pins (pytest, pytest-xdist, pytest-timeout,
   pytest-run-parallel), coverage tools, and requirements whose marker is false for the
   target interpreter.  An invalid line is skipped with a note, never an error.
   harness.testsetup.deplookup looks the sources up; harness.testsetup.reqlines reads their
   lines and filters them.
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

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from . import pytestcfg, testdirs
from .deplookup import conftest_deps, find_deps
from .sdistfiles import SdistFiles

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
    """What the sdist says of its tests; harness.testsetup.suitesetup makes the job's
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
    reqs, declared = find_deps(src, files, dist_name, env, notes)
    reqs += conftest_deps(src, tests, dist_name, reqs, declared, env, notes)
    config = pytestcfg.pytest_config(src, tests, notes, files)  # read once: the deps and the args both look at it
    if kept := pytestcfg.named_by_filterwarnings(config, reqs):
        reqs += kept
        notes.append(f"{', '.join(kept)} kept: a filterwarnings entry names it")
    args = pytestcfg.neutralized_addopts(config, reqs, dist_name, notes, pytestcfg.own_packages(src))
    return Inferred(tests=tests, requires=reqs, pytest_args=args, sources=tuple(notes)), config
