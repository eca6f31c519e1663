"""Small formatting helpers shared by the Markdown, HTML and JUnit renderers.

They read the free-form ``coverage``/``wheel`` dicts defensively: those are
filled by other steps (issue 10) and a renderer must not fail on a shape it
does not know; it shows the raw key/values instead.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from ..model import VERDICTS

SEVERITY = {v: i for i, v in enumerate(VERDICTS)}


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


def coverage_counts(coverage: dict[str, Any]) -> tuple[int, int] | None:
    """(tests run in threads, tests in total) over all modes' threaded runs, if known."""
    par = tot = 0
    found = False
    for mode in coverage.values():
        if not isinstance(mode, dict) or _int(mode.get("parallel")) is None:
            continue
        found = True
        p = _int(mode.get("parallel")) or 0
        rest = sum(_int(mode.get(k)) or 0 for k in ("single", "skipped"))
        total = _int(mode.get("total"))
        par += p
        tot += total if total is not None else p + rest
    return (par, tot) if found else None


def coverage_modes(coverage: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of a per-mode coverage table, for the modes whose counts we understand."""
    rows = []
    for mode, d in coverage.items():
        if isinstance(d, dict) and _int(d.get("parallel")) is not None:
            rows.append({"mode": mode, "parallel": d.get("parallel"),
                         "single": _s(d.get("single", "—")), "skipped": _s(d.get("skipped", "—"))})
    return rows


def coverage_extra(coverage: dict[str, Any]) -> list[tuple[str, str]]:
    """What coverage_modes does not show (reasons, other keys), as (key, text) pairs."""
    out = []
    for mode, d in coverage.items():
        if isinstance(d, dict) and _int(d.get("parallel")) is not None:
            rest = {k: v for k, v in d.items() if k not in ("parallel", "single", "skipped")}
            out += flatten(rest, f"PYTHON_GIL={mode}") if rest else []
        else:
            out += flatten({mode: d})
    return out


def coverage_summary(coverage: dict[str, Any]) -> str:
    if not coverage:
        return "—"
    pair = coverage_counts(coverage)
    if pair is None:
        return kv_line(coverage)
    par, tot = pair
    pct = f" ({100 * par // tot}%)" if tot else ""
    return f"{par}/{tot}{pct}"


def wheel_summary(wheel: dict[str, Any]) -> str:
    """One line: is there a free-threaded wheel, and what did the harness install."""
    if not wheel:
        return "—"
    bits = []
    ft = wheel.get("ft_wheel")
    if ft is True:
        bits.append("ft wheel")
    elif ft is False:
        bits.append("pure-Python wheel" if wheel.get("pure") else "no ft wheel")
    installed = wheel.get("installed")
    if isinstance(installed, str) and installed:
        bits.append(f"installed {installed}")
    if wheel.get("reenables_gil") or wheel.get("gil_reenabled"):
        bits.append("wheel re-enables the GIL")
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
