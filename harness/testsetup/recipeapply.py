"""A community recipe (harness.testsetup.registry) applied to an sdist: evidence for a package's test setup.

Pure: a recipe plus an sdist tree in, what holds out.

A registry maps a project to a recipe written for a git checkout of it (``pip install -e . &&
pip install pytest hypothesis``, ``python -m pytest tests/unit -p no:xdist``), so a recipe is
evidence to check against the sdist, never a command to run.  ``apply`` keeps what holds:

- **test paths**: the positional arguments of the recipe's pytest command that exist in the
  sdist (the first one is the suite the harness runs; a ``cd DIR &&`` before it is followed;
  harness.testsetup.recipecmd reads the commands);
- **test deps**: the requirements of the ``pip install`` commands after the project's own
  install (those before it are build requirements for ``--no-build-isolation``), ``-r FILE``
  read from the sdist, and ``.[test]`` read as the project's extra (pyproject.toml or
  setup.cfg); the project itself, the harness's pinned tools and coverage tools dropped, and
  requirements whose marker is false for the target (harness.testsetup.reqlines' filter, the inference's own);
- **pytest options that neutralize the project's own**: ``-o``/``--override-ini``, ``-m``,
  ``-k``, ``-W``, ``--deselect``, ``--ignore``/``--ignore-glob``, ``-p no:NAME`` (not
  ``no:xdist`` or ``no:cacheprovider``: the harness manages both); every other option is left
  out and said;
- ``skip_versions[minor]``: the registry says the suite cannot run on this Python: not run,
  with the registry's reason.  A ``skip`` for every version is said, not applied: its reasons
  are about git checkouts and the registry's own 3.14/3.15 builds (pydantic-core's "requires
  maturin build", scipy's "Meson ... on 3.15": 20 of the top 100), and the harness tests the
  sdist with the wheels the index has;
- ``timeout``: recorded (the registry's seconds for the whole suite) and compared with the
  job's budget.

A recipe whose framework is not pytest (unittest, nose, ...) gives nothing but its skip.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from . import infer
from .recipecmd import command_words, inside, read_test_command, segments
from .registry import Recipe
from .reqlines import filter_reqs, project_extras, req_file
from .sdistfiles import SdistFiles

PIP_VALUE = {
    "-c",
    "--constraint",
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "--config-settings",
    "-C",
    "--only-binary",
    "--no-binary",
    "--target",
    "-t",
    "--prefix",
    "--root",
    "--src",
    "--upgrade-strategy",
    "--python-version",
    "--platform",
    "--global-option",
}


@dataclass(frozen=True, kw_only=True)
class Applied:
    """What of a recipe holds for one sdist on one Python (``apply``)."""

    registry: str  # Registry.label
    tests: str = ""  # "" = no recipe path holds
    requires: tuple[str, ...] = ()
    pytest_args: tuple[str, ...] = ()
    timeout: int | None = None
    skip: str = ""  # the registry's reason not to run on this Python; "" = run
    no_suite: str = ""  # the recipe's test framework is "none": the project has no Python test suite (why)
    used: tuple[str, ...] = ()  # what was taken, each said
    not_held: tuple[str, ...] = ()  # what was not, each with why

    def to_dict(self) -> dict[str, Any]:
        return {
            "registry": self.registry,
            "tests": self.tests,
            "requires": list(self.requires),
            "pytest_args": list(self.pytest_args),
            "timeout": self.timeout,
            "skip": self.skip,
            "used": list(self.used),
            "not_held": list(self.not_held),
        }


def skip_reason(recipe: Recipe, minor: str) -> str:
    """The registry's reason not to run the suite on Python ``minor`` ("3.15"), or ""."""
    for version, why in recipe.skip_versions:
        if version == minor:
            return why or f"the registry skips it on {minor}"
    return ""


