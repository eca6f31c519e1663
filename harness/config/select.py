"""``packages: [{top: N}]``: the most-downloaded projects, with their versions fixed once.

A selector reads a ranked list of project names (the snapshot shipped in
``harness/data/top-pypi-packages.json``, or ``from: FILE`` -- that JSON format or one name a
line), drops ``exclude``, and, with ``extensions_only``, keeps the projects whose release ships
a platform-specific wheel (a tag whose platform is not ``any``; a release with no wheels at all
cannot be told from the index and is left out).  The first ``top`` of what remains are
selected, in the list's order.

Each selected project's version is resolved once, from the index's PEP 691 JSON page: the
newest final release that has a non-yanked sdist (the tests are in the sdist).  The result is
pinned (``==X``) into the Package, so every shard of a run tests the same release; a project
that cannot be resolved (no sdist at all, everything yanked, the index failing) keeps its place
with ``Package.unresolved`` saying why -- an outcome for that package, not an error of the plan.

``expand(spec)`` gives the plan's package list: the selected projects in order, each replaced
by the matrix's explicit entry of the same name when there is one (the explicit entry wins
field by field; its own ``version``, when given, is kept and not resolved), then the explicit
entries no selector picked, as listed.  The network is used only for names that ``resolved``
(the record of an earlier plan) does not already cover.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from ..core.errors import ConfigError
from ..util import safejson
from ..util.safefiles import write_text_atomic
from . import indexclient
from .matrix import MatrixSpec, Package, Selector

log = logging.getLogger(__name__)
SNAPSHOT = Path(__file__).parent.parent / "data" / "top-pypi-packages.json"
Fetch = Callable[[str], dict[str, Any]]  # name -> PEP 691 project page; raises OSError/ValueError


@dataclass(frozen=True, kw_only=True)
class Resolved:
    name: str  # canonical
    version: str = ""  # "" when it could not be resolved
    error: str = ""  # why not ("no release has a non-yanked sdist", "index: ...")
    note: str = ""  # e.g. the newest release had no sdist, an older one is tested
    extension: bool | None = None  # a platform-specific wheel in that release; None: no wheels

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "error": self.error,
            "note": self.note,
            "extension": self.extension,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Resolved:
        ext = d.get("extension")
        return cls(
            name=str(d["name"]),
            version=str(d.get("version", "")),
            error=str(d.get("error", "")),
            note=str(d.get("note", "")),
            extension=ext if isinstance(ext, bool) else None,
        )


# --------------------------------------------------------------------------- the ranked list


def read_names(path: Path | None = None) -> list[str]:
    """Project names, most downloaded first: the top-pypi-packages JSON (rows[].project), the
    free-threaded wheels tracker's results JSON (data[].name), or one name a line."""
    path = path or SNAPSHOT
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read the project list: {e}", file=str(path)) from None
    if text.lstrip().startswith("{"):
        try:
            doc = safejson.loads(text)
            if isinstance(doc, dict) and "data" in doc and "rows" not in doc:
                names = [r["name"] for r in doc["data"]]
            else:
                names = [r["project"] for r in doc["rows"]]
        except (ValueError, KeyError, TypeError):
            raise ConfigError(
                "not a project list (a top-pypi-packages JSON needs rows[].project,"
                " a free-threaded wheels results JSON data[].name)",
                file=str(path),
            ) from None
    else:
        names = [ln.split("#", 1)[0].strip() for ln in text.splitlines()]
    out, seen = [], set()
    for n in names:
        key = canonicalize_name(str(n)) if n else ""
        if key and key not in seen:
            seen.add(key)
            out.append(key)
    return out


# --------------------------------------------------------------------------- resolution


def _parse(filename: str) -> tuple[str, Version, bool] | None:
    """(kind, version, platform-specific) of one file name; None when it is neither."""
    try:
        if filename.endswith(".whl"):
            _, ver, _, tags = parse_wheel_filename(filename)
            return "wheel", ver, any(t.platform != "any" for t in tags)
        _, ver = parse_sdist_filename(filename)
        return "sdist", ver, False
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None


def resolve_page(name: str, page: Mapping[str, Any]) -> Resolved:
    """The newest final release with a non-yanked sdist, from one PEP 691 page (pure)."""
    key = canonicalize_name(name)
    releases: dict[Version, dict[str, Any]] = {}
    files = page.get("files", []) if isinstance(page, Mapping) else []
    for f in files if isinstance(files, list) else ():  # a page of another shape: no release
        if not isinstance(f, dict) or f.get("yanked"):
            continue
        parsed = _parse(str(f.get("filename", "")))
        if parsed is None or parsed[1].is_prerelease or parsed[1].is_devrelease:
            continue
        kind, ver, platform = parsed
        r = releases.setdefault(ver, {"sdist": False, "wheels": 0, "platform": False})
        if kind == "sdist":
            r["sdist"] = True
        else:
            r["wheels"] += 1
            r["platform"] = r["platform"] or platform
    if not releases:
        return Resolved(name=key, error="no release on the index (all yanked or pre-releases)")
    newest = max(releases)
    with_sdist = [v for v, r in releases.items() if r["sdist"]]
    if not with_sdist:
        return Resolved(name=key, error=f"no sdist for any release (newest: {newest})")
    ver = max(with_sdist)
    r = releases[ver]
    note = f"{newest} has no sdist; {ver} is the newest with one" if ver != newest else ""
    return Resolved(name=key, version=str(ver), note=note, extension=r["platform"] if r["wheels"] else None)


