"""harness.util.textsafe: what a package can put in its version, test ids and logs prints inert."""

from __future__ import annotations

import re

import pytest

from harness.util import textsafe

# What the Actions runner would take as a command: first non-blank characters '::' or '##['
COMMAND = re.compile(r"^\s*(::|##\[)", re.MULTILINE)
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

HOSTILE = [
    "1.0\n::error file=x::pwned",
    "1.0\r::warning::overwrite the line before",
    "::add-mask::secret",
    "   ::stop-commands::tok",
    "\t::set-output name=x::y",
    "\u3000::error::ideographic space first",
    "##[error]legacy command",
    "\x1b]8;;https://evil/\x1b\\link\x1b]8;;\x1b\\",  # OSC 8 hyperlink
    "\x1b[2J\x1b[Hcleared",  # CSI: clear the screen
    "\x1b]0;title\x07",  # OSC title, BEL
    "nul\x00byte",
    "del\x7f c1\x9b31m",
    "line\u2028separator\u2029para",
    "bidi \u202eevil\u202c \u2066x\u2069",
]


@pytest.mark.parametrize("s", HOSTILE)
def test_line_is_one_inert_line(s: str) -> None:
    out = textsafe.line(s)
    assert "\n" not in out and "\r" not in out
    assert not RAW_CONTROL.search(out), repr(out)
    assert not COMMAND.search(out), out


@pytest.mark.parametrize("s", HOSTILE)
def test_lines_keeps_newlines_and_no_line_is_a_command(s: str) -> None:
    out = textsafe.lines(s)
    assert out.count("\n") == s.count("\n")
    assert not RAW_CONTROL.search(out.replace("\t", "")), repr(out)
    assert not COMMAND.search(out), out


def test_escapes_are_visible_and_exact() -> None:
    assert textsafe.line("a\x1b[31mb") == "a\\x1b[31mb"
    assert textsafe.line("x\u202ey") == "x\\u202ey"
    assert textsafe.line("v\n::error::x") == "v\\x0a::error::x"  # one line: no line start left
    assert textsafe.lines("v\n::error::x") == "v\n\\::error::x"
    assert textsafe.lines("  ##[group]x") == "  \\##[group]x"


def test_ordinary_text_is_unchanged() -> None:
    for s in (
        "1.17.0",
        "tests/test_a.py::test_b[x-1]",
        "ft-race on 3.13.5t, compatible on 3.13.15t",
        "naïve — ünïcode ✅",
        "a::b",
        "C:\\path",
        "tab\tand\nnewline",
    ):
        assert textsafe.lines(s) == s
    assert textsafe.line("tests/x.py::test_y") == "tests/x.py::test_y"  # '::' inside a line is fine


@pytest.mark.parametrize("s", HOSTILE)
def test_report_md_cells_code_and_excerpts_are_inert(s: str) -> None:
    from harness.render import mdtext

    for out in (mdtext.text(s), mdtext.code(s)):
        assert "\n" not in out and not RAW_CONTROL.search(out), repr(out)
        assert not COMMAND.search(out), out
    excerpt = mdtext.block(f"before\n{s}\n```\n````\nafter")
    assert not RAW_CONTROL.search(excerpt.replace("\t", "")), repr(excerpt)
    assert not COMMAND.search(excerpt), excerpt
    fence = excerpt.split("\n", 1)[0]
    assert fence == "`````"  # longer than any backtick run inside: the excerpt cannot close it
    assert excerpt.endswith("\n" + fence) and excerpt.count(fence) == 2


@pytest.mark.parametrize(
    ("s", "want"),
    [
        ("@octocat", "@<!-- -->octocat"),
        ("cc @pypa/maintainers", "cc @<!-- -->pypa/maintainers"),
        ("mail me@example.org", "mail me@<!-- -->example.org"),
        ("www.example.com", "www&#46;example.com"),
        ("WWW.EXAMPLE.COM", "WWW&#46;EXAMPLE.COM"),
        ("https://x.example/a", "https&#58;//x.example/a"),
        ("a @ b, x@ 1, 3.13t", "a @ b, x@ 1, 3.13t"),  # nothing to mention or link: unchanged
    ],
)
def test_no_autolinks(s: str, want: str) -> None:
    assert textsafe.no_autolinks(s) == want
