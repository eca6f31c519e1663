"""Small formatting helpers shared by the Markdown, HTML and JUnit renderers.

They take the report's typed values (harness.results.report, harness.core.evidence).  The numbers in a
job's coverage come from a result file package code could have written, so they are checked
before any arithmetic: a renderer must not fail on a value of the wrong type.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from ..core.evidence import ModeCoverage, Wheel, least_covered
from ..core.suiterecord import TestSetup
from ..results.answer import SMALL_REACH, reach_note
from ..results.report import ProjectMeta


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


def _when(stamp: Any) -> datetime | None:
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        t = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (t if t.tzinfo else t.replace(tzinfo=UTC)).astimezone(UTC)


def human_time(stamp: Any) -> str:
    """An ISO 8601 time as a person reads it: ``5 Dec 2026, 08:00 UTC``; anything else as it is."""
    t = _when(stamp)
    if t is None:
        return str(stamp or "")
    return f"{t.day} {t:%b %Y}, {t:%H:%M} UTC"


def human_date(stamp: Any) -> str:
    """The day of an ISO 8601 time: ``5 Dec 2026`` (a run's id in history.json)."""
    t = _when(stamp)
    return f"{t.day} {t:%b %Y}" if t is not None else str(stamp or "")


def note_label(started: Any) -> str:
    """The label of a package's ``notes`` (matrix.yaml's, the user's words): dated by the run
    that read them and never said as this run's finding (issue #57)."""
    day = human_date(started)
    return f"Note from matrix.yaml{', ' + day if day else ''} (the matrix author's words, not a finding of this run):"


def human_span(start: Any, end: Any) -> str:
    """``5 Dec 2026, 07:50–08:00 UTC`` (one day), else both times in full."""
    a, b = _when(start), _when(end)
    if a is None or b is None:
        return " → ".join(human_time(x) for x in (start, end) if x)
    if a.date() == b.date():
        return f"{a.day} {a:%b %Y}, {a:%H:%M}–{b:%H:%M} UTC"
    return f"{human_time(start)} → {human_time(end)}"


def page_name(job_id: str) -> str:
    """File name of a package page; job ids are file-name safe, but never trust that."""
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in job_id).lstrip(".")
    return f"{safe or 'job'}.html"


def mode_list(modes: list[int] | tuple[int, ...]) -> str:
    return ", ".join(f"GIL {'on' if m else 'off'} (PYTHON_GIL={m})" for m in modes)


def phase_summary(counts: dict[str, int]) -> str:
    order = ("passed", "failed", "error", "crashed", "timeout", "skipped")
    keys = [k for k in order if k in counts] + sorted(k for k in counts if k not in order)
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


def _modes(coverage: Mapping[str, ModeCoverage]) -> list[ModeCoverage]:
    """A job's per-mode coverage ({"gil0": ..., "gil1": ...}), by mode."""
    return sorted(coverage.values(), key=lambda m: (_int(m.mode) is None, _int(m.mode) or 0))


def coverage_counts(coverage: Mapping[str, ModeCoverage]) -> tuple[int, int] | None:
    """(tests run in threads, tests in total) of the least-covered mode (evidence.least_covered,
    as the verdict's qualifier has it), when it is known."""
    low = least_covered(coverage)
    if low is None or low.in_threads is None:
        return None
    return low.in_threads, low.total


def coverage_modes(coverage: Mapping[str, ModeCoverage]) -> list[dict[str, Any]]:
    """Rows of the per-mode coverage table on a package page."""
    rows = []
    for m in _modes(coverage):
        known = bool(m.known)
        rows.append(
            {
                "mode": f"PYTHON_GIL={m.mode}" if _int(m.mode) is not None else _s(m.mode),
                "in_threads": _s(m.in_threads) if known else "unknown",
                "single": _s(m.single) if known else "—",
                "skipped_unsafe": _s(m.skipped_unsafe) if known else "—",
                "skipped": _s(m.skipped),
                "total": _s(m.total),
                "source": _s(m.source),
                "reasons": sorted((str(k), _s(v)) for k, v in m.reasons.items()),
            }
        )
    return rows


