"""The report (harness.results.report) -> a static site: index.html and one page per package, no server, no CDN.

jinja2 with autoescaping on; package data is never marked safe.  Only our own
CSS and JS (harness/render/static/) go in unescaped, inline, and each page's
Content-Security-Policy allows exactly those two blocks by hash, so even a
rendering bug could not make the browser run a package's text.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from ..core.model import INFO_KINDS, VERDICTS, severity
from ..results.answer import ANSWER_TEXT, cut_runs
from ..results.causes import Cause
from ..results.feed import https_url
from ..results.report import Change, CompatReport, JobEntry, PhaseRow
from .chart import ANSWER_ORDER, MARK, column_summaries, decider, runs_label, runs_per_mode
from .common import (
    coverage_counts,
    coverage_modes,
    coverage_summary,
    flatten,
    fmt_duration,
    human_date,
    human_span,
    human_time,
    mode_list,
    note_label,
    page_name,
    phase_summary,
    project_urls,
    reach_text,
    safe_url,
    setup_summary,
    wheel_mark,
    wheel_summary,
)
from .findings import groups, laptop_recipe, recipe_narrowing, what_ran
from .issuetext import Issue
from .site import package_file

HERE = Path(__file__).parent
CHANGE_LABEL = {
    "flaky": "flaky (counts do not hold)",
    "newly-broken": "newly broken",
    "fixed": "fixed",
    "verdict-changed": "verdict changed",
    "infra-error": "harness problem",
    "new-package": "new",
    "removed": "removed",
}
CELL_CHANGE = {
    "flaky": "≈ flaky",
    "newly-broken": "▼ broke",
    "fixed": "▲ fixed",
    "verdict-changed": "↻ changed",
    "infra-error": "⚙ harness",
    "new-package": "new",
    "removed": "gone",
}  # short, in a cell
WHEEL_KEYS = {
    "installed": "Installed",
    "installed_file": "File installed",
    "available": "On the index",
    "warning": "Warning",
}
MAX_CHANGES = 8  # regressions shown on the index; the other changes fold under "N more"


def _asset(name: str) -> str:
    return (HERE / "static" / name).read_text(encoding="utf-8")


def _sha(s: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()


class _Env(jinja2.Environment):
    """``x.key`` on one of our dicts is a plain item lookup (jinja's default tries
    getattr first and pays for an AttributeError on every field of every row)."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict:  # noqa: E721 - exactly dict: the report's own values
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)


