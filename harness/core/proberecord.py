"""What the import probe found (harness/_inner/probe.py writes probe.json), as the host reads it:
``Probe``, kept on a probe phase (``Phase.probe``, harness.parse.probe). Re-exported by
harness.core.evidence.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

_MAX_PROBE_ITEMS = 10_000
_MAX_META_TEXT = 2000  # characters of the summary, the home page and each project URL (and its label)
_MAX_META_URLS = 50
_MAX_PROBE_ERRORS = 100  # failed imports kept with their traceback (each cut to 2,000 characters)


def _probe_metadata(m: Any) -> dict[str, Any] | None:
    if not isinstance(m, dict):
        return None
    # capped (#46): what a package's metadata says is copied into every result and report
    out: dict[str, Any] = {k: m[k][:_MAX_META_TEXT] for k in ("summary", "home_page") if isinstance(m.get(k), str)}
    urls = m.get("project_urls")
    if isinstance(urls, dict):
        out["project_urls"] = {
            k[:_MAX_META_TEXT]: v[:_MAX_META_TEXT]
            for k, v in list(urls.items())[:_MAX_META_URLS]
            if isinstance(k, str) and isinstance(v, str)
        }
    return out


_WRONG = object()
ORIGIN = ("dist", "extra")  # what the probe says of a module in a GIL warning


def _probe_field(name: str, v: Any) -> Any:
    """``v`` as field ``name`` of a Probe has it, or ``_WRONG`` when it has the wrong type."""
    if v is None and name in ("gil_enabled_at_start", "gil_enabled"):
        return None  # not known (a result's, read back)
    if name in ("dist", "version"):
        return v[:1000] if isinstance(v, str) else _WRONG
    if name in ("gil_enabled_at_start", "gil_enabled"):
        return v if isinstance(v, bool) else _WRONG
    if name in ("imported", "modules", "warnings"):
        ok = isinstance(v, list | tuple) and all(isinstance(x, str) for x in v)
        return tuple(v[:_MAX_PROBE_ITEMS]) if ok else _WRONG
    if name == "origins":  # module -> {"dist": ..., "extra": ...}
        ok = isinstance(v, dict) and all(
            isinstance(k, str) and isinstance(x, dict) and all(isinstance(x.get(f, ""), str) for f in ORIGIN)
            for k, x in v.items()
        )
        items = list(v.items())[:_MAX_PROBE_ITEMS] if ok else []
        return {k: {f: x.get(f, "")[:_MAX_META_TEXT] for f in ORIGIN} for k, x in items} if ok else _WRONG
    if name == "errors":
        ok = isinstance(v, dict) and all(isinstance(k, str) and isinstance(x, str) for k, x in v.items())
        return {k: x[-2000:] for k, x in list(v.items())[:_MAX_PROBE_ERRORS]} if ok else _WRONG
    meta = _probe_metadata(v)
    return _WRONG if meta is None else meta


@dataclass(frozen=True, kw_only=True)
class Probe:
    """What the import probe (harness/_inner/probe.py) wrote to probe.json, each field of the type
    the host expects (issue #29), kept on the probe phase (``Phase.probe``, harness.parse.probe).

    The probe runs in the package's venv after the package's own code, so probe.json is untrusted:
    a field of the wrong type (``"modules": 5``, ``"version": ["1"]``) is dropped and named in
    ``problems``; the verdict, the wheel column and the result never see it."""

    dist: str = ""
    version: str = ""
    gil_enabled_at_start: bool | None = None
    gil_enabled: bool | None = None  # sys._is_gil_enabled() after every import
    imported: tuple[str, ...] = ()  # the package's modules that imported (its own, for the verdict)
    modules: tuple[str, ...] = ()  # named in a "GIL has been enabled to load module" warning
    warnings: tuple[str, ...] = ()
    errors: dict[str, str] = field(default_factory=dict)  # module -> why its import failed
    metadata: dict[str, Any] = field(default_factory=dict)  # summary, home_page, project_urls
    # a module in a GIL warning -> {"dist": the distribution that installed it, "extra": the
    # package's extra it came in through, "" if none}
    origins: dict[str, dict[str, str]] = field(default_factory=dict)
    problems: tuple[str, ...] = ()  # "probe.json: modules has the wrong type, ignored"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for name in ("imported", "modules", "warnings", "problems"):
            d[name] = list(d[name])
        return d

    @classmethod
    def from_dict(cls, d: Any) -> Probe:
        """probe.json as the probe wrote it, or a result's ``Phase.probe``: what has its type."""
        if not isinstance(d, dict):
            return cls(problems=("probe.json is not an object",)) if d not in (None, {}) else cls()
        out: dict[str, Any] = {}
        bad: list[str] = []
        for f in fields(cls):
            if f.name == "problems" or f.name not in d:
                continue
            v = _probe_field(f.name, d[f.name])
            if v is _WRONG:
                bad.append(f.name)
            else:
                out[f.name] = v
        told = d.get("problems")  # a result's, read back
        told = [x for x in told if isinstance(x, str)] if isinstance(told, list | tuple) else []
        return cls(**out, problems=(*told, *(f"probe.json: {k} has the wrong type, ignored" for k in bad)))


@dataclass(frozen=True, kw_only=True)
class LaterGil:
    """A module that re-enabled the GIL only once the test dependencies were installed (the second
    probe, ``probe-test-deps``): not what ``pip install <package>`` gives a user, so a note, never
    the verdict (``JobResult.gil_with_test_deps``; harness.verdict.latergil)."""

    module: str
    dist: str = ""  # the distribution that installed it ("" not known)
    extra: str = ""  # the package's extra it came in through ("" none: a test dependency)

    @property
    def note(self) -> str:
        """ "with the `speedups` extra: Brotli's `_brotli`", or "a test dependency: six's `_six`"."""
        whose = f"{self.dist}'s `{self.module}`" if self.dist else f"`{self.module}`"
        head = f"with the `{self.extra}` extra" if self.extra else "a test dependency"
        return f"{head}: {whose} re-enables the GIL"

    def to_dict(self) -> dict[str, str]:
        return {"module": self.module, "dist": self.dist, "extra": self.extra, "note": self.note}

    @classmethod
    def from_dict(cls, d: Any) -> LaterGil | None:
        """Tolerant: anything but an object with a string ``module`` is None."""
        if not isinstance(d, dict) or not isinstance(d.get("module"), str) or not d["module"]:
            return None
        return cls(**{k: d[k][:_MAX_META_TEXT] for k in ("module", *ORIGIN) if isinstance(d.get(k), str)})
