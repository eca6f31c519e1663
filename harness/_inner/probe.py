"""Import probe: run by the job's venv python in the default GIL mode (PYTHON_GIL unset).

usage: python -W default probe.py DIST_NAME OUT.json

Imports every top-level module of the distribution and every extension module
it installs, records sys._is_gil_enabled() after each import and every
"GIL has been enabled to load module" warning, plus the project's metadata.
Standard library only; it must run on any CPython 3.13+.
"""

import contextlib
import importlib
import importlib.metadata as md
import json
import re
import sys
import traceback
import warnings

WARNING = re.compile(r"has been enabled to load module '([^']+)'")


def modules_of(dist):
    top, ext = [], []
    files = dist.files or []
    for f in files:
        parts = f.parts
        if not parts or parts[0].endswith((".dist-info", ".egg-info", ".data")) or parts[0] == "..":
            continue
        name = parts[-1]
        if name.endswith((".py", ".so", ".pyd")) or len(parts) > 1:
            head = parts[0]
            mod = head.split(".")[0] if len(parts) == 1 else head
            if mod.isidentifier() and mod not in top and mod != "__pycache__":
                top.append(mod)
        if name.endswith((".so", ".pyd")):
            dotted = ".".join([*parts[:-1], name.split(".")[0]])
            if all(p.isidentifier() for p in dotted.split(".")):
                ext.append(dotted)
    txt = dist.read_text("top_level.txt")
    if txt:
        for line in txt.split():
            if line.isidentifier() and line not in top:
                top.append(line)
    return top, ext


def _norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _requires(dist):
    """(name, extra) of each Requires-Dist of ``dist`` (extra: "" when no ``extra ==`` marker)."""
    out = []
    for line in dist.requires or []:
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line)
        if m:
            e = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", line)
            out.append((_norm(m.group(1)), e.group(1) if e else ""))
    return out


def _closure(names):
    """The installed distributions ``names`` need, themselves included (no extras followed)."""
    seen, todo = set(), list(names)
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        with contextlib.suppress(md.PackageNotFoundError):
            todo += [r for r, e in _requires(md.distribution(n)) if not e]
    return seen


def origins(dist, modules):
    """For each module named in a GIL warning: the distribution that installed it and, when that
    came in through one of the package's extras (its Requires-Dist with ``extra ==``, followed
    through the dependencies' own), the extra; "" for its own modules and its plain dependencies."""
    reqs = _requires(dist)
    base = _closure([n for n, e in reqs if not e])
    via = {}
    for n, e in reqs:
        for d in _closure([n]) if e else ():
            if d not in base:
                via.setdefault(d, e)
    tops = md.packages_distributions()
    out = {}
    for mod in modules:
        owners = tops.get(mod.split(".")[0]) or []
        owner = owners[0] if owners else ""
        out[mod] = {"dist": owner, "extra": via.get(_norm(owner), "") if owner else ""}
    return out


def main():
    dist_name, out = sys.argv[1], sys.argv[2]
    result = {
        "dist": dist_name,
        "gil_enabled_at_start": sys._is_gil_enabled(),
        "imported": [],
        "modules": [],
        "errors": {},
        "warnings": [],
        "metadata": {},
        "origins": {},
    }
    try:
        dist = md.distribution(dist_name)
    except md.PackageNotFoundError:
        result["errors"]["<dist>"] = f"distribution {dist_name!r} is not installed"
        dist = None
    if dist is not None:
        meta = dist.metadata
        result["version"] = dist.version
        result["metadata"] = {
            "summary": meta.get("Summary") or "",
            "home_page": meta.get("Home-page") or "",
            "project_urls": dict(
                (u.split(",", 1)[0].strip(), u.split(",", 1)[1].strip())
                for u in (meta.get_all("Project-URL") or [])
                if "," in u
            ),
        }
        top, ext = modules_of(dist)
        for name in top + [e for e in ext if e not in top]:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    importlib.import_module(name)
                    result["imported"].append(name)
                except BaseException:  # noqa: BLE001 - a failing import is data
                    result["errors"][name] = traceback.format_exc(limit=3)[-2000:]
            for w in caught:
                text = str(w.message)
                m = WARNING.search(text)
                if m and m.group(1) not in result["modules"]:
                    result["modules"].append(m.group(1))
                    result["warnings"].append(f"{w.category.__name__}: {text}")
                print(f"{w.filename}:{w.lineno}: {w.category.__name__}: {text}", file=sys.stderr)
        try:
            result["origins"] = origins(dist, result["modules"])
        except Exception:  # noqa: BLE001 - who installed a module is a detail; the warning stays
            result["errors"]["<origins>"] = traceback.format_exc(limit=3)[-2000:]
    result["gil_enabled"] = sys._is_gil_enabled()
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps({"gil_enabled": result["gil_enabled"], "modules": result["modules"]}))


if __name__ == "__main__":
    main()
