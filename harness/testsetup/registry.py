"""Community recipes (a registry such as laruche): the registry file read (pure: a file in, typed
recipes out), and matrix.yaml's ``settings.registry`` that names it.

A registry maps a project to a recipe written for a git checkout of it; harness.testsetup.recipeapply
checks a recipe against an sdist and keeps what holds.
"""

from __future__ import annotations

import functools
import gzip
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from ..util import safejson

SHIPPED = Path(__file__).parent.parent / "data" / "laruche-2026-03-08.json"
MAX_REGISTRY_BYTES = 64 * 1024 * 1024
MAX_RECIPE_FILES = 50_000  # packages/*.yaml of a registry checkout
OFF = None  # Settings.registry: no registry at all
SHIPPED_NAME = "shipped"  # Settings.registry: the snapshot in harness/data (the default)


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
        doc = safejson.loads(_read(p))
    except OSError as e:
        raise RegistryError(f"cannot read it: {e.strerror or e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, EOFError, gzip.BadGzipFile) as e:
        raise RegistryError(f"not JSON: {str(e).splitlines()[0]}") from None
    if not isinstance(doc, Mapping):
        raise RegistryError(f"a registry file is a JSON object, got {type(doc).__name__}")
    return _from_packages(doc.get("packages"), doc, str(p))


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