def coverage_summary(coverage: Mapping[str, ModeCoverage]) -> str:
    """'k/n (p%)' tests in threads for the least-covered mode; 'unknown' when not measured."""
    if not coverage:
        return "—"
    pair = coverage_counts(coverage)
    if pair is None:
        if all(_int(m.total) == 0 for m in coverage.values()):
            return "no tests"
        return "unknown"
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


def wheel_summary(wheel: Wheel | None) -> str:
    """One line: is there a free-threaded wheel, what was installed, does it keep the GIL off."""
    if wheel is None:
        return "—"
    bits = []
    if wheel.available:
        bits.append(WHEEL_AVAILABLE.get(wheel.available, wheel.available))
    if wheel.installed and wheel.installed != "local source":
        bits.append(f"installed {wheel.installed}" if wheel.installed.startswith("wheel") else wheel.installed)
    if wheel.fallback:  # a compiled project's pure wheel (harness.verdict.artifact)
        bits.append(
            f"pure fallback {wheel.fallback} kept: its compiled modules untested"
            if wheel.installed_file == wheel.fallback
            else f"not its pure fallback {wheel.fallback}"
        )
    if wheel.warning:
        bits.append("⚠ the wheel re-enables the GIL")
    return ", ".join(bits) or kv_line(wheel.to_dict())


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


def project_urls(metadata: ProjectMeta) -> list[tuple[str, str]]:
    """(label, url) pairs of the project's metadata (project_urls, home page), unsafe URLs dropped."""
    return [(label, url) for label, url in metadata.urls if safe_url(url)]


def setup_summary(ts: TestSetup | None) -> str:
    """ "tests/ (inferred), 3 test deps (inferred: [dependency-groups] tests), pytest args
    (matrix.yaml)" -- where a job's test setup came from."""
    if ts is None:
        return ""
    reg = str(ts.recipe.get("registry") or "")
    if ts.recipe.get("skip") and not ts.tests_from:  # not run (verdict skipped)
        return f"not run: the recipe ({reg}) skips it on this Python: {ts.recipe['skip']}"
    why = next((s for s in ts.sources if "test deps" in s and not s.startswith("recipe")), "")
    if ts.requires_from == "recipe":
        why = "its install command"
    parts = [
        f"{ts.tests or 'source root'} ({ts.tests_from or '?'})",
        f"{len(ts.requires)} test dep(s) ({ts.requires_from or '?'}{': ' + why if why else ''})",
    ]
    if ts.pytest_args:
        parts.append(f"pytest args {' '.join(ts.pytest_args)} ({ts.pytest_args_from or '?'})")
    if reg:
        held = len(ts.recipe.get("not_held") or ())
        parts.append(f"recipe: {reg}" + (f", {held} part(s) of it did not hold" if held else ""))
    return ", ".join(parts)


def reach_text(
    checked: Any, tests: Any, settings: Mapping[str, Any] | None = None, cut: tuple[int, int] | None = None
) -> dict[str, Any] | None:
    """The reach of the check for a cell (issue #44; harness.results.answer.reach_note): its
    words, whether it is small, the count; None when no test ran.  ``settings``: the job's;
    ``cut``: the job's budget cut it (harness.results.answer.cut_runs)."""
    text, low = reach_note(checked, tests, (settings or {}).get("min_parallel_fraction", SMALL_REACH), cut)
    if not text:
        return None
    return {"text": text, "low": low, "checked": _int(checked)}


WHEEL_MARK = {  # the wheel mark of a cell: what the index offers the interpreter
    "free-threaded": ("ft", "ft wheel", "a free-threaded wheel of this release is on the index"),
    "pure": ("pure", "pure wheel", "a pure-Python wheel: nothing to build"),
    "gil-only": ("gil", "no ft wheel", "wheels for the GIL build only: it builds from source"),
    "sdist-only": ("sdist", "sdist only", "no wheel on the index: it builds from source"),
}


def wheel_mark(available: Any) -> dict[str, str] | None:
    got = WHEEL_MARK.get(available) if isinstance(available, str) else None
    return {"cls": got[0], "text": got[1], "title": got[2]} if got else None
