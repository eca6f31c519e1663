"""report.json -> report.md: a summary line, changes, the packages table (a row per package,
a column per interpreter, what differs between them), the jobs table, then findings with evidence.

Suitable as a GitHub step summary and a PR comment.  Everything that came from
a package is escaped: table text has Markdown and HTML specials escaped, code
is fenced with a fence longer than any backtick run inside it, and control characters
(ESC, BEL, NUL ...) and workflow-command line starts are made inert (harness.textsafe).
"""

from __future__ import annotations

import functools
import re
from typing import Any
from urllib.parse import quote

from .. import textsafe
from ..model import severity
from .common import (
    coverage_summary,
    fmt_duration,
    mode_list,
    phase_summary,
    safe_url,
    setup_summary,
    wheel_summary,
)

ICON = {
    "build-failure": "⛔",
    "infra-error": "⚙️",
    "ft-crash": "💥",
    "crash": "💥",
    "hang": "⏳",
    "ft-race": "🔀",
    "thread-unsafe": "🧵",
    "gil-reenabled": "🔒",
    "baseline-failure": "🟡",
    "compatible": "✅",
    "no-tests": "⚪",
    "no-thread-coverage": "ℹ️",
    "unconfirmed": "❔",
    "setup-error": "🧩",
}
CHANGE_ICON = {"newly-broken": "🔻", "fixed": "🔺", "verdict-changed": "🔁",
               "infra-error": "🛠️", "new-package": "🆕", "removed": "➖"}
MAX_EXCERPT_LINES = 40
_URL_SAFE = ":/?#@!$&'()*+,;=%~-._"  # everything else (<, >, spaces, quotes) is %-encoded
_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def text(s: Any) -> str:
    """One line of package-supplied text, inert in Markdown and in GitHub's HTML."""
    return _text(str(s))


@functools.lru_cache(maxsize=1 << 16)  # names, phases, outcomes recur on many rows
def _text(s: str) -> str:
    s = textsafe.controls(s, keep="\t\n\r")  # whitespace is joined below
    s = _SPECIAL.sub(r"\\\1", s)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return textsafe.no_commands(" ".join(s.split()))  # shown as '::' (a Markdown escape)


def code(s: Any) -> str:
    """Inline code that survives any content, also inside a table cell."""
    s = textsafe.line(" ".join(str(s).split())).replace("|", "\\|")
    if not s:
        return ""
    run = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (run + 1)
    return f"{fence} {s} {fence}"


def block(s: str, lang: str = "") -> str:
    lines = s.splitlines()
    if len(lines) > MAX_EXCERPT_LINES:
        cut = len(lines) - MAX_EXCERPT_LINES
        lines = [f"[... {cut} earlier lines; see the log]"] + lines[-MAX_EXCERPT_LINES:]
    body = textsafe.lines("\n".join(lines))
    run = max((len(m) for m in re.findall(r"`{3,}", body)), default=0)
    fence = "`" * max(3, run + 1)
    return f"{fence}{lang}\n{body}\n{fence}"


