"""What a job's suite runs with, field by field, and where each field came from.

Three sources, in this order for each of the tests path, the test dependencies and the pytest
arguments:

1. matrix.yaml's entry for the package (``tests``, ``test_requires``, ``pytest_args``);
2. a community recipe (harness.testsetup.registry: the snapshot shipped in harness/data, or
   ``settings.registry``), where it holds for the sdist;
3. what harness.testsetup.infer reads from the sdist.

The test dependencies are an exception: a recipe's are added to what the sdist declares, never
instead of it (a recipe names what a checkout's instructions install on top of the project's
own groups: asyncpg's names uvloop, its sdist's ``test`` group distro, gssapi ...).
The pytest arguments are the other: a recipe's options (``-o addopts=``, ``-k``, ``-m``,
``-p no:NAME``, ``--deselect``, ...) are added after the inferred ones, which neutralize what
cannot work in the harness (coverage, ``-n``), so both apply.  The job records the result as
its ``test_setup`` (harness.core.testsetup.TestSetup; ``*_from``: ``matrix.yaml``, ``recipe``,
``inferred`` or ``recipe + inferred``; ``recipe``: the registry, what was used and what did not
hold).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from ..config.matrix import Package, Settings
from ..config.plan import Job
from ..core.model import InterpreterInfo
from ..core.suiterecord import TestSetup
from ..testsetup import infer, registry, testdeps
from . import suite

log = logging.getLogger(__name__)


def minor(interp: InterpreterInfo) -> str:
    """``3.13`` for an interpreter of version 3.13.5."""
    return ".".join(interp.version.split(".")[:2])


def recipe_of(settings: Settings, name: str) -> tuple[registry.Registry, registry.Recipe] | None:
    """The package's recipe in the job's registry, if it has one (None when recipes are off)."""
    if settings.registry is registry.OFF:
        return None
    reg = registry.load(settings.registry or registry.SHIPPED_NAME)
    rec = reg.get(name)
    return (reg, rec) if rec is not None else None


def registry_skip(pkg: Package, settings: Settings, major_minor: str) -> TestSetup | None:
    """The test setup of a job the registry says not to run on Python ``major_minor`` (its
    ``skip_versions``), before anything is fetched; None: run it."""
    found = recipe_of(settings, pkg.name)
    if found is None:
        return None
    reg, rec = found
    why = registry.skip_reason(rec, major_minor)
    if not why:
        return None
    entry = registry.Applied(registry=reg.label, skip=why, timeout=rec.timeout,
                             used=(f"skip on {major_minor}: {why}",))
    return TestSetup(recipe=entry.to_dict(),
                     sources=(f"recipe ({reg.label}): not run on {major_minor}: {why}",))


def planned_skips(jobs: Sequence[Job]) -> list[str]:
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


def resolve(pkg: Package, settings: Settings, interp: InterpreterInfo,
            src_host: Path) -> tuple[Package, TestSetup, tuple[str, ...]]:
    """(the package with its tests path and pytest args filled where matrix.yaml is silent,
    the ``test_setup`` to record, the test dependencies to install in their own step)."""
    major_minor = minor(interp)
    env = {**infer.TARGET_ENV, "python_version": major_minor, "python_full_version": interp.version,
           "implementation_version": interp.version}
    setup = infer.infer_test_setup(src_host, pkg.name, environment=env)
    found = recipe_of(settings, pkg.name)
    rec = None
    if found is not None:
        reg, recipe = found
        rec = registry.apply(recipe, src_host, pkg.name, major_minor, registry=reg.label, environment=env)
    sources = list(setup.sources)

    def pick(own: Any, from_recipe: Any, inferred: Any) -> tuple[Any, str]:
        if own:
            return own, "matrix.yaml"
        if from_recipe:
            return from_recipe, "recipe"
        return inferred, "inferred"

    tests, tests_from = pick(pkg.tests, rec.tests if rec else "", setup.tests)
    requires, requires_from = _requires(pkg.test_requires, rec.requires if rec else (), setup.requires)
    if pkg.pytest_args:
        args, args_from = pkg.pytest_args, "matrix.yaml"
    elif rec and rec.pytest_args:
        args = (*setup.pytest_args, *rec.pytest_args)
        args_from = "recipe + inferred" if setup.pytest_args else "recipe"
    else:
        args, args_from = setup.pytest_args, "inferred"
    shadow = suite.shadowing(src_host, tests, pkg.name)
    if shadow and not pkg.pytest_args:
        args = (*args, "--import-mode=append")
        sources.append(shadow)
    deps, urls = testdeps.url_references(() if pkg.test_requires else requires)
    sources += [f"not installed: {u} (a direct URL reference; list it in the package's test_requires "
                "in matrix.yaml to install it)" for u in urls]  # fetched only when matrix.yaml asks
    applied: dict[str, Any] = {}
    if rec is not None:
        not_held = list(rec.not_held)
        if rec.timeout and rec.timeout > settings.job_timeout:
            not_held.append(f"timeout {rec.timeout}s for the suite is past settings.job_timeout "
                            f"({settings.job_timeout}s): the budget may end before every mode ran")
        applied = {**rec.to_dict(), "not_held": not_held}
        sources += [f"recipe ({rec.registry}): {u}" for u in rec.used]
        sources += [f"recipe ({rec.registry}), not used: {n}" for n in not_held]
    test_setup = TestSetup(tests=tests, tests_from=tests_from,
                           requires=tuple(pkg.test_requires or deps), requires_from=requires_from,
                           pytest_args=tuple(args), pytest_args_from=args_from,
                           sources=tuple(sources), recipe=applied)
    return replace(pkg, tests=tests, pytest_args=tuple(args)), test_setup, tuple(deps)


def _requires(own: Sequence[str], from_recipe: Sequence[str],
              inferred: Sequence[str]) -> tuple[tuple[str, ...], str]:
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