def apply(
    recipe: Recipe,
    src: Path,
    dist: str,
    minor: str,
    *,
    registry: str,
    environment: Mapping[str, str] | None = None,
    files: SdistFiles | None = None,
) -> Applied:
    """What of ``recipe`` holds for the sdist tree ``src`` of ``dist`` on Python ``minor``."""
    used: list[str] = []
    not_held: list[str] = []
    args: tuple[str, ...]
    reqs: tuple[str, ...]
    skip = skip_reason(recipe, minor)
    if skip:
        used.append(f"skip on {minor}: {skip}")
    if recipe.skip:
        not_held.append(
            f"skip on every version ({recipe.skip_reason or 'no reason given'}): not applied, "
            "the registry's skips are about git checkouts and its 3.14/3.15 builds"
        )
    if recipe.timeout:
        used.append(f"timeout {recipe.timeout}s for the suite")
    tests, args, reqs = "", (), ()
    framework = recipe.test_framework.lower()
    if framework != "pytest":
        not_held.append(f"test framework {recipe.test_framework}: not pytest, its commands not used")
    elif recipe.test_command or recipe.install_command:
        tests, args = read_test_command(recipe.test_command, Path(src), used, not_held)
        reqs = _install_command(
            recipe.install_command, files or SdistFiles(Path(src)), dist, environment, used, not_held
        )
    return Applied(
        registry=registry,
        tests=tests,
        requires=reqs,
        pytest_args=args,
        timeout=recipe.timeout,
        skip=skip,
        no_suite=(recipe.skip_reason or "its test framework: none") if framework == "none" else "",
        used=tuple(used),
        not_held=tuple(not_held),
    )


def _install_command(
    command: str,
    files: SdistFiles,
    dist: str,
    environment: Mapping[str, str] | None,
    used: list[str],
    not_held: list[str],
) -> tuple[str, ...]:
    src = files.tree
    me = canonicalize_name(dist)
    lines: list[str] = []
    build: list[str] = []
    installed = False  # the project's own install seen: what follows is for the tests
    for seg in segments(command):
        words = command_words(seg)
        head = (
            3
            if words[:3] in (["python", "-m", "pip"], ["python3", "-m", "pip"])
            else (2 if words[:2] == ["uv", "pip"] else 1 if words[:1] in (["pip"], ["pip3"]) else 0)
        )
        if not head or words[head : head + 1] != ["install"]:
            continue
        got, own = _pip_args(words[head + 1 :], src, me, not_held)
        if own:
            installed = True
            lines += got  # `.[test]` and whatever shares the line
        elif installed:
            lines += got
        else:
            build += got
    if build:
        not_held.append(f"installed before the project (build requirements): {' '.join(build)}")
    notes: list[str] = []
    env = {**infer.TARGET_ENV, **(environment or {})}
    reqs = filter_reqs(lines, dist, project_extras(files, notes), env, notes)  # the inference's own filter
    not_held += notes
    if reqs:
        used.append(f"test deps {' '.join(reqs)}")
    return reqs


def _pip_args(argv: list[str], src: Path, me: str, not_held: list[str]) -> tuple[list[str], bool]:
    """(requirement lines, whether the project itself is among them) of one ``pip install``."""
    out: list[str] = []
    own = False
    it = iter(argv)
    for a in it:
        if a in ("-e", "--editable"):
            a = next(it, "")
        elif a.startswith("--editable="):
            a = a.partition("=")[2]
        elif a in ("-r", "--requirement") or a.startswith(("-r", "--requirement=")):
            rel = next(it, "") if a in ("-r", "--requirement") else a.partition("=")[2] or a[2:]
            f = inside(src, rel)
            if f is None or not f.is_file():
                not_held.append(f"-r {rel}: not in the sdist")
            else:
                out += req_file(src, f, set(), not_held)
            continue
        elif a.startswith("-"):
            if a in PIP_VALUE:
                next(it, "")
            continue
        if a == "." or a.startswith(".["):
            own = True
            out.append(a)
            continue
        try:
            req = Requirement(a)
        except InvalidRequirement:
            not_held.append(f"install of {a}: not a requirement of the index (a path of the checkout)")
            continue
        if canonicalize_name(req.name) == me:
            own = True
        out.append(a)
    return out, own
