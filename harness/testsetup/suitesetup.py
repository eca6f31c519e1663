"""The suite setup: what a job's suite runs with, field by field and where each came from,
decided once from the sdist tree before any package code runs (``read_suite``, the stage the job
calls; ``registry_skip``: a recipe's "not on this Python", asked before the fetch).

Three sources, in this order for each of the tests path, the test dependencies and the pytest
arguments:

1. matrix.yaml's entry for the package (``tests``, ``test_requires``, ``pytest_args``);
2. a community recipe (harness.testsetup.registry: the snapshot shipped in harness/data, or
   ``settings.registry``), where it holds for the sdist (harness.testsetup.recipeapply);
3. what harness.testsetup.infer reads from the sdist.

The test dependencies are an exception: a recipe's are added to what the sdist declares, never
instead of it (a recipe names what a checkout's instructions install on top of the project's
own groups: asyncpg's names uvloop, its sdist's ``test`` group distro, gssapi ...).
The pytest arguments are the other: a recipe's options (``-o addopts=``, ``-k``, ``-m``,
``-p no:NAME``, ``--deselect``, ...) are added after the inferred ones, which neutralize what
cannot work in the harness (coverage, ``-n``), so both apply.  The job records the result as
its ``test_setup`` (harness.core.suiterecord.TestSetup; ``*_from``: ``matrix.yaml``, ``recipe``,
``inferred`` or ``recipe + inferred``; ``recipe``: the registry, what was used and what did not
hold).

Where the tests run from (``RunFrom``), each with its own pytest arguments, decided here once:
the source tree (with ``--import-mode=append`` where a tests package beside the package's
directory would shadow the installed build: harness.testsetup.where.shadowing), or, when the
tests sit inside the package's own import directory, the installed copy in site-packages (no
source tree beside it, so no ``--import-mode=append`` of the harness's).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from ..core.jobspec import Package, Settings
from ..core.model import InterpreterInfo
from ..core.suiterecord import TestSetup
from . import datadirs, infer, pytestcfg, recipeapply, registry, testdeps, where
from .compiled import compiled_evidence, with_cpython_wheel
from .datadirs import DataDir
from .sdistfiles import SdistFiles

# what job/ and cli/ use of the suite setup: the stage, its result types, the pre-fetch skip, the pins
__all__ = [
    "APPEND",
    "TOOLS",
    "TOOLS_PYTEST9",
    "DataDir",
    "RunFrom",
    "SdistFiles",
    "SuiteSetup",
    "read_suite",
    "minor",
    "planned_skips",
    "registry_skip",
    "tools",
]

# The test tools every job installs, pinned so two runs test with the same tools.
TOOLS = ("pytest==8.4.2", "pytest-run-parallel==0.10.0", "pytest-xdist==3.8.0", "pytest-timeout==2.4.0")
# ... and for a suite whose config is pytest 9's native [tool.pytest] table, which pytest 8 does
# not read (pytestcfg.needs_pytest9); the plugins' same releases run under pytest 9.2.0.
TOOLS_PYTEST9 = ("pytest==9.2.0", *TOOLS[1:])
APPEND = "--import-mode=append"

# the release's file names on the index (None: not read), or how to read them when needed


class _Versioned(Protocol):
    @property
    def version(self) -> str: ...


class PlannedJob(Protocol):
    """What ``planned_skips`` reads of a job of the plan (harness.config.plan.Job)."""

    @property
    def job_id(self) -> str: ...
    @property
    def package(self) -> Package: ...
    @property
    def settings(self) -> Settings: ...
    @property
    def interpreter(self) -> _Versioned: ...


@dataclass(frozen=True, kw_only=True)
class RunFrom:
    """Where the tests are taken from: the source tree, or the installed copy."""

    tests: str  # the tests' path there
    record: TestSetup  # the job's test_setup for that layout, as the result keeps it

    @property
    def pytest_args(self) -> tuple[str, ...]:
        """The package's pytest arguments for that layout (one copy: the record's)."""
        return self.record.pytest_args


@dataclass(frozen=True, kw_only=True)
class SuiteSetup:
    """How the suite is installed and run, decided once from the source tree before the install."""

    test_deps: tuple[str, ...]  # inferred, installed in their own step after the package
    tools: tuple[str, ...]  # the pinned test tools (pytest 9 for a [tool.pytest] config)
    tox: bool  # the package's runner is tox
    has_tests: bool
    config: str  # the pytest config file pytest would pick, relative to the tree ("" none)
    compiled: str  # why the sdist builds extension modules ("" not, or not checked)
    at_source: RunFrom
    installed: RunFrom | None  # the tests ship inside the package: from site-packages, if there
    files: SdistFiles  # the sdist's config files, read once (the wheel store's static requirements too)
    data_dirs: tuple[DataDir, ...] = ()  # sdist data the package reads beside itself


def tools(pytest9: bool) -> tuple[str, ...]:
    """The pinned test tools for a suite (pytest 9 only where its config needs it)."""
    return TOOLS_PYTEST9 if pytest9 else TOOLS


def minor(interp: InterpreterInfo) -> str:
    """``3.13`` for an interpreter of version 3.13.5."""
    return ".".join(interp.version.split(".")[:2])


def read_suite(
    tree: Path, package: Package, settings: Settings, python: InterpreterInfo, index_files: Sequence[str] | None = None
) -> SuiteSetup:
    """The suite setup of ``package`` from its sdist ``tree`` on ``python``: read once, before
    any package code ran. ``index_files``: the release's files on the index (a compiled
    project's pure wheels are a fallback only when it lists a compiled CPython wheel)."""
    files = SdistFiles.read(tree)
    major_minor = minor(python)
    env = {
        **infer.TARGET_ENV,
        "python_version": major_minor,
        "python_full_version": python.version,
        "implementation_version": python.version,
    }
    inferred, found = infer.infer_with_config(tree, files, package.name, env)
    rec = _recipe(tree, files, package.name, settings, major_minor, env)
    tests, tests_from = _pick(package.tests, rec.tests if rec else "", inferred.tests)
    requires, requires_from = _requires(package.test_requires, rec.requires if rec else (), inferred.requires)
    args, args_from = _args(package.pytest_args, rec.pytest_args if rec else (), inferred.pytest_args)
    deps, urls = testdeps.url_references(() if package.test_requires else requires)
    config = found if tests == inferred.tests else pytestcfg.pytest_config(tree, tests, [], files)  # found once
    pins = tools(pytestcfg.needs_pytest9(files, config))
    applied, notes = _recipe_notes(rec, settings)
    notes = [
        *(
            f"not installed: {u} (a direct URL reference; list it in the package's test_requires "
            "in matrix.yaml to install it)"
            for u in urls
        ),
        *notes,
    ]  # fetched only when matrix.yaml asks
    if pins != TOOLS:
        notes.append(f"{pins[0]}: its config is pytest 9's [tool.pytest] table, which pytest 8 does not read")
    if not package.pytest_args:  # matrix.yaml's own pytest args are taken as they are
        args = (*args, *pytestcfg.typed_strings(files, config, notes))
        args = (*args, *pytestcfg.thread_unsafe_fixtures(config, (_name(r) for r in requires), notes))
    record = TestSetup(
        tests=tests,
        tests_from=tests_from,
        requires=tuple(package.test_requires or deps),
        requires_from=requires_from,
        pytest_args=args,
        pytest_args_from=args_from,
        sources=(*inferred.sources, *notes),
        recipe=applied,
    )
    tox = package.runner == "tox"
    in_package = None if tox else where.tests_in_package(tree, tests)
    has_tests = where.has_tests(tree, tests)
    if has_tests and not tests and rec is not None and rec.no_suite:  # no tests dir, and the recipe agrees
        has_tests = False
        record = replace(
            record,
            sources=(
                *record.sources,
                f"no Python test suite: the recipe says so ({rec.no_suite}) "
                "and the sdist has no tests dir; the *_test.py files at its root are not run",
            ),
        )
    return SuiteSetup(
        test_deps=tuple(deps),
        tools=pins,
        tox=tox,
        has_tests=has_tests,
        config=config[0] if config else "",
        compiled="" if package.is_local or tox else _compiled(tree, files, index_files),
        at_source=_at_source(tree, package, record, len(inferred.sources)),
        installed=_installed(in_package, record) if in_package else None,
        data_dirs=() if tox else datadirs.find(tree, package.name, tests),
        files=files,
    )


