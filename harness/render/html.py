"""report.json -> a static site: index.html and one page per package, no server, no CDN.

jinja2 with autoescaping on; package data is never marked safe.  Only our own
CSS and JS (harness/render/static/) go in unescaped, inline, and each page's
Content-Security-Policy allows exactly those two blocks by hash, so even a
rendering bug could not make the browser run a package's text.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from ..model import INFO_KINDS, VERDICTS
from .common import (
    SEVERITY,
    coverage_counts,
    coverage_modes,
    coverage_summary,
    flatten,
    fmt_duration,
    mode_list,
    phase_summary,
    project_urls,
    safe_url,
    wheel_summary,
)

HERE = Path(__file__).parent
CHANGE_LABEL = {"newly-broken": "newly broken", "fixed": "fixed",
                "verdict-changed": "verdict changed", "new-package": "new", "removed": "removed"}


def _asset(name: str) -> str:
    return (HERE / "static" / name).read_text(encoding="utf-8")


def _sha(s: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()


def page_name(job_id: str) -> str:
    """File name of a package page; job ids are file-name safe, but never trust that."""
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in job_id).lstrip(".")
    return f"{safe or 'job'}.html"


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # every template, whatever its extension
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(duration=fmt_duration, modes=mode_list, counts=phase_summary,
                       coverage=coverage_summary, coverage_modes=coverage_modes,
                       wheel=wheel_summary, flatten=flatten,
                       http_url=safe_url, urls=project_urls)
    env.globals.update(VERDICTS=VERDICTS, SEVERITY=SEVERITY, INFO_KINDS=INFO_KINDS,
                       CHANGE_LABEL=CHANGE_LABEL)
    return env


def _log_href(rel: str, out: str) -> str:
    """Relative link from site/pkg/ to OUT/<rel> if that file is there, else ""."""
    if not rel or rel.startswith("/") or ".." in rel.split("/"):
        return ""
    if not os.path.isfile(os.path.join(out, rel)):
        return ""
    return "../../" + quote(rel)


def _phase_row(ph: dict[str, Any], out: str) -> dict[str, Any]:
    """Everything a row of the phases table shows, as plain strings (cheaper than filters)."""
    exit_code = "—" if ph["exit_code"] is None else str(ph["exit_code"])
    if ph["signal"]:
        exit_code += f" (signal {ph['signal']})"
    return {
        "name": ph["name"],
        "gil": "" if ph["gil"] is None else f"PYTHON_GIL={ph['gil']}",
        "outcome": ph["outcome"],
        "cls": "o-" + ph["outcome"].replace(" ", "-"),
        "infra": ph["infra"],
        "exit": exit_code,
        "counts": phase_summary(ph["counts"]),
        "time": fmt_duration(ph["duration"]),
        "log": ph["log"],
        "href": _log_href(ph["log"], out),
        "junit_href": _log_href(ph["junit"], out),
        "command": _command(ph),
    }


def _command(ph: dict[str, Any]) -> str:
    if not ph["command"]:
        return ""
    env = "".join(f"{k}={shlex.quote(v)} " for k, v in ph["env"].items())
    return env + shlex.join(ph["command"])


def _coverage_pct(p: dict[str, Any]) -> int:
    pair = coverage_counts(p["coverage"])
    if not pair or not pair[1]:
        return -1
    return 100 * pair[0] // pair[1]


def _history_for(history: dict[str, Any] | None, job_id: str) -> list[dict[str, Any]]:
    if not history:
        return []
    return list(history.get("packages", {}).get(job_id, []))


def render_site(report: dict[str, Any], out: Path,
                history: dict[str, Any] | None = None) -> dict[str, str]:
    """{relative path under site/: html text} for the index and every package page."""
    env = _env()
    css, js = _asset("site.css"), _asset("site.js")
    csp = (f"default-src 'none'; style-src '{_sha(css)}'; script-src '{_sha(js)}'; "
           "img-src data:; base-uri 'none'; form-action 'none'")
    common = {"css": Markup(css), "js": Markup(js), "csp": csp, "meta": report["meta"],
              "summary": report["summary"]}
    rows = []
    for p in report["packages"]:
        rows.append({
            "p": p,
            "page": "pkg/" + page_name(p["job_id"]),
            "severity": SEVERITY[p["verdict"]],
            "coverage_pct": _coverage_pct(p),
            "kinds": sorted({f["kind"] for f in p["findings"]},
                            key=lambda k: SEVERITY.get(k, len(VERDICTS))),
            "history": _history_for(history, p["job_id"]),
        })
    pages = {"index.html": env.get_template("index.html").render(
        rows=rows, changes=report.get("changes"), missing=report.get("missing", []),
        root="", **common)}
    tpl = env.get_template("package.html")
    for row in rows:
        p = row["p"]
        logs = [_phase_row(ph, str(out)) for ph in p["phases"]]
        changes = [c for c in report.get("changes") or [] if c["job_id"] == p["job_id"]]
        pages[row["page"]] = tpl.render(row=row, p=p, phases=logs, change=changes[0] if changes
                                        else None, root="../", **common)
    return pages
