"""probe.json, typed: the fields the host uses, each of the type it expects (issue #29).

The probe runs in the package's venv, after the package's own code: whatever it leaves in
``logs/probe.json`` is untrusted.  A field of the wrong type (``"modules": 5``, ``"version":
["1"]``, ``"metadata": "x"``) is dropped here and named in ``PROBLEMS``, so the verdict, the
wheel summary and the result never see it: before, it raised in the verdict (a run stopped), or
reached the result file (a ``version`` that is not a string makes ``report`` skip the package).
"""

from __future__ import annotations

from typing import Any

PROBLEMS = "probe_problems"  # the key of the names of what was dropped
_STR = ("dist", "version")
_BOOL = ("gil_enabled_at_start", "gil_enabled")
_STRS = ("imported", "modules", "warnings")
_MAX_ITEMS = 10_000


def _strings(v: Any) -> list[str] | None:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        return None
    return v[:_MAX_ITEMS]


def typed(data: Any) -> dict[str, Any]:
    """The probe's fields that have their type; a ``probe_problems`` list names the others."""
    if not isinstance(data, dict):
        return {PROBLEMS: ["probe.json is not an object"]} if data not in (None, {}) else {}
    out: dict[str, Any] = {}
    bad: list[str] = []
    for k in _STR:
        if k in data:
            if isinstance(data[k], str):
                out[k] = data[k][:1000]
            else:
                bad.append(k)
    for k in _BOOL:
        if k in data:
            if isinstance(data[k], bool):
                out[k] = data[k]
            else:
                bad.append(k)
    for k in _STRS:
        if k in data:
            got = _strings(data[k])
            if got is None:
                bad.append(k)
            else:
                out[k] = got
    if "errors" in data:
        errs = data["errors"]
        if isinstance(errs, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in errs.items()):
            out["errors"] = errs
        else:
            bad.append("errors")
    if "metadata" in data:
        meta = _metadata(data["metadata"])
        if meta is None:
            bad.append("metadata")
        else:
            out["metadata"] = meta
    told = data.get(PROBLEMS)  # typed once already (the job's steps, then the verdict's read)
    told = [x for x in told if isinstance(x, str)] if isinstance(told, list) else []
    if bad or told:
        out[PROBLEMS] = told + [f"probe.json: {k} has the wrong type, ignored" for k in bad]
    return out


def _metadata(m: Any) -> dict[str, Any] | None:
    if not isinstance(m, dict):
        return None
    out: dict[str, Any] = {}
    for k in ("summary", "home_page"):
        if isinstance(m.get(k), str):
            out[k] = m[k]
    urls = m.get("project_urls")
    if isinstance(urls, dict):
        out["project_urls"] = {k: v for k, v in urls.items() if isinstance(k, str) and isinstance(v, str)}
    return out
