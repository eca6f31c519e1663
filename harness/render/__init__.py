"""Write every format of a report: report.json, report.md, junit.xml and site/.

All of them are rendered from the typed report (harness.results.report.CompatReport, built by
harness.results.aggregate), never from the results directly; report.json is its ``to_dict()``.  Each file is written whole then renamed
into place (each directory of the site swapped in whole), so a reader never sees
half of one.  site/ stands alone: it holds everything its pages link
(harness.render.site), so publishing site/ publishes all of it.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..results import feed as _feed
from ..results.report import CompatReport
from ..util import pool
from ..util.safefiles import write_json_atomic, write_text_atomic
from . import bugs as _bugs
from . import history as _history
from . import html, issuetext, junitreport, markdown
from . import site as _site

log = logging.getLogger(__name__)

# GitHub refuses a step summary over 1 MiB; keep ours well under it.
STEP_SUMMARY_LIMIT = 900_000


def step_summary(md: str) -> str:
    """report.md cut to what GitHub accepts as a step summary."""
    data = md.encode("utf-8")
    if len(data) <= STEP_SUMMARY_LIMIT:
        return md
    cut = data[:STEP_SUMMARY_LIMIT].decode("utf-8", "ignore")
    cut = cut[: cut.rfind("\n") + 1]
    if cut.count("```") % 2:  # do not leave a code fence open
        cut += "```\n"
    return cut + "\n_… report.md truncated for the step summary; see the report artifact._\n"


_ENCODE = json.JSONEncoder(ensure_ascii=False).encode  # one C encoder for every line


def encode_packages(report: CompatReport) -> list[str]:
    """Each of report.packages as JSON text (report.json's lines, the site's per-package files)."""
    return [_ENCODE(p.to_dict()) for p in report.packages]


def report_json(report: CompatReport, encoded: list[str] | None = None) -> str:
    """report.json text: one package (or change) per line, so it stays greppable and diffable
    and is encoded by json's C encoder (an indented dump of 10,000 packages takes ~25 s);
    ``encoded``: the packages already encoded (encode_packages)."""
    doc = report.to_dict(packages=False)
    changes = doc.pop("changes", None)
    lines = ["{"]
    for k, v in doc.items():
        lines.append(f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)},")
    if encoded is None:
        encoded = encode_packages(report)
    for key, items in (("changes", None if changes is None else [_ENCODE(c) for c in changes]), ("packages", encoded)):
        if items is None:
            continue
        body = ",\n".join(items)
        lines.append(f"{json.dumps(key)}: [\n{body}\n]," if items else f"{json.dumps(key)}: [],")
    lines[-1] = lines[-1].rstrip(",")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _page_file(rel: str) -> str:
    name = rel.removeprefix("pkg/")
    if "/" in name or name.startswith(".") or not name:
        raise ValueError(f"not a page name: {rel!r}")
    return name


def _write_range(
    state: tuple[CompatReport, dict[str, str], list[dict[str, Any]], Path], part: tuple[int, int]
) -> list[str]:
    """Render and write the package pages of rows[start:stop] into ``tmp``."""
    report, logs, rows, tmp = state
    names = []
    for rel, text in html.iter_pages(report, logs, rows[part[0] : part[1]]):
        name = _page_file(rel)
        with open(tmp / name, "w", encoding="utf-8") as f:
            f.write(text)
        names.append(name)
    return names


def write_pages(
    site: Path,
    report: CompatReport,
    logs: dict[str, str],
    rows: list[dict[str, Any]],
    *,
    then: Callable[[], None] = lambda: None,
) -> list[Path]:
    """Write every row's package page under site/pkg/ as one directory swap.

    The pages go, plainly written, into a fresh hidden directory next to
    site/pkg, which then replaces site/pkg whole: a reader sees the old set of
    pages or the new one (a temp file and a rename per page cost more than the
    page).  Pages of packages no longer in the report go.  Big reports are
    rendered by forked workers on every core (harness.util.pool); ``then``
    runs in this process meanwhile (or after, when there are no workers).
    ``logs``: the site's copies of the logs (harness.render.site.publish_logs).
    """

    def fill(tmp: Path) -> list[str]:
        state = (report, logs, rows, tmp)
        html.warm()  # compile the templates once, before forking
        size = min(200, -(-len(rows) // (4 * pool.workers())))  # ≥ 4 parts a worker
        wait = pool.start(_write_range, state, pool.chunks(len(rows), size), items=len(rows))
        if wait is None:
            names = _write_range(state, (0, len(rows)))
            then()
            return names
        try:
            then()
        except BaseException:
            wait(cancel=True)
            raise
        return [n for part in wait() for n in part]

    names = _site.swap_dir(site, "pkg", fill)
    return [site / "pkg" / n for n in names]


def write_all(
    report: CompatReport,
    out: Path,
    *,
    history: dict[str, Any] | None = None,
    step_summary: bool = True,
    site_url: str = "",
    feed: _feed.Feed | None = None,
) -> list[Path]:
    """Render ``report`` into ``out``; returns the files written.

    ``feed``: the findings feed (harness.results.feed, with what the previous feed and
    reported.yaml added), written as out/findings.json and site/findings.json and shown on the
    bugs pages (harness.render.bugs); its ``reported`` links are shown beside their findings
    in report.md and on the package pages.  None: the report's own feed, with no memory.

    ``history`` is the previous site's history.json (or None); the new one,
    extended by this run and trimmed to the last 10 runs, is written to
    out/site/history.json and drawn on the pages.  When $GITHUB_STEP_SUMMARY
    is set (and ``step_summary``), report.md is appended to it, under a link to ``site_url``.
    """
    with pool.frozen_heap():
        return _write_all(report, Path(out), history, step_summary, site_url, feed)


def feed_json(feed: _feed.Feed) -> str:
    """findings.json text: one finding a line (json's C encoder), like report.json's packages."""
    doc = feed.to_dict()
    body = ",\n".join(_ENCODE(e) for e in doc.pop("findings"))
    head = ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in doc.items())
    return "{" + head + ', "findings": [\n' + body + ("\n" if body else "") + "]}\n"


def _reported_rows(rows: list[dict[str, Any]], feed: _feed.Feed) -> None:
    """Each row's ``reported``: (kind, test id or module) -> the upstream issue it was filed as."""
    by_job: dict[str, dict[tuple[str, str], str]] = {}
    for (job, kind, what), url in feed.links().items():
        by_job.setdefault(job, {})[(kind, what)] = url
    for r in rows:
        r["reported"] = by_job.get(r["p"].job_id, {})


def _write_all(
    report: CompatReport,
    out: Path,
    history: dict[str, Any] | None,
    want_summary: bool = True,
    site_url: str = "",
    feed: _feed.Feed | None = None,
) -> list[Path]:
    written: list[Path] = []
    hist = _history.update(history, report)
    site = out / "site"
    feed = feed if feed is not None else _feed.build(report)[0]
    rows = html.index_rows(report, hist)
    _reported_rows(rows, feed)
    logs = _site.publish_logs(report, out, site)
    issues = issuetext.issues_by_job(report, out)  # the upstream-ready issues (#57), read from out/ once
    for row in rows:
        row["issues"] = issues.get(row["p"].job_id, [])
    md = ""
    api: list[Path] = []

    def the_rest() -> None:  # in this process, while workers render the package pages
        nonlocal md, api
        encoded = encode_packages(report)
        text = report_json(report, encoded)
        write_text_atomic(out / "report.json", text)
        write_text_atomic(site / "report.json", text)  # the site links its own copy
        md = markdown.render(report, site_url=site_url, reported=feed.links(), issues=issues)
        write_text_atomic(out / "report.md", md)
        write_text_atomic(out / "junit.xml", junitreport.render(report))
        write_text_atomic(site / "index.html", html.render_index(report, rows, bugs=len(feed.findings)))
        found = feed_json(feed)
        write_text_atomic(out / _feed.FEED_FILE, found)
        write_text_atomic(site / _feed.FEED_FILE, found)
        api = _site.write_api(report, site, rows, logs, encoded) + _bugs.write(site, report, feed)

    pages = write_pages(site, report, logs, rows, then=the_rest)
    written += [
        out / "report.json",
        out / "report.md",
        out / "junit.xml",
        out / _feed.FEED_FILE,
        site / "index.html",
        site / "report.json",
        site / _feed.FEED_FILE,
        *api,
        *pages,
    ]
    written += [site / rel for rel in logs.values()]
    write_json_atomic(site / "history.json", hist)
    written.append(site / "history.json")
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path and want_summary:
        with open(summary_path, "a", encoding="utf-8") as f:
            f.write(step_summary(md))  # report.md links the site itself (site_url)
        log.info("appended report.md to $GITHUB_STEP_SUMMARY (%s)", summary_path)
    log.info("wrote %d report files under %s", len(written), out)
    return written
