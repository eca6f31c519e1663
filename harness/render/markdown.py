"""report.json -> report.md: a summary line, changes, the table, then findings with evidence.

Suitable as a GitHub step summary and a PR comment.  Everything that came from
a package is escaped: table text has Markdown and HTML specials escaped, code
is fenced with a fence longer than any backtick run inside it.
"""

from __future__ import annotations

import functools
import re
from typing import Any
from urllib.parse import quote

from ..model import severity
from .common import (
    coverage_summary,
    fmt_duration,
    mode_list,
    phase_summary,
    safe_url,
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
               "new-package": "🆕", "removed": "➖"}
MAX_EXCERPT_LINES = 40
_URL_SAFE = ":/?#@!$&'()*+,;=%~-._"  # everything else (<, >, spaces, quotes) is %-encoded
_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def text(s: Any) -> str:
    """One line of package-supplied text, inert in Markdown and in GitHub's HTML."""
    return _text(str(s))


@functools.lru_cache(maxsize=1 << 16)  # names, phases, outcomes recur on many rows
def _text(s: str) -> str:
    s = _SPECIAL.sub(r"\\\1", s)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return " ".join(s.split())


def code(s: Any) -> str:
    """Inline code that survives any content, also inside a table cell."""
    s = " ".join(str(s).split()).replace("|", "\\|")
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
    body = "\n".join(lines)
    run = max((len(m) for m in re.findall(r"`{3,}", body)), default=0)
    fence = "`" * max(3, run + 1)
    return f"{fence}{lang}\n{body}\n{fence}"


def summary_line(report: dict[str, Any]) -> str:
    n = len(report["packages"])
    parts = [f"{ICON[v]} {c} {v}" for v, c in report["summary"].items() if c]
    line = f"**{n} package{'s' if n != 1 else ''}**" + (": " + " · ".join(parts) if parts else "")
    if report.get("missing"):
        line += f" · ❓ {len(report['missing'])} missing"
    return line


def _meta_line(report: dict[str, Any]) -> str:
    m = report["meta"]
    bits = []
    interps = sorted({(p["interpreter"]["name"], p["interpreter"]["version"],
                       " ".join(p["interpreter"]["configure"]))
                      for p in report["packages"]})
    for name, ver, flags in interps:
        bits.append(f"{text(name)} (CPython {text(ver)} {text(flags)})".replace(" )", ")"))
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
    for c in changes:
        mark = "**regression**" if c["regression"] else ""
        out.append(
            f"| {CHANGE_ICON[c['kind']]} {mark} | {text(c['package'])} {text(c['new_version'] or c['old_version'])} "
            f"| {c['kind']} | {c['old'] or '—'} | {c['new'] or '—'} |"
        )
    return out + [""]


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
            f"| {text(wheel_summary(p['wheel']))} | {fmt_duration(p['duration'])} | {change} |")


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


def _details(p: dict[str, Any]) -> list[str]:
    title = f"### {ICON[p['verdict']]} {text(p['name'])} {text(p['version'])} — {p['verdict']}"
    out = [title, ""]
    if p["qualifier"]:
        out += [f"_{text(p['qualifier'])}_", ""]
    for f in p["findings"]:
        out += _finding(f)
    if p["notes"]:
        out += [f"> **Note:** {text(p['notes'])}", ""]
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
            out.append(f"| {text(p['name'])} | {text(ph['name'])} | {ph['outcome']} | {exitc} "
                       f"| {text(phase_summary(ph['counts']))} | {fmt_duration(ph['duration'])} |")
    return out + ["", "</details>", ""]


def render(report: dict[str, Any], *, title: str = "Free-threaded compatibility report") -> str:
    lines = [f"# {title}", "", summary_line(report), "", _meta_line(report), ""]
    lines += _changes(report)
    if report.get("missing"):
        lines += ["## Missing results", "", "Expected by the plan, but no result file:", ""]
        lines += [f"- {code(j)}" for j in report["missing"]] + [""]
    lines += ["## Packages", "",
              "| Package | Version | Interpreter | Verdict | Findings | Tests in threads | Wheel "
              "| Duration | Change |",
              "|---|---|---|---|---|---|---|---|---|"]
    lines += [_row(p) for p in report["packages"]] + [""]
    with_findings = [p for p in report["packages"] if p["findings"] or p["notes"] or p["links"]]
    if with_findings:
        lines += ["## Findings", ""]
        for p in sorted(with_findings, key=lambda p: severity(p["verdict"])):
            lines += _details(p)
    lines += _phases(report)
    return "\n".join(lines).rstrip() + "\n"
