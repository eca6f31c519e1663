"""A community recipe's shell commands read (pure): their simple commands, and of the test
command the path and the pytest options that hold for the sdist (harness.testsetup.recipeapply).

**test paths**: the positional arguments of the recipe's pytest command that exist in the sdist
(the first one is the suite the harness runs; a ``cd DIR &&`` before it is followed).  **pytest
options that neutralize the project's own**: ``-o``/``--override-ini``, ``-m``, ``-k``, ``-W``,
``--deselect``, ``--ignore``/``--ignore-glob``, ``-p no:NAME`` (not ``no:xdist`` or
``no:cacheprovider``: the harness manages both); every other option is left out and said.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

# pytest options kept from a recipe: they neutralize or narrow the project's own config
KEEP_VALUE = {
    "-o",
    "--override-ini",
    "-m",
    "-k",
    "-W",
    "--pythonwarnings",
    "--deselect",
    "--ignore",
    "--ignore-glob",
    "-p",
}
# pytest options left out that take a value (so the value is not read as a test path)
DROP_VALUE = {
    "-n",
    "--numprocesses",
    "--timeout",
    "--tb",
    "--durations",
    "--durations-min",
    "-c",
    "--config-file",
    "--rootdir",
    "--confcutdir",
    "--maxfail",
    "--junitxml",
    "--junit-xml",
    "--cov",
    "--cov-report",
    "--cov-config",
    "-r",
    "--log-level",
    "--log-cli-level",
    "--basetemp",
    "--import-mode",
    "--dist",
    "--reruns",
    "--reruns-delay",
    "--color",
    "--capture",
    "--randomly-seed",
    "--timeout-method",
    "--maxprocesses",
    "--max-worker-restart",
}
HARNESS_PLUGINS = {"no:xdist", "no:cacheprovider"}  # the harness decides these per phase
# the harness's own plugins (threads, timeouts, its watchdog, JUnit, crash dumps): a recipe's
# `-p no:<one of them>` would make the threaded runs fail or see nothing (#46; marisa-trie's)
OWN_PLUGINS = {
    "run-parallel",
    "run_parallel",
    "pytest_run_parallel",
    "timeout",
    "pytest_timeout",
    "ft_harness_watchdog",
    "tsan_marker",
    "junitxml",
    "faulthandler",
    "xdist",
}
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def segments(command: str) -> list[list[str]]:
    """A shell command line as its simple commands (split at ``&&``, ``||``, ``;``, ``|``)."""
    lex = shlex.shlex(command, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    out: list[list[str]] = [[]]
    try:
        for tok in lex:
            if tok and set(tok) <= set("&|;()"):
                out.append([])
            else:
                out[-1].append(tok)
    except ValueError:  # an unclosed quote: nothing of it is read
        return []
    return [s for s in out if s]


def command_words(seg: list[str]) -> list[str]:
    """A simple command without the ``NAME=value`` assignments before it."""
    i = 0
    while i < len(seg) and _ENV_ASSIGN.match(seg[i]):
        i += 1
    return seg[i:]


def inside(src: Path, rel: str) -> Path | None:
    """``src/rel`` when it names a file or dir inside the sdist (no ``..`` out, no link)."""
    rel = rel.strip().removeprefix("./").rstrip("/")
    if not rel or rel.startswith("/") or ".." in Path(rel).parts:
        return None
    p = src / rel
    return p if not p.is_symlink() and (p.is_dir() or p.is_file()) else None


def read_test_command(command: str, src: Path, used: list[str], not_held: list[str]) -> tuple[str, tuple[str, ...]]:
    cwd = ""
    for seg in segments(command):
        if seg[0] == "cd" and len(seg) == 2:
            cwd = f"{cwd}/{seg[1]}".strip("/")
            continue
        words = command_words(seg)
        at = next((i for i, w in enumerate(words) if w in ("pytest", "py.test") or w.endswith("/pytest")), None)
        if at is None:
            continue
        if cwd and inside(src, cwd) is None:
            not_held.append(f"test command's `cd {cwd}`: not a directory of the sdist")
            return "", ()
        return _pytest_args(words[at + 1 :], src, cwd, used, not_held)
    if command:
        not_held.append(f"test command {command!r}: no pytest in it, not used")
    return "", ()


def _pytest_args(
    argv: list[str], src: Path, cwd: str, used: list[str], not_held: list[str]
) -> tuple[str, tuple[str, ...]]:
    keep: list[str] = []
    left_out: list[str] = []
    paths: list[str] = []
    pyargs = "--pyargs" in argv
    it = iter(argv)
    for a in it:
        opt, eq, val = (
            a.partition("=") if a.startswith("--") else (a[:2], "", a[2:]) if a.startswith("-") else (a, "", "")
        )
        if a.startswith("-") and opt in KEEP_VALUE:
            if not (eq or val):
                val = next(it, "")
            if opt == "-p" and (val in HARNESS_PLUGINS or not val.startswith("no:")):
                if val not in HARNESS_PLUGINS:  # those two the harness sets per phase: not news
                    left_out.append(f"-p {val}")
                continue
            if opt == "-p" and val.removeprefix("no:").split(".")[0] in OWN_PLUGINS:
                not_held.append(f"-p {val}: switches off a plugin of the harness's own; not applied")
                continue
            keep += [f"{opt}={val}"] if opt.startswith("--") else [opt, val]
        elif a.startswith("-"):
            if opt in DROP_VALUE and not (eq or (val and not a.startswith("--"))):
                a = f"{a} {next(it, '')}"
            left_out.append(a)
        elif pyargs:
            not_held.append(f"--pyargs {a}: a module, not a path (the harness picks where installed tests run)")
        else:
            paths.append(a)
    tests = ""
    for p in paths:
        rel = f"{cwd}/{p.removeprefix('./')}".strip("/") if cwd else p
        if "::" in rel:
            not_held.append(f"test id {rel}: the harness runs a path, not one test")
        elif inside(src, rel) is None:
            not_held.append(f"test path {rel} not in the sdist")
        elif not tests:
            tests = rel.removeprefix("./").rstrip("/")
            used.append(f"test path {tests}")
        else:
            not_held.append(f"test path {rel} (in the sdist): the harness runs one path, {tests}")
    if keep:
        used.append(f"pytest options {shlex.join(keep)}")
    if left_out:
        not_held.append(f"pytest options left out (the harness sets its own): {' '.join(left_out)}")
    return tests, tuple(keep)
