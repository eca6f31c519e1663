"""report.md's text: package-supplied text made inert (``text``, ``code``, ``block``), the
verdicts' and changes' icons, the lines that count what a list left out, the links to the site
(harness.render.markdown and harness.render.mdfindings write with these).

Everything that came from a package is escaped: table text has Markdown and HTML specials
escaped, code is fenced with a fence longer than any backtick run inside it, and control
characters (ESC, BEL, NUL ...) and workflow-command line starts are made inert
(harness.util.textsafe).
"""

from __future__ import annotations

import functools
import re
from typing import Any
from urllib.parse import quote

from ..util import textsafe
from .common import page_name

ICON = {
    "build-failure": "⛔",
    "infra-error": "⚙️",
    "ft-crash": "💥",
    "crash": "☠️",
    "hang": "⏳",
    "ft-race": "🔀",
    "thread-unsafe": "🧵",
    "gil-reenabled": "🔒",
    "baseline-failure": "🟡",
    "compatible": "✅",
    "no-tests": "⚪",
    "skipped": "⏭️",
    "no-thread-coverage": "ℹ️",
    "unconfirmed": "❔",
    "setup-error": "🧩",
    "budget-spent": "⌛",
    "slow-in-threads": "🐢",
    "repeat-failure": "🔁",
}
CHANGE_ICON = {
    "flaky": "≈",
    "newly-broken": "🔻",
    "fixed": "🔺",
    "verdict-changed": "🔁",
    "infra-error": "🛠️",
    "new-package": "🆕",
    "removed": "➖",
}
MAX_EXCERPT_LINES = 40
URL_SAFE = ":/?#@!$&'()*+,;=%~-._"  # everything else (<, >, spaces, quotes) is %-encoded
_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def text(s: Any) -> str:
    """One line of package-supplied text, inert in Markdown and in GitHub's HTML."""
    return _text(str(s))


@functools.lru_cache(maxsize=1 << 16)  # names, phases, outcomes recur on many rows
def _text(s: str) -> str:
    s = textsafe.controls(s, keep="\t\n\r")  # whitespace is joined below
    s = _SPECIAL.sub(r"\\\1", s)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    # shown as '::' (a Markdown escape); no @mention, no bare link
    return textsafe.no_autolinks(textsafe.no_commands(" ".join(s.split())))


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


def more_left(n: int, what: str) -> list[str]:
    return ["", f"_… and {n} more {what}{'s' if n != 1 else ''}: see report.json or the site._"] if n > 0 else []


def page_link(name: str, job_id: str, site: str) -> str:
    """``name``, a link to the job's page on the site when there is one."""
    if not site:
        return text(name)
    return f"[{text(name)}]({quote(site + 'pkg/' + page_name(job_id), safe=URL_SAFE)})"