@functools.cache
def _env() -> jinja2.Environment:
    """One environment per process: templates are compiled once and reused."""
    env = _Env(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # every template, whatever its extension
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    env.filters.update(
        duration=fmt_duration,
        modes=mode_list,
        counts=phase_summary,
        coverage=coverage_summary,
        coverage_modes=coverage_modes,
        wheel=wheel_summary,
        flatten=flatten,
        http_url=safe_url,
        urls=project_urls,
        setup=setup_summary,
        when=human_time,
        day=human_date,
        span=human_span,
        note_label=note_label,
    )
    env.globals.update(
        ANSWER_TEXT=ANSWER_TEXT,
        VERDICTS=VERDICTS,
        INFO_KINDS=INFO_KINDS,
        MARK=MARK,
        CHANGE_LABEL=CHANGE_LABEL,
        CELL_CHANGE=CELL_CHANGE,
        WHEEL_KEYS=WHEEL_KEYS,
    )
    return env


@functools.cache
def _common() -> dict[str, Any]:
    """Our inline CSS and JS and the CSP that allows exactly them, hashed once per process."""
    css, js = _asset("site.css"), _asset("site.js")
    csp = (
        f"default-src 'none'; style-src '{_sha(css)}'; script-src '{_sha(js)}'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    return {"css": Markup(css), "js": Markup(js), "csp": csp}


def warm() -> None:
    """Compile the templates and hash the assets now (before forking workers)."""
    _common()
    for name in ("index.html", "package.html"):
        _env().get_template(name)


def render_template(name: str, **context: Any) -> str:
    """A page of the site from one of our templates, with our inline CSS, JS and their CSP."""
    return _env().get_template(name).render(**context, **_common())


def _log_href(rel: str, logs: dict[str, str]) -> str:
    """Relative link from site/pkg/ to the site's copy of OUT/<rel> (harness.render.site), or ""
    when the site did not keep it."""
    kept = logs.get(rel) if rel else None
    return "../" + quote(kept) if kept else ""


def _phase_row(ph: PhaseRow, logs: dict[str, str]) -> dict[str, Any]:
    """Everything a row of the phases table shows, as plain strings (cheaper than filters)."""
    exit_code = "—" if ph.exit_code is None else str(ph.exit_code)
    if ph.signal:
        exit_code += f" (signal {ph.signal})"
    return {
        "name": ph.name,
        "gil": "" if ph.gil is None else f"PYTHON_GIL={ph.gil}",
        "outcome": ph.outcome,
        "cls": "o-" + ph.outcome.replace(" ", "-"),
        "infra": ph.infra,
        "exit": exit_code,
        "counts": phase_summary(ph.counts),
        "time": fmt_duration(ph.duration),
        "log": ph.log,
        "href": _log_href(ph.log, logs),
        "junit_href": _log_href(ph.junit, logs),
        "command": _command(ph),
    }


_quote = functools.lru_cache(maxsize=1 << 16)(shlex.quote)  # the same words recur in every job


def _command(ph: PhaseRow) -> str:
    if not ph.command:
        return ""
    env = "".join(f"{k}={_quote(v)} " for k, v in ph.env.items())
    return env + " ".join(_quote(w) for w in ph.command)


def _coverage_pct(p: JobEntry) -> int:
    pair = coverage_counts(p.coverage)
    if not pair or not pair[1]:
        return -1
    return 100 * pair[0] // pair[1]


def _history_for(history: dict[str, Any] | None, job_id: str) -> list[dict[str, Any]]:
    """The job's entries in history.json (already checked: harness.render.history.validate)."""
    if not history or job_id not in history["packages"]:
        return []
    return [{**e, "day": human_date(e.get("run"))} for e in history["packages"][job_id]]


def _kinds(p: JobEntry) -> list[str]:
    return sorted({f.kind for f in p.findings}, key=severity)


def index_rows(report: CompatReport, history: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per job, in report order, with what both the index's cell and its page show."""
    labels = report.labels()
    rows_of = {row.name: row for row in report.table}
    blocked = causes_of(report)
    rows = []
    for p in report.packages:
        row = rows_of.get(p.name)
        siblings = [
            {
                "label": labels.get(name, name),
                "verdict": cell.verdict,
                "page": page_name(cell.job_id),
                "job_id": cell.job_id,
                "note": cell.caveat or cell.cause,
            }
            for name, cell in (row.cells.items() if row else ())
            if cell.job_id != p.job_id
        ]
        rows.append(
            {
                "p": p,
                "page": "pkg/" + page_name(p.job_id),
                "severity": severity(p.verdict),
                "coverage_pct": _coverage_pct(p),
                "coverage": coverage_summary(p.coverage),
                "wheel": wheel_summary(p.wheel),
                "time": fmt_duration(p.duration),
                "name_key": p.name.lower(),
                "change": p.change,
                "kinds": _kinds(p),
                "history": _history_for(history, p.job_id),
                "label": labels.get(p.interpreter.name, p.interpreter.name),
                "several": report.several,
                "siblings": siblings,
                "decider": decider(p),
                "reach": reach_text(*p.reach, p.settings, cut_runs(p)),
                "wheel_mark": wheel_mark(p.wheel.available if p.wheel else None),
                "blocked": next(
                    (
                        {"root": c.root, "text": c.text}
                        for c in blocked.get(p.job_id, ())
                        if c.root and c.root.lower() != p.name.lower()
                    ),
                    None,
                ),
            }
        )
    return rows


def table_rows(report: CompatReport, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The index's rows: one per package (report.table), a cell per interpreter column (the
    job's row from ``index_rows``, or None where the package did not run), most severe first."""
    by_job = {r["p"].job_id: r for r in rows}
    out = []
    for t in report.table:
        cells = [by_job.get(cell.job_id) if (cell := t.cell(c.name)) else None for c in report.interpreters]
        first = min((c for c in cells if c is not None), key=lambda c: c["severity"])
        out.append(
            {
                "t": t,
                "cells": cells,
                "severity": severity(t.verdict),
                "name_key": t.name.lower(),
                "page": first["page"],
                "changed": any(c is not None and c["change"] for c in cells),
            }
        )
    return sorted(out, key=lambda r: r["severity"])  # stable: report order within a verdict


def _changes(report: CompatReport) -> tuple[list[Change], list[Change]] | None:
    """The changes card: (shown, folded): regressions first, at most MAX_CHANGES shown."""
    if report.changes is None:
        return None
    order = sorted(report.changes, key=lambda c: (not c.regression, c.kind != "infra-error"))
    cut = min(MAX_CHANGES, sum(1 for c in order if c.regression) or min(3, len(order)))
    return order[:cut], order[cut:]


def _cause_rows(report: CompatReport, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    pages = {r["p"].job_id: r["page"] for r in rows}
    out = []
    for c in report.causes:
        seen: dict[str, tuple[str, str]] = {}  # package -> (its page, the test dep it came by)
        for m in c.members:
            page, via = seen.get(m.package, (pages.get(m.job_id, ""), ""))
            seen[m.package] = (page, via or m.via)
        out.append({"c": c, "packages": [(name, page, via) for name, (page, via) in seen.items()]})
    return out


def render_index(report: CompatReport, rows: list[dict[str, Any]], bugs: int | None = None) -> str:
    """index.html: per interpreter "N of M compatible" and a bar, then a row per package, a
    column per interpreter, most severe first; the causes that blocked several packages;
    ``bugs``: the findings of the feed, linked to the bugs pages (harness.render.bugs)."""
    changes = _changes(report)
    return (
        _env()
        .get_template("index.html")
        .render(
            table=table_rows(report, rows),
            columns=report.interpreters,
            answers=column_summaries(report),
            causes=_cause_rows(report, rows),
            blocked=len({m.package for c in report.causes for m in c.members}),
            jobs=len(rows),
            changes=report.changes,
            shown_changes=changes[0] if changes else [],
            more_changes=changes[1] if changes else [],
            missing=report.missing,
            answer_counts=[(a, report.answers[a]) for a in ANSWER_ORDER if report.answers.get(a)],
            root="",
            bugs=bugs,
            meta=report.meta,
            summary=report.summary,
            **_common(),
        )
    )


def causes_of(report: CompatReport) -> dict[str, list[Cause]]:
    """job id -> the causes that list it."""
    out: dict[str, list[Cause]] = {}
    for c in report.causes:
        for m in c.members:
            out.setdefault(m.job_id, []).append(c)
    return out


def render_page(
    report: CompatReport,
    row: dict[str, Any],
    logs: dict[str, str],
    change: Change | None,
    causes: list[Cause] | None = None,
) -> str:
    """One package page (site/<row["page"]>)."""
    p: JobEntry = row["p"]

    filed = row.get("reported") or {}  # (kind, test id or module) -> the upstream issue (https)

    def view(f: Any) -> dict[str, Any]:
        return {
            "f": f,
            "recipe": laptop_recipe(p, f),
            "runs": runs_label(f, runs_per_mode(p, f)),
            "reported": https_url(filed.get((f.kind, f.test_id or f.module), "")),
        }

    jobs = {q.job_id: q for q in report.packages} if row["siblings"] else {}
    seen = {
        s["label"]: {(f.kind, f.test_id, f.module) for f in jobs[s["job_id"]].findings}
        for s in row["siblings"]
        if s["job_id"] in jobs
    }

    def also(f: Any) -> list[str]:  # the other interpreters where the same finding was made
        return [label for label, found in seen.items() if (f.kind, f.test_id, f.module) in found]

    found = [
        {**g, "lead": view(g["lead"]), "rest": [view(f) for f in g["rest"]], "also": also(g["lead"])} for g in groups(p)
    ]
    issues = [issue_view(i, logs) for i in row.get("issues") or ()]  # the upstream-ready issues (#57)
    showed = {r["name"]: i["kind"] for i in issues for r in i["runs"]}
    return (
        _env()
        .get_template("package.html")
        .render(
            row=row,
            p=p,
            phases=[{**_phase_row(ph, logs), "showed": showed.get(ph.name, "")} for ph in p.phases],
            issues=issues,
            change=change,
            groups=found,
            ran=what_ran(p),
            narrowed=recipe_narrowing(p.test_setup),
            causes=causes or [],
            api=package_file(p.name),
            wheel_warning=p.wheel.warning if p.wheel else "",
            root="../",
            meta=report.meta,
            summary=report.summary,
            **_common(),
        )
    )


def issue_view(i: Issue, logs: dict[str, str]) -> dict[str, Any]:
    """An issue as the package page shows it: its text, the first failure, the runs that
    showed it linked to their logs on the site."""
    runs = [
        {"name": r.name, "gil": r.gil, "href": _log_href(r.log, logs), "junit_href": _log_href(r.junit, logs)}
        for r in i.facts.runs
    ]
    return {
        "title": i.title.replace("`", ""),  # Markdown code marks: the page shows the words
        "text": i.text,
        "kind": i.finding.kind,
        "failure": i.facts.failure,
        "failure_from": i.facts.failure_from,
        "runs": runs,
    }


def changes_by_job(report: CompatReport) -> dict[str, Change]:
    out: dict[str, Change] = {}
    for c in report.changes or ():
        out.setdefault(c.job_id, c)  # the first change of a job, as before
    return out


def iter_pages(report: CompatReport, logs: dict[str, str], rows: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    """(path under site/, html) of each row's package page, rendered one at a time; ``logs``
    maps a log's path under out/ to its copy under site/ (harness.render.site.publish_logs)."""
    by_job = changes_by_job(report)
    blocked = causes_of(report)
    for row in rows:
        job = row["p"].job_id
        yield row["page"], render_page(report, row, logs, by_job.get(job), blocked.get(job))
