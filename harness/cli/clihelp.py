"""The command line's help texts (an example and the exit codes of each command), the "did you
mean" of a mistyped command, and the CLI reference page (docs/reference/cli.md) generated from
the parser, so the page cannot drift from ``--help`` (tests/unit/cli/test_clihelp.py)."""

from __future__ import annotations

import argparse
import difflib
import re

# The codes every command shares are said once, in `ft-harness --help`; each command lists its own.
EXIT_CODES = """\
exit codes:
  0    the harness worked (whatever the packages did)
  1    a gate failed (--fail-on matched, or diff found a regression)
  2    bad input (a matrix, a report or an argument)
  3    an interpreter could not be fetched or built
  4    infrastructure (docker down, disk full)
  130  interrupted (finished results are kept; rerun the same command to finish)
  141  stdout was closed early (e.g. piped into head)"""

_COMMON = {"130": "interrupted", "141": "stdout closed"}  # the same for every command

# command -> (examples, exit codes: (code, meaning) pairs)
COMMANDS: dict[str, tuple[list[str], list[tuple[str, str]]]] = {
    "run": (
        [
            "ft-harness run --matrix matrix.yaml --out out --jobs 2",
            "ft-harness run --matrix matrix.yaml --out out --package six   # one package",
        ],
        [
            ("0", "every job ran (whatever the packages did)"),
            ("1", "--fail-on matched"),
            ("2", "bad input"),
            ("3", "an interpreter could not be fetched or built"),
            ("4", "infrastructure (docker down, disk full)"),
            ("130", "interrupted: rerun the same command to finish"),
        ],
    ),
    "store": (
        ["ft-harness store --matrix examples/published.yaml --interpreter cpython3.13t --out out"],
        [
            ("0", "every plan ran (a build that failed is left to its job's install, which says why)"),
            ("2", "bad input"),
            ("3", "an interpreter could not be fetched or built"),
            ("4", "infrastructure (docker down, disk full)"),
        ],
    ),
    "build": (
        ["ft-harness build --matrix examples/tsan.yaml"],
        [
            ("0", "every interpreter is built or reused"),
            ("2", "bad input"),
            ("3", "an interpreter could not be fetched or built"),
        ],
    ),
    "report": (
        ["ft-harness report shard-1 shard-2 --matrix matrix.yaml --out merged"],
        [
            ("0", "the report was written"),
            ("1", "--fail-on matched"),
            ("2", "bad input (e.g. no valid result in the dirs)"),
        ],
    ),
    "diff": (
        ["ft-harness diff previous/report.json out   # a dir holding report.json works too"],
        [("0", "no regression"), ("1", "a regression"), ("2", "bad input")],
    ),
    "plan": (
        [
            "ft-harness plan --matrix matrix.yaml --format table --jobs 2",
            "ft-harness plan --matrix matrix.yaml --shards 4 --format github",
        ],
        [("0", "the plan was printed"), ("2", "bad input")],
    ),
    "image": (
        ["ft-harness image --matrix matrix.yaml"],
        [
            ("0", "the images are built or reused"),
            ("2", "bad input"),
            ("3", "an interpreter could not be fetched or built"),
            ("4", "no docker engine answers"),
        ],
    ),
    "clean": (["ft-harness clean"], [("0", "leftovers removed (or none)"), ("4", "no docker engine answers")]),
    "reproduce": (
        ["ft-harness reproduce out six --finding 1", "ft-harness reproduce out six --recipe --python python3.13t"],
        [
            ("0", "the failure came back"),
            ("1", "it passed this time"),
            ("2", "bad input, or not confirmed (no terminal to ask and no --yes)"),
        ],
    ),
}


def epilog(name: str) -> str:
    """A command's --help epilog: its examples, then its own exit codes (a command missing from
    COMMANDS gets the common block; tests/unit/cli/test_clihelp.py asks for its example)."""
    if name not in COMMANDS:
        return EXIT_CODES
    examples, codes = COMMANDS[name]
    lines = ["example" + ("s" if len(examples) > 1 else "") + ":"]
    lines += [f"  {e}" for e in examples]
    lines += ["", "exit codes:"] + [f"  {c:<4} {m}" for c, m in codes]
    rest = [f"{c} {m}" for c, m in _COMMON.items() if c not in dict(codes)]
    lines.append(f"  ({', '.join(rest)}: as for every command)")
    return "\n".join(lines)


_INVALID = re.compile(r"argument COMMAND: invalid choice: '?([^' ]*)'?")


def did_you_mean(message: str, commands: list[str]) -> str:
    """argparse's "invalid choice" error for the command, as one line with the nearest command
    (``rnu`` -> ``run``); any other message unchanged."""
    m = _INVALID.match(message)
    if not m:
        return message
    near = difflib.get_close_matches(m.group(1), commands, n=1, cutoff=0.5)
    hint = f"did you mean {near[0]!r}?" if near else f"one of: {', '.join(commands)}"
    return f"unknown command {m.group(1)!r}; {hint}"


# ----------------------------------------------------------------------------- the reference page

CLI_PAGE = "docs/reference/cli.md"
REGENERATE = "python tools/cli_reference.py"


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


def _help_text(p: argparse.ArgumentParser) -> str:
    """``--help`` as a terminal of 100 columns shows it (the same on every machine)."""
    import os

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        return p.format_help().rstrip()
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def python_tag() -> str:
    """argparse's layout changes between Python versions: the page says which one wrote it."""
    import sys

    return f"Python {sys.version_info[0]}.{sys.version_info[1]}"


def reference(parser: argparse.ArgumentParser) -> str:
    """docs/reference/cli.md: every command's --help, verbatim, with a heading to link to."""
    subs = subparsers(parser)
    out = [
        "# Command-line reference",
        "",
        f"<!-- generated from the argument parser by `{REGENERATE}` with {python_tag()};",
        "     tests/unit/cli/test_clihelp.py fails when this page is stale -->",
        "",
        "Every command's `--help`, as the program prints it. Start with the",
        "[tutorial](../tutorial.md) for what the commands are for.",
        "",
        " · ".join(f"[`{n}`](#ft-harness-{n})" for n in subs),
        "",
        "## ft-harness",
        "",
        "```text",
        _help_text(parser),
        "```",
    ]
    for name, sp in subs.items():
        out += ["", f"## ft-harness {name}", "", "```text", _help_text(sp), "```"]
    return "\n".join(out) + "\n"