def _columns(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's interpreter columns (report.json schema 2)."""
    return list(report.get("interpreters") or ())


def summary_line(report: dict[str, Any]) -> str:
    """Packages (table rows) per verdict, each under its most severe verdict; the jobs too when
    there is more than one interpreter."""
    n = len(report.get("table") or report["packages"])
    parts = [f"{ICON[v]} {c} {v}" for v, c in report["summary"].items() if c]
    line = f"**{n} package{'s' if n != 1 else ''}**"
    cols = _columns(report)
    if len(cols) > 1:
        line += f" on {len(cols)} interpreters ({len(report['packages'])} jobs)"
    line += ": " + " · ".join(parts) if parts else ""
    if report.get("missing"):
        line += f" · ❓ {len(report['missing'])} missing"
    return line


def _meta_line(report: dict[str, Any]) -> str:
    m = report["meta"]
    bits = []
    for c in _columns(report):
        what = " ".join(x for x in (f"CPython {c['full_version'] or c['version']}",
                                    " ".join(c["configure"]), c["source"]) if x)
        bits.append(f"{text(c['name'])} ({text(what)})")
    if m.get("backends"):
        bits.append("backend " + text(", ".join(m["backends"])))
    if m.get("harness_version"):
        bits.append("ft-harness " + text(m["harness_version"]))
    if m.get("matrix_digest"):
        bits.append("matrix " + code(str(m["matrix_digest"])[:12]))
    if m.get("started") or m.get("finished"):
        bits.append(f"{text(m.get('started', ''))} → {text(m.get('finished', ''))}")
    return " · ".join(bits)


def _changes(report: dict[str, Any]) -> list[str]:
    changes = report.get("changes")
    if changes is None:
        return []
    out = ["## Changes since the previous report", ""]
    if not changes:
        return out + ["No verdict changed.", ""]
    out += ["| | Package | Change | Before | Now |", "|---|---|---|---|---|"]
    several = len(_columns(report)) > 1
    # regressions first, then what was not the package's doing, then the rest
    order = sorted(changes, key=lambda c: (not c["regression"], c["kind"] != "infra-error"))
    for c in order:
        mark = "**regression**" if c["regression"] else ""
        where = f" [{text(c['interpreter'])}]" if several and c.get("interpreter") else ""
        out.append(
            f"| {CHANGE_ICON[c['kind']]} {mark} | {text(c['package'])} {text(c['new_version'] or c['old_version'])}{where} "
            f"| {c['kind']} | {text(c['old'] or '—')} | {text(c['new'] or '—')} |"
        )
    return out + [""]


def _cell(cell: dict[str, Any] | None, version: str) -> str:
    if cell is None:
        return "—"
    out = f"{ICON[cell['verdict']]} **{cell['verdict']}**"
    if cell["qualifier"]:
        out += f" ({text(cell['qualifier'])})"
    if not version:  # the package's version differs between interpreters: say each one
        out += f" {text(cell['version'])}"
    if cell.get("change"):
        out += f" {CHANGE_ICON[cell['change']]} {cell['change']}"
    return out


def packages_table(report: dict[str, Any]) -> list[str]:
    """One row per package, one column per interpreter (verdict + badge), then what differs."""
    cols = _columns(report)
    several = len(cols) > 1  # with one interpreter nothing can differ: no "Across" column
    head = "| Package | Version | " + " | ".join(text(c["label"]) for c in cols) + " |"
    out = [head + (" Across interpreters |" if several else ""),
           "|---|---|" + "---|" * (len(cols) + several)]
    for row in report.get("table") or ():
        cells = " | ".join(_cell(row["cells"].get(c["name"]), row["version"]) for c in cols)
        line = f"| {text(row['name'])} | {text(row['version']) or 'differs'} | {cells} |"
        out.append(line + (f" {text(row['across'])} |" if several else ""))
    return out


def _row(p: dict[str, Any]) -> str:
    kinds = sorted({f["kind"] for f in p["findings"]}, key=severity)
    findings = ", ".join(f"{ICON[k]} {k}" for k in kinds) or "—"
    verdict = f"{ICON[p['verdict']]} **{p['verdict']}**"
    if p["qualifier"]:
        verdict += f" ({text(p['qualifier'])})"
    change = p.get("change", "")
    change = f"{CHANGE_ICON[change]} {change}" if change else ""
    return (f"| {text(p['name'])} | {text(p['version'])} | {text(p['interpreter']['name'])} "
            f"| {verdict} | {findings} | {text(coverage_summary(p['coverage']))} "
            f"| {text(wheel_summary(p['wheel']))} | {_setup_origin(p)} | {fmt_duration(p['duration'])} "
            f"| {change} |")


def _setup_origin(p: dict[str, Any]) -> str:
    """Where the job's test setup came from: ``inferred``, ``matrix.yaml`` or both."""
    ts = p.get("test_setup") or {}
    got = {str(v) for k in ("tests_from", "requires_from", "pytest_args_from") if (v := ts.get(k))}
    return " + ".join(sorted(got)) if got else "—"


def _finding(f: dict[str, Any]) -> list[str]:
    head = f"- {ICON.get(f['kind'], '')} **{f['kind']}**"
    if f["test_id"]:
        head += " " + code(f["test_id"])
    bits = []
    if f["modes"]:
        bits.append(mode_list(f["modes"]))
    if f["ratio"]:
        bits.append(f"{f['ratio']} runs")
    if f["evidence"]:
        bits.append(f"evidence: {text(f['evidence'])}")
    if f.get("module"):
        bits.append("module " + code(f["module"]))
    if f.get("signal"):
        bits.append(f"signal {f['signal']}")
    if bits:
        head += " — " + ", ".join(bits)
    out = [head]
    if f["message"]:
        out.append(f"  {text(f['message'])}")
    if f["reproduce"]:
        out += ["", "  Reproduce:", "", _indent(block(f["reproduce"], "sh"))]
    if f["excerpt"]:
        out += ["", "  <details><summary>Evidence</summary>", "",
                _indent(block(f["excerpt"])), "", "  </details>"]
    return out + [""]


def _indent(s: str) -> str:
    return "\n".join("  " + line if line else line for line in s.splitlines())


def _details(p: dict[str, Any], labels: dict[str, str]) -> list[str]:
    """A job's findings; ``labels`` (interpreter name -> column label) when there are several."""
    title = f"### {ICON[p['verdict']]} {text(p['name'])} {text(p['version'])} — {p['verdict']}"
    if labels:
        title += f" · {text(labels.get(p['interpreter']['name'], p['interpreter']['name']))}"
    out = [title, ""]
    if p["qualifier"]:
        out += [f"_{text(p['qualifier'])}_", ""]
    for f in p["findings"]:
        out += _finding(f)
    if p["notes"]:
        out += [f"> **Note:** {text(p['notes'])}", ""]
    setup = setup_summary(p.get("test_setup") or {})
    if setup:
        out += [f"_Test setup: {text(setup)}_", ""]
    links = [u for u in p["links"] if safe_url(u)]
    for u in links:
        out.append(f"- <{quote(u, safe=_URL_SAFE)}>")
    if links:
        out.append("")
    return out


def _phases(report: dict[str, Any]) -> list[str]:
    out = ["## Phase outcomes", "", "<details><summary>Per package and phase</summary>", "",
           "| Package | Phase | Outcome | Exit | Tests | Duration |", "|---|---|---|---|---|---|"]
    for p in report["packages"]:
        for ph in p["phases"]:
            exitc = "—" if ph["exit_code"] is None else str(ph["exit_code"])
            if ph["signal"]:
                exitc += f" (signal {ph['signal']})"
            out.append(f"| {text(p['name'])} ({text(p['interpreter']['name'])}) | {text(ph['name'])} | {ph['outcome']} | {exitc} "
                       f"| {text(phase_summary(ph['counts']))} | {fmt_duration(ph['duration'])} |")
    return out + ["", "</details>", ""]


def render(report: dict[str, Any], *, title: str = "Free-threaded compatibility report") -> str:
    lines = [f"# {title}", "", summary_line(report), "", _meta_line(report), ""]
    lines += _changes(report)
    if report.get("missing"):
        lines += ["## Missing results", "", "Expected by the plan, but no result file:", ""]
        lines += [f"- {code(j)}" for j in report["missing"]] + [""]
    lines += ["## Packages", "", *packages_table(report), ""]
    lines += ["## Jobs", "",
              "| Package | Version | Interpreter | Verdict | Findings | Tests in threads | Wheel "
              "| Test setup | Duration | Change |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    lines += [_row(p) for p in report["packages"]] + [""]
    with_findings = [p for p in report["packages"] if p["findings"] or p["notes"] or p["links"]]
    cols = _columns(report)
    labels = {c["name"]: c["label"] for c in cols} if len(cols) > 1 else {}
    if with_findings:
        lines += ["## Findings", ""]
        for p in sorted(with_findings, key=lambda p: severity(p["verdict"])):
            lines += _details(p, labels)
    lines += _phases(report)
    return "\n".join(lines).rstrip() + "\n"
