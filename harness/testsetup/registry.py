"""Community recipes (a registry such as laruche) as evidence for a package's test setup.

Pure: a registry file in, typed recipes out; a recipe plus an sdist tree in, what holds out.

A registry maps a project to a recipe written for a git checkout of it (``pip install -e . &&
pip install pytest hypothesis``, ``python -m pytest tests/unit -p no:xdist``), so a recipe is
evidence to check against the sdist, never a command to run.  ``apply`` keeps what holds:

- **test paths**: the positional arguments of the recipe's pytest command that exist in the
  sdist (the first one is the suite the harness runs; a ``cd DIR &&`` before it is followed);
- **test deps**: the requirements of the ``pip install`` commands after the project's own
  install (those before it are build requirements for ``--no-build-isolation``), ``-r FILE``
  read from the sdist, and ``.[test]`` read as the project's extra (pyproject.toml or
  setup.cfg); the project itself, the harness's pinned tools and coverage tools dropped, and
  requirements whose marker is false for the target (harness.testsetup.infer's filter);
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

import functools
import gzip
import io
import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from . import infer
from .sdistfiles import SdistFiles

SHIPPED = Path(__file__).parent.parent / "data" / "laruche-2026-03-08.json"
MAX_REGISTRY_BYTES = 64 * 1024 * 1024
MAX_RECIPE_FILES = 50_000  # packages/*.yaml of a registry checkout
OFF = None  # Settings.registry: no registry at all
SHIPPED_NAME = "shipped"  # Settings.registry: the snapshot in harness/data (the default)

# pytest options kept from a recipe: they neutralize or narrow the project's own config
KEEP_VALUE = {
    "-o",
    "--override-ini",
    "-m",
    "-k",
    "-W",
    "--pythonwarnings",
    "--deselect",
    "--ignore",
    "--ignore-glob",
    "-p",
}
# pytest options left out that take a value (so the value is not read as a test path)
DROP_VALUE = {
    "-n",
    "--numprocesses",
    "--timeout",
    "--tb",
    "--durations",
    "--durations-min",
    "-c",
    "--config-file",
    "--rootdir",
    "--confcutdir",
    "--maxfail",
    "--junitxml",
    "--junit-xml",
    "--cov",
    "--cov-report",
    "--cov-config",
    "-r",
    "--log-level",
    "--log-cli-level",
    "--basetemp",
    "--import-mode",
    "--dist",
    "--reruns",
    "--reruns-delay",
    "--color",
    "--capture",
    "--randomly-seed",
    "--timeout-method",
    "--maxprocesses",
    "--max-worker-restart",
}
HARNESS_PLUGINS = {"no:xdist", "no:cacheprovider"}  # the harness decides these per phase
# the harness's own plugins (threads, timeouts, its watchdog, JUnit, crash dumps): a recipe's
# `-p no:<one of them>` would make the threaded runs fail or see nothing (#46; marisa-trie's)
OWN_PLUGINS = {
    "run-parallel",
    "run_parallel",
    "pytest_run_parallel",
    "timeout",
    "pytest_timeout",
    "ft_harness_watchdog",
    "tsan_marker",
    "junitxml",
    "faulthandler",
    "xdist",
}
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
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


class RegistryError(ValueError):
    """A registry file that cannot be read as one (the caller adds the file and the key)."""


@dataclass(frozen=True, kw_only=True)
class Recipe:
    name: str
    install_command: str = ""
    test_command: str = ""
    test_framework: str = "pytest"
    timeout: int | None = None
    skip: bool = False
    skip_reason: str = ""
    skip_versions: tuple[tuple[str, str], ...] = ()
    enriched: bool = False

    @classmethod
    def from_dict(cls, name: str, d: Any) -> Recipe:
        where = f"packages.{name}"
        if not isinstance(d, Mapping):
            raise RegistryError(f"{where} must be a mapping, got {type(d).__name__}")

        def text(key: str) -> str:
            v = d.get(key)
            if v is not None and not isinstance(v, str):
                raise RegistryError(f"{where}.{key} must be a string or null, got {type(v).__name__}")
            return v or ""

        timeout = d.get("timeout")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int) or timeout <= 0):
            raise RegistryError(f"{where}.timeout must be a positive integer or null, got {timeout!r}")
        sv = d.get("skip_versions") or {}
        if not isinstance(sv, Mapping) or not all(isinstance(v, (str, type(None))) for v in sv.values()):
            raise RegistryError(f'{where}.skip_versions must map a version ("3.15") to a reason')
        return cls(
            name=name,
            install_command=text("install_command"),
            test_command=text("test_command"),
            test_framework=text("test_framework") or "pytest",
            timeout=timeout,
            skip=bool(d.get("skip")),
            skip_reason=text("skip_reason"),
            skip_versions=tuple((str(k), v or "") for k, v in sv.items()),
            enriched=bool(d.get("enriched")),
        )


@dataclass(frozen=True, kw_only=True)
class Registry:
    name: str = "laruche"
    source: str = ""  # where it is kept (a URL)
    commit: str = ""
    date: str = ""
    file: str = ""  # what it was read from
    recipes: Mapping[str, Recipe] = field(default_factory=dict)  # canonical name -> recipe

    @property
    def label(self) -> str:
        """``laruche 2026-03-08 (204de34)``: what a result names as its recipe's origin."""
        bits = [self.name, self.date, f"({self.commit[:7]})" if self.commit else ""]
        return " ".join(b for b in bits if b) or Path(self.file).name

    def get(self, name: str) -> Recipe | None:
        return self.recipes.get(canonicalize_name(name))


