"""matrix.yaml -> frozen dataclasses, every error carrying its file and line.

The values a job is made of (Settings, Interpreter and its Source, Package and its Skip) are
harness.core.jobspec's, so that the stages after the plan (verdict/, interpreters/) need not
import the parser; they are imported here, and ``matrix.Settings`` etc. still name them.

The YAML is composed into nodes (which keep their marks) and walked with the
typed helpers of harness.core.yamlspec, so an error can say ``matrix.yaml:14:
packages[2].threads must be a positive integer, got 'four'`` instead of a
traceback.  This module says what a matrix holds; yamlspec how a node is read.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ..core import yamlspec as y
from ..core.errors import ConfigError
from ..core.jobspec import JOB_ID_SEP, Interpreter, Package, Settings, Skip, Source, id_part
from ..testsetup.registry import registry_setting

MAX_MATRIX_BYTES = 1_000_000
RUNNERS = ("pytest", "tox")
FALLBACK_MODES = ("build", "keep")  # settings.fallback_wheel (harness.verdict.artifact)
SANITIZERS = ("thread",)
SOURCE_FORMS = "'debian:SUITE', 'tarball:PATH', 'python:PATH_OR_NAME' or a mapping {url: ..., sha256: ...}"
# A Debian suite or codename as the archive names it: trixie, forky, sid, trixie-backports.
SUITE_RE = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


@dataclass(frozen=True, kw_only=True)
class Selector:
    """``{top: N, from: FILE, extensions_only: true, exclude: [...]}`` (expanded by select.py)."""

    top: int
    source: str = ""  # absolute path of ``from:``; "" = the snapshot shipped in harness/data
    extensions_only: bool = False
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class MatrixSpec:
    file: str
    settings: Settings
    interpreters: tuple[Interpreter, ...]
    packages: tuple[Package, ...]  # the explicit entries (overrides of a selector's picks)
    selectors: tuple[Selector, ...] = ()
    digest: str = field(default="")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for it in d["interpreters"]:
            it.pop("origin", None)
        return d


# --------------------------------------------------------------------------- loader
# (the node helpers -- mapping, string, pos_int, ..., "did you mean" -- are harness.core.yamlspec)


def _settings(ctx: y.Ctx, node: yaml.Node, base: Path) -> Settings:
    keys = [
        "threads",
        "iterations",
        "repeat",
        "test_timeout",
        "job_timeout",
        "install_timeout",
        "gil_modes",
        "min_parallel_fraction",
        "confirm",
        "confirm_budget",
        "registry",
        "fallback_wheel",
        "gil_on",
        "wheel_store",
    ]
    m = y.mapping(ctx, node, "settings", keys)
    kw: dict[str, Any] = {}
    for key in ("threads", "iterations", "repeat", "test_timeout", "job_timeout", "install_timeout", "confirm_budget"):
        if key in m:
            kw[key] = y.pos_int(ctx, m[key], f"settings.{key}")
            if kw[key] > y.LIMITS[key]:
                raise ctx.fail(m[key], f"settings.{key} must be at most {y.LIMITS[key]}, got {kw[key]}")
    if "confirm" in m:
        v = y.scalar(ctx, m["confirm"], "settings.confirm")
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 100:
            raise ctx.fail(
                m["confirm"], f"settings.confirm must be an integer from 0 (off) to 100, got {y.kind(m['confirm'])}"
            )
        kw["confirm"] = v
    if "gil_modes" in m:
        modes = []
        items = y.seq(ctx, m["gil_modes"], "settings.gil_modes")
        if not items:
            raise ctx.fail(m["gil_modes"], "settings.gil_modes must list at least one of 0, 1")
        for i, n in enumerate(items):
            v = y.scalar(ctx, n, f"settings.gil_modes[{i}]")
            if isinstance(v, bool) or v not in (0, 1):
                raise ctx.fail(n, f"settings.gil_modes[{i}] must be 0 or 1, got {y.kind(n)}")
            if v in modes:
                raise ctx.fail(n, f"settings.gil_modes[{i}] repeats mode {v}")
            modes.append(v)
        kw["gil_modes"] = tuple(modes)
    if "min_parallel_fraction" in m:
        n = m["min_parallel_fraction"]
        v = y.scalar(ctx, n, "settings.min_parallel_fraction")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise ctx.fail(n, f"settings.min_parallel_fraction must be a number from 0 to 1, got {y.kind(n)}")
        kw["min_parallel_fraction"] = float(v)
    if "registry" in m:  # a file or laruche checkout, read now; false: no recipes (harness.testsetup.registry)
        kw["registry"] = registry_setting(ctx, m["registry"], base)
    if "fallback_wheel" in m:  # harness.verdict.artifact
        kw["fallback_wheel"] = y.choice(ctx, m["fallback_wheel"], "settings.fallback_wheel", FALLBACK_MODES)
    if "gil_on" in m:  # harness.verdict.gilon
        kw["gil_on"] = y.choice(ctx, m["gil_on"], "settings.gil_on", ("targeted", "full"))
    if "wheel_store" in m:  # harness.store.wheelstore
        kw["wheel_store"] = y.flag(ctx, m["wheel_store"], "settings.wheel_store")
    return Settings(**kw)


def _source(ctx: y.Ctx, node: yaml.Node, where: str, base: Path) -> Source:
    if isinstance(node, yaml.ScalarNode):
        text = y.string(ctx, node, where)
        kind, _, rest = text.partition(":")
        if kind == "debian" and rest:
            if not SUITE_RE.fullmatch(rest):
                raise ctx.fail(
                    node, f"{where} debian suite {rest!r} is not a Debian suite name (like trixie, forky, sid)"
                )
            return Source(kind="debian", suite=rest)
        if kind == "tarball" and rest:
            return Source(kind="tarball", path=y.existing(ctx, node, where, base, rest))
        if kind == "python" and rest:
            if "/" not in rest:  # a command name: looked up on PATH when the run starts
                return Source(kind="python", name=rest)
            p = Path(y.existing(ctx, node, where, base, rest))
            if not p.is_file():
                raise ctx.fail(node, f"{where} names {rest!r}, which is not a file (the interpreter's executable)")
            absolute = (base / rest).absolute()  # keep a venv's bin/python as given, not resolved
            return Source(kind="python", path=str(absolute))
        raise ctx.fail(node, f"{where} must be {SOURCE_FORMS}, got {text!r}")
    m = y.mapping(ctx, node, where, ["url", "sha256", "tarball"])
    if "url" in m and "tarball" in m:
        raise ctx.fail(node, f"{where} takes either url or tarball, not both")
    sha = y.string(ctx, m["sha256"], f"{where}.sha256") if "sha256" in m else ""
    if sha and (len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha.lower())):
        raise ctx.fail(m["sha256"], f"{where}.sha256 must be 64 hex digits, got {sha!r}")
    if "url" in m:
        url = y.string(ctx, m["url"], f"{where}.url")
        if not url.startswith(("https://", "http://")):
            raise ctx.fail(m["url"], f"{where}.url must be an http(s) URL, got {url!r}")
        if not sha:
            raise ctx.fail(node, f"{where} with a url needs sha256 (the tarball's digest)")
        return Source(kind="url", url=url, sha256=sha.lower())
    if "tarball" in m:
        tarball = y.existing(ctx, m["tarball"], f"{where}.tarball", base, y.string(ctx, m["tarball"], where))
        return Source(kind="tarball", path=tarball, sha256=sha.lower())
    raise ctx.fail(node, f"{where} needs url (with sha256) or tarball")


def _interpreter(ctx: y.Ctx, node: yaml.Node, where: str, base: Path) -> Interpreter:
    m = y.mapping(ctx, node, where, ["name", "version", "source", "configure", "sanitizer"])
    for req in ("name", "source"):
        if req not in m:
            raise ctx.fail(node, f"{where} needs '{req}'")
    source = _source(ctx, m["source"], f"{where}.source", base)
    if "version" not in m and source.builds:
        raise ctx.fail(node, f"{where} needs 'version' (the CPython version {source.describe()} builds)")
    version = y.string(ctx, m["version"], f"{where}.version") if "version" in m else ""
    if version:
        try:
            v = Version(version)
        except InvalidVersion:
            raise ctx.fail(
                m["version"], f"{where}.version must be a CPython version like 3.13.5, got {version!r}"
            ) from None
        if v.release < (3, 13):
            raise ctx.fail(m["version"], f"{where}.version {version} has no free-threaded build (3.13 or later)")
        if source.builds and len(v.release) != 3:
            raise ctx.fail(
                m["version"],
                f"{where}.version must name a release to build, like {v.release[0]}.{v.release[1]}.0, got {version!r}",
            )
    sanitizer = None
    if "sanitizer" in m:
        sanitizer = y.string(ctx, m["sanitizer"], f"{where}.sanitizer")
        if sanitizer not in SANITIZERS:
            raise ctx.fail(m["sanitizer"], f"{where}.sanitizer must be 'thread', got {sanitizer!r}")
    configure = y.strings(ctx, m["configure"], f"{where}.configure") if "configure" in m else ()
    for i, flag in enumerate(configure):
        if flag in ("--enable-gil", "--disable-gil=no"):
            raise ctx.fail(m["configure"].value[i], f"{where}.configure[{i}] {flag!r} contradicts --disable-gil")
    if not source.builds:
        for key in ("configure", "sanitizer"):
            if key in m:
                raise ctx.fail(
                    m[key],
                    f"{where}.{key} needs a source the harness builds "
                    f"(debian:, url:, tarball:); {source.describe()} is already built",
                )
    line = m["source"].start_mark.line + 1  # what goes wrong at run time is about the source
    return Interpreter(
        name=y.string(ctx, m["name"], f"{where}.name"),
        version=version,
        source=source,
        configure=configure,
        sanitizer=sanitizer,
        origin=(ctx.file, line, where),
    )


PACKAGE_KEYS = [
    "name",
    "version",
    "path",
    "tests",
    "test_requires",
    "pytest_args",
    "env",
    "runner",
    "tox_env",
    "skip",
    "notes",
    "links",
    "tsan_suppressions",
]


def _package(ctx: y.Ctx, node: yaml.Node, where: str, base: Path) -> Package:
    m = y.mapping(ctx, node, where, PACKAGE_KEYS)
    if "name" not in m:
        raise ctx.fail(node, f"{where} needs 'name'")
    name = y.string(ctx, m["name"], f"{where}.name")
    if not y.PROJECT_NAME_RE.match(name) or len(name) > y.MAX_NAME:
        raise ctx.fail(
            m["name"],
            f"{where}.name must be a PEP 508 project name (letters, digits and "
            f"'.', '_', '-' inside; at most {y.MAX_NAME} characters), got {name[:60]!r}",
        )
    kw: dict[str, Any] = {"name": name}
    if "version" in m and "path" in m:
        raise ctx.fail(m["path"], f"{where} takes either version (PyPI) or path (local), not both")
    if "version" in m:
        spec = y.string(ctx, m["version"], f"{where}.version")
        if spec[0].isdigit():
            spec = "==" + spec
        try:
            SpecifierSet(spec)
        except InvalidSpecifier:
            raise ctx.fail(m["version"], f"{where}.version is not a PEP 440 version or specifier: {spec!r}") from None
        kw["version"] = spec
    if "path" in m:
        kw["path"] = y.existing(ctx, m["path"], f"{where}.path", base, y.string(ctx, m["path"], where))
        if not Path(kw["path"]).is_dir():
            raise ctx.fail(m["path"], f"{where}.path must be a directory (a source tree)")
    _test_run(ctx, m, where, kw)
    if "runner" in m:
        kw["runner"] = y.choice(ctx, m["runner"], f"{where}.runner", RUNNERS)
    if "tox_env" in m:
        kw["tox_env"] = y.string(ctx, m["tox_env"], f"{where}.tox_env")
    if kw.get("runner") == "tox" and not kw.get("tox_env"):
        raise ctx.fail(node, f"{where} with runner: tox needs tox_env")
    if "skip" in m:
        skips = []
        for i, sn in enumerate(y.seq(ctx, m["skip"], f"{where}.skip")):
            sw = f"{where}.skip[{i}]"
            sm = y.mapping(ctx, sn, sw, ["test", "reason"])
            if "test" not in sm or "reason" not in sm:
                raise ctx.fail(sn, f"{sw} needs both 'test' and 'reason'")
            skips.append(
                Skip(test=y.string(ctx, sm["test"], f"{sw}.test"), reason=y.string(ctx, sm["reason"], f"{sw}.reason"))
            )
        kw["skip"] = tuple(skips)
    if "notes" in m:
        kw["notes"] = y.string(ctx, m["notes"], f"{where}.notes")
    if "links" in m:
        links = y.strings(ctx, m["links"], f"{where}.links")
        for i, link in enumerate(links):
            if not link.startswith(("https://", "http://")):
                raise ctx.fail(m["links"].value[i], f"{where}.links[{i}] must be an http(s) URL, got {link!r}")
        kw["links"] = links
    if "tsan_suppressions" in m:
        kw["tsan_suppressions"] = y.existing(
            ctx,
            m["tsan_suppressions"],
            f"{where}.tsan_suppressions",
            base,
            y.string(ctx, m["tsan_suppressions"], where),
        )
    return Package(**kw)


def _test_run(ctx: y.Ctx, m: dict[str, yaml.Node], where: str, kw: dict[str, Any]) -> None:
    """Into ``kw``: a package's keys that say how its tests run (tests, test_requires,
    pytest_args, env)."""
    if "tests" in m:
        kw["tests"] = y.string(ctx, m["tests"], f"{where}.tests")
    if "test_requires" in m:
        reqs = y.strings(ctx, m["test_requires"], f"{where}.test_requires")
        for i, r in enumerate(reqs):
            try:
                Requirement(r)
            except InvalidRequirement as e:
                first = str(e).splitlines()[0]
                raise ctx.fail(
                    m["test_requires"].value[i], f"{where}.test_requires[{i}] is not a requirement: {first}"
                ) from None
        kw["test_requires"] = reqs
    if "pytest_args" in m:
        kw["pytest_args"] = y.strings(ctx, m["pytest_args"], f"{where}.pytest_args")
    if "env" in m:
        em = y.mapping_any(ctx, m["env"], f"{where}.env")
        env = []
        for k, vn in em.items():
            if k in ("PYTHON_GIL", "PYTHONGIL"):
                raise ctx.fail(vn, f"{where}.env.{k} is set by the harness per mode; use settings.gil_modes")
            if not y.ENV_KEY_RE.match(k):
                raise ctx.fail(
                    vn, f"{where}.env key {k[:60]!r} is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)"
                )
            env.append((k, y.string(ctx, vn, f"{where}.env.{k}", empty_ok=True)))
        kw["env"] = tuple(env)


SELECTOR_KEYS = ["top", "from", "extensions_only", "exclude"]


def _package_entry(ctx: y.Ctx, node: yaml.Node, where: str, base: Path) -> Package | Selector:
    """A package entry, or a selector when the mapping has ``top``."""
    if isinstance(node, yaml.MappingNode) and any(
        isinstance(k, yaml.ScalarNode) and k.value == "top" for k, _ in node.value
    ):
        return _selector(ctx, node, where, base)
    return _package(ctx, node, where, base)


def _selector(ctx: y.Ctx, node: yaml.Node, where: str, base: Path) -> Selector:
    allowed = SELECTOR_KEYS + [k for k in PACKAGE_KEYS if k not in SELECTOR_KEYS]
    m = y.mapping(ctx, node, where, allowed)
    for key in m:
        if key not in SELECTOR_KEYS:
            raise ctx.fail(
                m[key],
                f"{where}.{key} is a package setting; a selector {{top: N}} "
                f"takes only {', '.join(SELECTOR_KEYS)} (give the package its "
                "own entry to override it)",
            )
    kw: dict[str, Any] = {"top": y.pos_int(ctx, m["top"], f"{where}.top")}
    if "from" in m:
        kw["source"] = y.existing(ctx, m["from"], f"{where}.from", base, y.string(ctx, m["from"], f"{where}.from"))
        if not Path(kw["source"]).is_file():
            raise ctx.fail(m["from"], f"{where}.from must be a file (top-pypi-packages JSON or one name a line)")
    if "extensions_only" in m:
        kw["extensions_only"] = y.flag(ctx, m["extensions_only"], f"{where}.extensions_only")
    if "exclude" in m:
        kw["exclude"] = y.strings(ctx, m["exclude"], f"{where}.exclude")
    return Selector(**kw)


def _job_id_parts(ctx: y.Ctx, interps: list[tuple[yaml.Node, Interpreter]]) -> None:
    """Each interpreter's part of its jobs' ids (harness.core.jobspec.id_part) its own (#56):
    two names that differ only in what the id replaces ('ft 3.13t', 'ft/3.13t') or in case (one
    file on macOS) would share every job's id, workspace and result; a part holding '--' could
    give one job another's id (interpreter 'a--b' and package 'c' vs 'a' and 'b--c'); a part
    that does not start with a letter or digit, or is over MAX_NAME, is no file name a
    manifest lists."""
    first: dict[str, int] = {}
    for i, (n, it) in enumerate(interps):
        part, where = id_part(it.name), f"interpreters[{i}].name {it.name[:60]!r}"
        if not part[0].isalnum() or len(part) > y.MAX_NAME:
            raise ctx.fail(
                n,
                f"{where} names its jobs' files ({part[:60]!r}): start it with a letter or digit and keep "
                f"it at most {y.MAX_NAME} characters",
            )
        if JOB_ID_SEP in part:
            raise ctx.fail(
                n, f"{where} holds {JOB_ID_SEP!r}, which separates interpreter and package in a job id; rename it"
            )
        j = first.setdefault(part.lower(), i)
        if j != i:
            other = interps[j][1].name
            case = " (up to case)" if id_part(other) != part else ""
            raise ctx.fail(
                n,
                f"{where} makes job ids {part + JOB_ID_SEP + '<package>'!r}, as interpreters[{j}].name "
                f"{other[:60]!r} does{case}: their jobs would share a workspace and a result; rename one "
                "(letters, digits, '.', '_', '-')",
            )


def loads(text: str, *, file: str = "matrix.yaml", base: Path | None = None) -> MatrixSpec:
    """Parse matrix text; ``file`` is only used in error messages."""
    ctx = y.Ctx(file)
    base = base or Path.cwd()
    root = y.compose(text, file)
    if root is None:
        raise ConfigError("the file is empty; it needs 'interpreters' and 'packages'", file=file, line=1)
    top = y.mapping(ctx, root, "top level", ["settings", "interpreters", "packages"])
    for req in ("interpreters", "packages"):
        if req not in top:
            raise ctx.fail(root, f"the top level needs '{req}'")
    settings = _settings(ctx, top["settings"], base) if "settings" in top else Settings()
    interps = y.each(ctx, top["interpreters"], "interpreters", _interpreter, base)
    entries = y.each(ctx, top["packages"], "packages", _package_entry, base)
    pkgs = [(n, e) for n, e in entries if isinstance(e, Package)]
    selectors = tuple(e for _, e in entries if isinstance(e, Selector))
    seen: dict[str, int] = {}
    for i, (n, it) in enumerate(interps):
        if it.name in seen:
            raise ctx.fail(n, f"interpreters[{i}].name {it.name!r} repeats interpreters[{seen[it.name]}]")
        seen[it.name] = i
    _job_id_parts(ctx, interps)
    seen = {}
    for i, (n, pk) in enumerate(entries):
        if not isinstance(pk, Package):
            continue
        key = canonicalize_name(pk.name)
        if key in seen:
            raise ctx.fail(n, f"packages[{i}].name {pk.name!r} repeats packages[{seen[key]}]")
        seen[key] = i
    spec = MatrixSpec(
        file=file,
        settings=settings,
        interpreters=tuple(it for _, it in interps),
        packages=tuple(pk for _, pk in pkgs),
        selectors=selectors,
    )
    digest = hashlib.sha256(json.dumps(spec.to_dict(), sort_keys=True).encode()).hexdigest()[:16]
    return replace(spec, digest=digest)


def load(path: str | Path) -> MatrixSpec:
    p = Path(path)
    shown = str(path)
    try:
        size = p.stat().st_size
    except FileNotFoundError:
        raise ConfigError("no such file (pass --matrix FILE)", file=shown) from None
    if p.is_dir():
        raise ConfigError("is a directory, not a matrix file", file=shown)
    if size > MAX_MATRIX_BYTES:
        raise ConfigError(
            f"the file is {size} bytes; a matrix larger than {MAX_MATRIX_BYTES} bytes is refused", file=shown, line=1
        )
    raw = p.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise ConfigError("the file is not valid UTF-8", file=shown, line=line) from None
    return loads(text, file=shown, base=p.resolve().parent)
