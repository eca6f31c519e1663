"""The "bugs found" pages of the site (issue #57): every finding of the feed
(harness.results.feed) in one table, and the same table narrowed to one kind or one interpreter
line, each a static page, so the filters work without JavaScript:

- ``site/bugs/index.html``: all of them, with a link per kind and per interpreter line;
- ``site/bugs/kind-<kind>.html``, ``site/bugs/on-<line>.html``: one kind, one line (``3.13t``).

The directory is replaced whole (harness.render.site.swap_dir).  Package text goes through
jinja2's autoescaping; a ``reported`` link is an href only when it is an https URL.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from ..core.model import severity
from ..results.feed import Feed, FeedEntry, Seen, https_url
from ..results.report import CompatReport
from .common import page_name
from .html import render_template
from .site import swap_dir


def _file(prefix: str, word: str) -> str:
    return prefix + "".join(c if c.isalnum() or c in ".-" else "-" for c in word).strip(".") + ".html"


def kind_page(kind: str) -> str:
    return _file("kind-", kind)


def line_page(line: str) -> str:
    return _file("on-", line)


def _counts(s: Seen) -> str:
    """ "3.13.5: 2/3 (gil0 2/3, gil1 0/3)": a job's runs that showed the finding, per GIL mode."""
    modes = ", ".join(f"{m} {r}" for m, r in s.by_mode.items())
    return f"{s.full_version or s.interpreter}: {s.ratio or 'seen'}" + (f" ({modes})" if modes else "")


def _row(e: FeedEntry) -> dict[str, Any]:
    return {
        "e": e,
        "page": "../pkg/" + page_name(e.counts[0].job_id) if e.counts else "",
        "counts": "; ".join(_counts(s) for s in e.counts),
        "reported": https_url(e.reported),
    }


def pages(feed: Feed) -> list[tuple[str, str, list[FeedEntry]]]:
    """(file name, what it shows, its findings) of every bugs page, the whole list first."""
    kinds = sorted({e.kind for e in feed.findings}, key=severity)
    lines = sorted({e.line for e in feed.findings})
    out = [("index.html", "", list(feed.findings))]
    out += [(kind_page(k), k, [e for e in feed.findings if e.kind == k]) for k in kinds]
    out += [(line_page(li), f"on {li}", [e for e in feed.findings if e.line == li]) for li in lines]
    return out


def render(report: CompatReport, feed: Feed, name: str, shows: str, found: list[FeedEntry]) -> str:
    kinds = Counter(e.kind for e in feed.findings)
    lines = Counter(e.line for e in feed.findings)
    return render_template(
        "bugs.html",
        rows=[_row(e) for e in found],
        total=len(feed.findings),
        shows=shows,
        this=name,
        kinds=[(k, n, kind_page(k)) for k, n in sorted(kinds.items(), key=lambda kn: severity(kn[0]))],
        lines=[(li, n, line_page(li)) for li, n in sorted(lines.items())],
        reported=sum(1 for e in feed.findings if e.reported),
        day=feed.day,
        root="../",
        meta=report.meta,
        summary=report.summary,
    )


def write(site: Path, report: CompatReport, feed: Feed) -> list[Path]:
    """Write site/bugs/ (replaced whole); the pages written."""

    def fill(tmp: Path) -> list[str]:
        names = []
        for name, shows, found in pages(feed):
            (tmp / name).write_text(render(report, feed, name, shows, found), encoding="utf-8")
            names.append(name)
        return names

    return [site / "bugs" / n for n in swap_dir(site, "bugs", fill)]