def _from_packages(packages: Any, head: Mapping[str, Any], file: str) -> Registry:
    if not isinstance(packages, Mapping):
        raise RegistryError("no 'packages' mapping (project name -> recipe)")
    recipes: dict[str, Recipe] = {canonicalize_name(str(k)): Recipe.from_dict(str(k), v) for k, v in packages.items()}
    meta = {k: str(head.get(k) or "") for k in ("name", "source", "commit")}
    return Registry(
        name=meta["name"] or "laruche",
        source=meta["source"],
        commit=meta["commit"],
        date=str(head.get("commit_date") or head.get("date") or ""),
        file=file,
        recipes=recipes,
    )


def _read(p: Path) -> bytes:
    if p.stat().st_size > MAX_REGISTRY_BYTES:
        raise RegistryError(f"larger than {MAX_REGISTRY_BYTES} bytes")
    raw = p.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as g:
            raw = g.read(MAX_REGISTRY_BYTES + 1)
        if len(raw) > MAX_REGISTRY_BYTES:
            raise RegistryError(f"larger than {MAX_REGISTRY_BYTES} bytes uncompressed")
    return raw


@functools.lru_cache(maxsize=8)
def load(path: str = SHIPPED_NAME) -> Registry:
    """The registry in ``path`` ("shipped" or "" = the snapshot in harness/data): a JSON file (maybe
    gzipped) with a ``packages`` mapping, or a laruche checkout (its ``packages/*.yaml``, or a
    directory of such files).  RegistryError says what is wrong with it."""
    p = Path(path) if path and path != SHIPPED_NAME else SHIPPED
    try:
        if p.is_dir():
            import yaml

            d = p / "packages" if (p / "packages").is_dir() else p
            files = sorted(d.glob("*.yaml"))[: MAX_RECIPE_FILES + 1]
            if not files or len(files) > MAX_RECIPE_FILES:
                raise RegistryError(f"a directory needs 1 to {MAX_RECIPE_FILES} packages/*.yaml recipes")
            packages = {}
            for f in files:
                try:
                    v = yaml.safe_load(_read(f))
                except yaml.YAMLError as e:
                    raise RegistryError(f"{f.name}: not YAML: {str(e).splitlines()[0]}") from None
                packages[str(v.get("package") or f.stem) if isinstance(v, dict) else f.stem] = v
            return _from_packages(packages, {"name": p.resolve().name if d == p else p.name}, str(p))
        doc = json.loads(_read(p))
    except OSError as e:
        raise RegistryError(f"cannot read it: {e.strerror or e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, EOFError, gzip.BadGzipFile) as e:
        raise RegistryError(f"not JSON: {str(e).splitlines()[0]}") from None
    if not isinstance(doc, Mapping):
        raise RegistryError(f"a registry file is a JSON object, got {type(doc).__name__}")
    return _from_packages(doc.get("packages"), doc, str(p))


# --------------------------------------------------------------------------- applying a recipe


@dataclass(frozen=True, kw_only=True)
class Applied:
    """What of a recipe holds for one sdist on one Python (``apply``)."""

    registry: str  # Registry.label
    tests: str = ""  # "" = no recipe path holds
    requires: tuple[str, ...] = ()
    pytest_args: tuple[str, ...] = ()
    timeout: int | None = None
    skip: str = ""  # the registry's reason not to run on this Python; "" = run
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
        tests, args = _test_command(recipe.test_command, Path(src), used, not_held)
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
        used=tuple(used),
        not_held=tuple(not_held),
    )