def _pick(own: Any, from_recipe: Any, inferred: Any) -> tuple[Any, str]:
    if own:
        return own, "matrix.yaml"
    if from_recipe:
        return from_recipe, "recipe"
    return inferred, "inferred"


def _args(own: Sequence[str], from_recipe: Sequence[str], inferred: Sequence[str]) -> tuple[tuple[str, ...], str]:
    """matrix.yaml's pytest args, else the inferred ones with the recipe's added after them."""
    if own:
        return tuple(own), "matrix.yaml"
    if from_recipe:
        return (*inferred, *from_recipe), "recipe + inferred" if inferred else "recipe"
    return tuple(inferred), "inferred"


def _at_source(tree: Path, package: Package, record: TestSetup, at: int) -> RunFrom:
    """The tests run from the source tree: with ``--import-mode=append`` (said after the
    inferred notes, at ``at``) where the tree would shadow the installed build and matrix.yaml
    gave no pytest args of its own."""
    shadow = where.shadowing(tree, record.tests, package.name)
    if shadow and not package.pytest_args:
        s = record.sources
        record = replace(record, pytest_args=(*record.pytest_args, APPEND), sources=(*s[:at], shadow, *s[at:]))
    return RunFrom(tests=record.tests, record=record)


def _installed(rel: str, record: TestSetup) -> RunFrom:
    """The tests run from site-packages/``rel``: no source tree beside them to shadow the build,
    so no ``--import-mode=append`` but where matrix.yaml's own args name it."""
    args = record.pytest_args
    if record.pytest_args_from != "matrix.yaml":
        args = tuple(a for a in args if a != APPEND)
    why = (
        f"tests run from the installed copy: site-packages/{rel} (they sit inside the package, "
        "which the install ships; from the source tree pytest would load the source's package)"
    )
    return RunFrom(tests=rel, record=replace(record, tests=rel, pytest_args=args, sources=(*record.sources, why)))