def fetch_index(name: str) -> dict[str, Any]:
    return indexclient.simple_json(name)


def resolve(
    names: Iterable[str], *, fetch: Fetch = fetch_index, known: Mapping[str, Resolved] | None = None
) -> dict[str, Resolved]:
    """canonical name -> Resolved; ``known`` entries are used as they are (no fetch)."""
    known = known or {}
    out: dict[str, Resolved] = {}
    for n in names:
        key = canonicalize_name(n)
        if key in out:
            continue
        if key in known:
            out[key] = known[key]
            continue
        try:
            out[key] = resolve_page(key, fetch(key))
        except (OSError, ValueError) as e:
            log.warning("cannot resolve %s: %s", key, e)
            out[key] = Resolved(name=key, error=f"index: {e}")
        except Exception as e:  # noqa: BLE001 - one project's page never stops the plan (#29)
            log.warning("cannot resolve %s: %s: %s", key, type(e).__name__, e)
            out[key] = Resolved(name=key, error=f"index: {type(e).__name__}: {e}")
    return out


# --------------------------------------------------------------------------- expansion


def select(sel: Selector, *, fetch: Fetch = fetch_index, record: dict[str, Resolved] | None = None) -> list[Resolved]:
    """The selector's projects, in the list's order, each resolved.  ``record`` (name ->
    Resolved) is read first and receives every resolution made, picked or not."""
    record = {} if record is None else record
    excluded = {canonicalize_name(e) for e in sel.exclude}
    names = [n for n in read_names(Path(sel.source) if sel.source else None) if n not in excluded]
    picked: list[Resolved] = []
    for n in names:
        if len(picked) >= sel.top:
            break
        r = record[n] = resolve([n], fetch=fetch, known=record)[n]
        if sel.extensions_only and r.extension is not True:
            continue
        picked.append(r)
    return picked


def expand(
    spec: MatrixSpec, *, fetch: Fetch = fetch_index, known: Mapping[str, Resolved] | None = None
) -> tuple[tuple[Package, ...], dict[str, Resolved]]:
    """The plan's packages (selected, overridden, then the other explicit ones) and the record
    of every resolution made, to be stored with the plan and passed back as ``known``."""
    explicit: dict[str, Package] = {canonicalize_name(p.name): p for p in spec.packages}
    record: dict[str, Resolved] = dict(known or {})
    out: list[Package] = []
    taken: set[str] = set()
    for sel in spec.selectors:
        for r in select(sel, fetch=fetch, record=record):
            if r.name in taken:
                continue
            taken.add(r.name)
            base = explicit.get(r.name) or Package(name=r.name)
            if base.version or base.is_local:
                out.append(base)
            elif r.version:
                notes = "; ".join(n for n in (base.notes, r.note) if n)
                out.append(replace(base, version=f"=={r.version}", notes=notes))
            else:
                out.append(replace(base, unresolved=r.error))
    out += [p for key, p in explicit.items() if key not in taken]
    return tuple(out), record


def dump_record(record: Mapping[str, Resolved]) -> list[dict[str, Any]]:
    """The resolutions as JSON-able data, for the plan artifact (sorted by name)."""
    return [record[k].to_dict() for k in sorted(record)]


def load_record(data: Iterable[Mapping[str, Any]]) -> dict[str, Resolved]:
    out = {}
    for d in data:
        r = Resolved.from_dict(d)
        out[r.name] = r
    return out


def expand_spec(spec: MatrixSpec, record_file: Path | None = None, *, fetch: Fetch = fetch_index) -> MatrixSpec:
    """The spec with its selectors expanded (see ``expand``); ``record_file`` (JSON, the
    ``dump_record`` list) is read first and rewritten with every resolution, so a rerun, or every
    shard given the plan's file, tests the same versions without asking the index again."""
    if not spec.selectors:
        return spec
    known: dict[str, Resolved] = {}
    if record_file is not None and record_file.is_file():
        try:
            data = safejson.loads(record_file.read_bytes())
            known = load_record(data if isinstance(data, list) else [])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ConfigError(f"cannot read the resolved versions: {e}", file=str(record_file)) from None
    packages, record = expand(spec, fetch=fetch, known=known)
    if record_file is not None:
        write_text_atomic(record_file, json.dumps(dump_record(record), indent=1) + "\n")
    return replace(spec, packages=packages, selectors=())