def _segments(command: str) -> list[list[str]]:
    """A shell command line as its simple commands (split at ``&&``, ``||``, ``;``, ``|``)."""
    lex = shlex.shlex(command, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    out: list[list[str]] = [[]]
    try:
        for tok in lex:
            if tok and set(tok) <= set("&|;()"):
                out.append([])
            else:
                out[-1].append(tok)
    except ValueError:  # an unclosed quote: nothing of it is read
        return []
    return [s for s in out if s]


def _command_words(seg: list[str]) -> list[str]:
    """A simple command without the ``NAME=value`` assignments before it."""
    i = 0
    while i < len(seg) and _ENV_ASSIGN.match(seg[i]):
        i += 1
    return seg[i:]


def _inside(src: Path, rel: str) -> Path | None:
    """``src/rel`` when it names a file or dir inside the sdist (no ``..`` out, no link)."""
    rel = rel.strip().removeprefix("./").rstrip("/")
    if not rel or rel.startswith("/") or ".." in Path(rel).parts:
        return None
    p = src / rel
    return p if not p.is_symlink() and (p.is_dir() or p.is_file()) else None


def _test_command(command: str, src: Path, used: list[str], not_held: list[str]) -> tuple[str, tuple[str, ...]]:
    cwd = ""
    for seg in _segments(command):
        if seg[0] == "cd" and len(seg) == 2:
            cwd = f"{cwd}/{seg[1]}".strip("/")
            continue
        words = _command_words(seg)
        at = next((i for i, w in enumerate(words) if w in ("pytest", "py.test") or w.endswith("/pytest")), None)
        if at is None:
            continue
        if cwd and _inside(src, cwd) is None:
            not_held.append(f"test command's `cd {cwd}`: not a directory of the sdist")
            return "", ()
        return _pytest_args(words[at + 1 :], src, cwd, used, not_held)
    if command:
        not_held.append(f"test command {command!r}: no pytest in it, not used")
    return "", ()


def _pytest_args(
    argv: list[str], src: Path, cwd: str, used: list[str], not_held: list[str]
) -> tuple[str, tuple[str, ...]]:
    keep: list[str] = []
    left_out: list[str] = []
    paths: list[str] = []
    pyargs = "--pyargs" in argv
    it = iter(argv)
    for a in it:
        opt, eq, val = (
            a.partition("=") if a.startswith("--") else (a[:2], "", a[2:]) if a.startswith("-") else (a, "", "")
        )
        if a.startswith("-") and opt in KEEP_VALUE:
            if not (eq or val):
                val = next(it, "")
            if opt == "-p" and (val in HARNESS_PLUGINS or not val.startswith("no:")):
                if val not in HARNESS_PLUGINS:  # those two the harness sets per phase: not news
                    left_out.append(f"-p {val}")
                continue
            if opt == "-p" and val.removeprefix("no:").split(".")[0] in OWN_PLUGINS:
                not_held.append(f"-p {val}: switches off a plugin of the harness's own; not applied")
                continue
            keep += [f"{opt}={val}"] if opt.startswith("--") else [opt, val]
        elif a.startswith("-"):
            if opt in DROP_VALUE and not (eq or (val and not a.startswith("--"))):
                a = f"{a} {next(it, '')}"
            left_out.append(a)
        elif pyargs:
            not_held.append(f"--pyargs {a}: a module, not a path (the harness picks where installed tests run)")
        else:
            paths.append(a)
    tests = ""
    for p in paths:
        rel = f"{cwd}/{p.removeprefix('./')}".strip("/") if cwd else p
        if "::" in rel:
            not_held.append(f"test id {rel}: the harness runs a path, not one test")
        elif _inside(src, rel) is None:
            not_held.append(f"test path {rel} not in the sdist")
        elif not tests:
            tests = rel.removeprefix("./").rstrip("/")
            used.append(f"test path {tests}")
        else:
            not_held.append(f"test path {rel} (in the sdist): the harness runs one path, {tests}")
    if keep:
        used.append(f"pytest options {shlex.join(keep)}")
    if left_out:
        not_held.append(f"pytest options left out (the harness sets its own): {' '.join(left_out)}")
    return tests, tuple(keep)


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
    for seg in _segments(command):
        words = _command_words(seg)
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
    reqs = infer._filter(lines, dist, _extras(files, notes), env, notes)  # noqa: SLF001 - the inference's own filter
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
            f = _inside(src, rel)
            if f is None or not f.is_file():
                not_held.append(f"-r {rel}: not in the sdist")
            else:
                out += infer._req_file(src, f, set(), not_held)  # noqa: SLF001
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


def _extras(files: SdistFiles, notes: list[str]) -> dict[str, list[str]]:
    """The project's extras as pyproject.toml and setup.cfg declare them (setup.py is never run)."""
    extras: dict[str, list[str]] = {}
    cfg = files.ini("setup.cfg", notes)
    if cfg is not None and cfg.has_section("options.extras_require"):
        for k in cfg["options.extras_require"]:
            extras[canonicalize_name(k)] = infer._cfg_list(  # noqa: SLF001
                infer._cfg_value(cfg, "options.extras_require", k, notes)
            )  # noqa: SLF001
    project = infer.table(files.toml("pyproject.toml", notes), "project", notes)
    for k, v in infer.table(project, "optional-dependencies", notes, "project.").items():
        extras[canonicalize_name(k)] = infer.strings(v, f"[project.optional-dependencies] {k}", notes)
    return extras


# --------------------------------------------------------------------------- matrix.yaml


def registry_setting(ctx: Any, node: Any, base: Path) -> str | None:
    """matrix.yaml's ``settings.registry``: ``false`` (no recipes) or a path to a registry,
    read now so a file that is not one is told at its line (``ctx``, ``node``: harness.core.yamlspec)."""
    from ..core import yamlspec as y

    value = y.scalar(ctx, node, "settings.registry")
    if value is False:
        return OFF
    text = y.string(ctx, node, "settings.registry")
    if text == SHIPPED_NAME:
        return text
    path = y.existing(ctx, node, "settings.registry", base, text)
    try:
        load(path)
    except RegistryError as e:
        raise ctx.fail(
            node,
            f"settings.registry names {text!r}, which is not a recipe registry: {e} "
            "(give a laruche JSON snapshot, gzipped or not, or a laruche checkout; "
            "false turns recipes off)",
        ) from None
    return path
