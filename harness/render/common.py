"""Small formatting helpers shared by the Markdown, HTML and JUnit renderers.

They read the free-form ``coverage``/``wheel`` dicts defensively: those are
filled by other steps (issue 10) and a renderer must not fail on a shape it
does not know; it shows the raw key/values instead.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit


def fmt_duration(seconds: float | int | None) -> str:
    if not seconds:
        return "—"
    s = float(seconds)
    if s < 60:
        return f"{s:.1f} s"
    m, s = divmod(int(round(s)), 60)
    if m < 60:
        return f"{m} min {s:02d} s"
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min"


def page_name(job_id: str) -> str:
    """File name of a package page; job ids are file-name safe, but never trust that."""
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in job_id).lstrip(".")
    return f"{safe or 'job'}.html"


def mode_list(modes: list[int] | tuple[int, ...]) -> str:
    return ", ".join(f"GIL {'on' if m else 'off'} (PYTHON_GIL={m})" for m in modes)


def phase_summary(counts: dict[str, int]) -> str:
    order = ("passed", "failed", "error", "crashed", "timeout", "skipped")
    keys = [k for k in order if counts.get(k)] + sorted(k for k in counts if k not in order)
    return ", ".join(f"{counts[k]} {k}" for k in keys if counts[k]) or "—"


def safe_url(url: Any) -> str:
    """The URL if it is an absolute http(s) URL we may put in an href, else ""."""
    if not isinstance(url, str) or any(c.isspace() or ord(c) < 32 for c in url):
        return ""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    return url if parts.scheme in ("http", "https") and parts.netloc else ""


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _modes(coverage: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-mode entries harness.verdict.coverage writes ({"gil0": {...}, ...}), by mode."""
    rows = [d for d in coverage.values() if isinstance(d, dict) and "total" in d]
    return sorted(rows, key=lambda d: (_int(d.get("mode")) is None, d.get("mode") or 0))


def coverage_counts(coverage: dict[str, Any]) -> tuple[int, int] | None:
    """(tests run in threads, tests in total) of the least-covered mode, when it is known."""
    known = [(d["in_threads"], d["total"]) for d in _modes(coverage)
             if d.get("known") and _int(d.get("in_threads")) is not None and _int(d.get("total"))]
    if not known:
        return None
    return min(known, key=lambda kn: (kn[0] / kn[1], kn[1]))


def coverage_modes(coverage: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of the per-mode coverage table on a package page."""
    rows = []
    for d in _modes(coverage):
        mode = d.get("mode")
        known = bool(d.get("known"))
        rows.append({
            "mode": f"PYTHON_GIL={mode}" if _int(mode) is not None else _s(mode),
            "in_threads": _s(d.get("in_threads")) if known else "unknown",
            "single": _s(d.get("single")) if known else "—",
            "skipped_unsafe": _s(d.get("skipped_unsafe")) if known else "—",
            "skipped": _s(d.get("skipped")),
            "total": _s(d.get("total")),
            "source": _s(d.get("source", "")),
            "reasons": sorted((str(k), _s(v)) for k, v in (d.get("reasons") or {}).items()),
        })
    return rows


def coverage_summary(coverage: dict[str, Any]) -> str:
    """'k/n (p%)' tests in threads for the least-covered mode; 'unknown' when not measured."""
    if not coverage:
        return "—"
    pair = coverage_counts(coverage)
    if pair is None:
        rows = _modes(coverage)
        if rows and all(_int(d.get("total")) == 0 for d in rows):
            return "no tests"
        return "unknown" if rows else kv_line(coverage)
    par, tot = pair
    return f"{par}/{tot} ({100 * par // tot}%)"


WHEEL_AVAILABLE = {
    "free-threaded": "free-threaded wheel",
    "pure": "pure-Python wheel",
    "gil-only": "no free-threaded wheel",
    "sdist-only": "sdist only",
    "n/a": "local source",
    "unknown": "wheels unknown",
}


def wheel_summary(wheel: dict[str, Any]) -> str:
    """One line: is there a free-threaded wheel, what was installed, does it keep the GIL off."""
    if not wheel:
        return "—"
    bits = []
    avail = wheel.get("available")
    if isinstance(avail, str) and avail:
        bits.append(WHEEL_AVAILABLE.get(avail, avail))
    installed = wheel.get("installed")
    if isinstance(installed, str) and installed and installed != "local source":
        bits.append(f"installed {installed}" if installed.startswith("wheel") else installed)
    if wheel.get("warning"):
        bits.append("⚠ the wheel re-enables the GIL")
    return ", ".join(bits) or kv_line(wheel)


def kv_line(d: dict[str, Any]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in d.items())


def flatten(d: Any, prefix: str = "") -> list[tuple[str, str]]:
    """A nested dict as (dotted key, text value) pairs, for a definition list."""
    if not isinstance(d, dict):
        return [(prefix or "value", _s(d))]
    out: list[tuple[str, str]] = []
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, dict) and v:
            out += flatten(v, key)
        else:
            out.append((key, _s(v)))
    return out


def _s(v: Any) -> str:
    if isinstance(v, list | tuple):
        return ", ".join(_s(x) for x in v)
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def project_urls(metadata: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, url) pairs from package metadata: project_urls, home_page; unsafe URLs dropped."""
    out: list[tuple[str, str]] = []
    urls = metadata.get("project_urls")
    if isinstance(urls, dict):
        out += [(str(k), str(v)) for k, v in urls.items()]
    elif isinstance(urls, list):
        for item in urls:
            if isinstance(item, str) and "," in item:
                label, _, url = item.partition(",")
                out.append((label.strip(), url.strip()))
    for key in ("home_page", "homepage", "url"):
        if isinstance(metadata.get(key), str):
            out.append(("Homepage", metadata[key]))
    return [(label, url) for label, url in out if safe_url(url)]


def setup_summary(ts: dict[str, Any]) -> str:
    """"tests/ (inferred), 3 test deps (inferred: [dependency-groups] tests), pytest args
    (matrix.yaml)" -- where a job's test setup came from."""
    if not ts:
        return ""
    deps = ts.get("requires") or []
    why = next((s for s in ts.get("sources", []) if "test deps" in s), "")
    parts = [f"{ts.get('tests') or 'source root'} ({ts.get('tests_from', '?')})",
             f"{len(deps)} test dep(s) ({ts.get('requires_from', '?')}{': ' + why if why else ''})"]
    if ts.get("pytest_args"):
        parts.append(f"pytest args {' '.join(ts['pytest_args'])} ({ts.get('pytest_args_from', '?')})")
    return ", ".join(parts)
