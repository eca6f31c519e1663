"""Package-controlled text made inert for a terminal, a CI log and Markdown.

A package sets much of what the harness prints: its version (from probe.json), test ids,
messages, log excerpts.  Printed raw, that text could

- drive the terminal: ESC/CSI/OSC sequences (colours, a title, a hyperlink, clearing the
  screen), BEL, a carriage return that overwrites the line before it, NUL;
- run a GitHub Actions workflow command: a log line whose first non-blank characters are
  ``::`` (``::error …``, ``::add-mask::``, ``::stop-commands::``) or ``##[`` is a command
  to the runner, not text;
- hide or reorder what is shown: Unicode line separators and bidirectional controls.

In Markdown that GitHub renders (report.md as a step summary or a PR comment) package text
could also notify people and make links: ``@name`` mentions a user or a team, and a bare
``www.host``, ``https://host`` or ``user@host`` becomes a link.  ``no_autolinks`` breaks each
(for text already HTML-escaped: it adds an HTML comment and character references).

Every such character becomes a visible escape (``\\x1b``, ``\\u202e``) and a line that would
start a workflow command gets a backslash in front (``\\::error``; Markdown shows the backslash
escape as ``::error``).  Pure functions, no imports from the rest of the harness.
"""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, Unicode line/paragraph separators, bidirectional controls
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_COMMAND = re.compile(r"^(\s*)(::|##\[)", re.MULTILINE)  # a workflow command at a line's start


def _escape(ch: str) -> str:
    n = ord(ch)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def controls(s: str, keep: str = "") -> str:
    """``s`` with every control character outside ``keep`` written as a visible escape."""
    return _CONTROL.sub(lambda m: m.group() if m.group() in keep else _escape(m.group()), s)


def no_commands(s: str) -> str:
    """``s`` with a backslash before every line start that the Actions runner reads as a command."""
    return _COMMAND.sub(r"\1\\\2", s)


_MENTION = re.compile(r"@(?=[A-Za-z0-9_])")  # @user, @org/team, user@host
_WWW = re.compile(r"(?i)\b(www)\.")
_SCHEME = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*):/")


def no_autolinks(s: str) -> str:
    """Markdown text (HTML specials already escaped) in which GitHub finds no ``@mention``
    and no bare link: ``@<!-- -->name`` (the comment splits the text GitHub's mention filter
    reads), ``www&#46;host``, ``https&#58;//host``; rendered, each reads as it was written."""
    s = _MENTION.sub("@<!-- -->", s)
    s = _WWW.sub(r"\1&#46;", s)
    return _SCHEME.sub(r"\1&#58;/", s)


def line(s: object) -> str:
    """One line for a terminal or CI log: no control character (newlines too are escaped),
    no workflow command."""
    return no_commands(controls(str(s)))


def lines(s: object) -> str:
    """Several lines (newlines and tabs kept): no other control character, no line that
    starts a workflow command."""
    return no_commands(controls(str(s), keep="\n\t"))