def _compiled(tree: Path, files: SdistFiles, index_files: Sequence[str] | None) -> str:
    """Why the sdist builds extension modules, "" when it does not or when the index lists no
    compiled CPython wheel of the release (its pure wheels are all CPython gets)."""
    evidence = compiled_evidence(tree, files)
    if not evidence:
        return ""
    return with_cpython_wheel(evidence, index_files) if index_files is not None else evidence  # None: unread


# ------------------------------------------------------------------ the community recipe


def recipe_of(settings: Settings, name: str) -> tuple[registry.Registry, registry.Recipe] | None:
    """The package's recipe in the job's registry, if it has one (None when recipes are off)."""
    if settings.registry is registry.OFF:
        return None
    reg = registry.load(settings.registry or registry.SHIPPED_NAME)
    rec = reg.get(name)
    return (reg, rec) if rec is not None else None


def _recipe(
    tree: Path, files: SdistFiles, name: str, settings: Settings, major_minor: str, env: Mapping[str, str]
) -> recipeapply.Applied | None:
    found = recipe_of(settings, name)
    if found is None:
        return None
    reg, recipe = found
    return recipeapply.apply(recipe, tree, name, major_minor, registry=reg.label, environment=env, files=files)


def _recipe_notes(rec: recipeapply.Applied | None, settings: Settings) -> tuple[dict[str, Any], list[str]]:
    """(the record's ``recipe``, the notes on what of it was used and what did not hold)."""
    if rec is None:
        return {}, []
    not_held = list(rec.not_held)
    if rec.timeout and rec.timeout > settings.job_timeout:
        not_held.append(
            f"timeout {rec.timeout}s for the suite is past settings.job_timeout "
            f"({settings.job_timeout}s): the budget may end before every mode ran"
        )
    notes = [f"recipe ({rec.registry}): {u}" for u in rec.used]
    notes += [f"recipe ({rec.registry}), not used: {n}" for n in not_held]
    return {**rec.to_dict(), "not_held": not_held}, notes


def registry_skip(pkg: Package, settings: Settings, major_minor: str) -> TestSetup | None:
    """The test setup of a job the registry says not to run on Python ``major_minor`` (its
    ``skip_versions``), before anything is fetched; None: run it."""
    found = recipe_of(settings, pkg.name)
    if found is None:
        return None
    reg, rec = found
    why = recipeapply.skip_reason(rec, major_minor)
    if not why:
        return None
    entry = recipeapply.Applied(
        registry=reg.label, skip=why, timeout=rec.timeout, used=(f"skip on {major_minor}: {why}",)
    )
    return TestSetup(recipe=entry.to_dict(), sources=(f"recipe ({reg.label}): not run on {major_minor}: {why}",))


def planned_skips(jobs: Iterable[PlannedJob]) -> list[str]:
    """``job_id: not run: recipe (...): not run on 3.15: ...`` for each job of a plan the registry
    skips, where the interpreter's version is known before the run (an installed ``python:``
    without one is told when its job runs)."""
    out = []
    for j in jobs:
        v = Version(j.interpreter.version) if j.interpreter.version else None
        skip = registry_skip(j.package, j.settings, f"{v.major}.{v.minor}") if v and not j.package.unresolved else None
        if skip:
            out.append(f"{j.job_id}: not run: {skip.sources[0]}")
    return out


def _requires(own: Sequence[str], from_recipe: Sequence[str], inferred: Sequence[str]) -> tuple[tuple[str, ...], str]:
    """matrix.yaml's test deps, else the sdist's with the recipe's added (by name, once)."""
    if own:
        return tuple(own), "matrix.yaml"
    names = {_name(r) for r in inferred}
    extra = tuple(r for r in from_recipe if _name(r) not in names)
    if not extra:
        return tuple(inferred), "inferred"
    return (*inferred, *extra), "recipe + inferred" if inferred else "recipe"


def _name(req: str) -> str:
    try:
        return canonicalize_name(Requirement(req).name)
    except InvalidRequirement:
        return req
