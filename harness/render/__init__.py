"""Write every format of a report: report.json, report.md, junit.xml and site/.

All of them are rendered from the report.json document (harness.aggregate),
never from the results directly.  Each file is written whole then renamed
into place, so a reader never sees half of one.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..model import write_json_atomic, write_text_atomic
from . import history as _history
from . import html, junit, markdown, pool

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


def report_json(report: dict[str, Any]) -> str:
    """report.json text: one package (or change) per line, so it stays greppable and diffable
    and is encoded by json's C encoder (an indented dump of 10,000 packages takes ~25 s)."""
    head = {k: v for k, v in report.items() if k not in ("packages", "changes")}
    lines = ["{"]
    for k, v in head.items():
        lines.append(f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)},")
    for key in ("changes", "packages"):
        if key not in report:
            continue
        items = [_ENCODE(x) for x in report[key]]
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


def _write_range(state: tuple[dict[str, Any], Path, list[dict[str, Any]], Path],
                 part: tuple[int, int]) -> list[str]:
    """Render and write the package pages of rows[start:stop] into ``tmp``."""
    report, out, rows, tmp = state
    names = []
    for rel, text in html.iter_pages(report, out, rows[part[0]:part[1]]):
        name = _page_file(rel)
        with open(tmp / name, "w", encoding="utf-8") as f:
            f.write(text)
        names.append(name)
    return names


def write_pages(site: Path, report: dict[str, Any], out: Path, rows: list[dict[str, Any]],
                *, then: Callable[[], None] = lambda: None) -> list[Path]:
    """Write every row's package page under site/pkg/ as one directory swap.

    The pages go, plainly written, into a fresh hidden directory next to
    site/pkg, which then replaces site/pkg whole: a reader sees the old set of
    pages or the new one (a temp file and a rename per page cost more than the
    page).  Pages of packages no longer in the report go.  Big reports are
    rendered by forked workers on every core (harness.render.pool); ``then``
    runs in this process meanwhile (or after, when there are no workers).
    """
    site.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=site, prefix=".pkg-"))
    trash = None
    try:
        os.chmod(tmp, 0o755)  # mkdtemp makes it 0700; the site is for everyone to read
        state = (report, out, rows, tmp)
        html.warm()  # compile the templates once, before forking
        size = min(200, -(-len(rows) // (4 * pool.workers())))  # ≥ 4 parts a worker
        wait = pool.start(_write_range, state, pool.chunks(len(rows), size), items=len(rows))
        if wait is None:
            names = _write_range(state, (0, len(rows)))
            then()
        else:
            try:
                then()
            except BaseException:
                wait(cancel=True)
                raise
            names = [n for part in wait() for n in part]
        final = site / "pkg"
        if final.exists():
            trash = Path(tempfile.mkdtemp(dir=site, prefix=".pkg-old-"))
            os.replace(final, trash / "pkg")
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if trash is not None:
            shutil.rmtree(trash, ignore_errors=True)
    return [final / n for n in names]


def write_all(report: dict[str, Any], out: Path, *, history: dict[str, Any] | None = None,
              step_summary: bool = True, site_url: str = "") -> list[Path]:
    """Render ``report`` into ``out``; returns the files written.

    ``history`` is the previous site's history.json (or None); the new one,
    extended by this run and trimmed to the last 10 runs, is written to
    out/site/history.json and drawn on the pages.  When $GITHUB_STEP_SUMMARY
    is set (and ``step_summary``), report.md is appended to it, under a link to ``site_url``.
    """
    with pool.frozen_heap():
        return _write_all(report, Path(out), history, step_summary, site_url)


def _write_all(report: dict[str, Any], out: Path, history: dict[str, Any] | None,
               want_summary: bool = True, site_url: str = "") -> list[Path]:
    written: list[Path] = []
    hist = _history.update(history, report)
    site = out / "site"
    rows = html.index_rows(report, hist)
    md = ""

    def the_rest() -> None:  # in this process, while workers render the package pages
        nonlocal md
        write_text_atomic(out / "report.json", report_json(report))
        md = markdown.render(report)
        write_text_atomic(out / "report.md", md)
        write_text_atomic(out / "junit.xml", junit.render(report))
        write_text_atomic(site / "index.html", html.render_index(report, rows))

    pages = write_pages(site, report, out, rows, then=the_rest)
    written += [out / "report.json", out / "report.md", out / "junit.xml",
                site / "index.html", *pages]
    write_json_atomic(site / "history.json", hist)
    written.append(site / "history.json")
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path and want_summary:
        link = f"**The published table: <{site_url}>**\n\n" if site_url.startswith("https://") else ""
        with open(summary_path, "a", encoding="utf-8") as f:
            f.write(link + step_summary(md))
        log.info("appended report.md to $GITHUB_STEP_SUMMARY (%s)", summary_path)
    log.info("wrote %d report files under %s", len(written), out)
    return written
