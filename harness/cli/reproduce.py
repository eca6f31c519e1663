"""``ft-harness reproduce REPORT PACKAGE [--finding N]``: one finding, run again.

The finding is looked up in a report.json (or the output dir holding one).  By default its
exact command runs again on this machine (its ``reproduce``: the job's workspace, venv or
container, which must still be there: ``run --keep-workspaces`` keeps a job's venv, else only its
logs/ and junit/ stay); ``--recipe`` runs the portable recipe instead, in a
fresh directory, with the free-threaded interpreter given by ``--python`` first on PATH.
``--print`` only shows the command; ``--issue`` prints, for each deciding finding of the package,
an upstream-ready issue in Markdown (harness.render.issuetext) and runs nothing.  Exit 0 when the failure came back (the command failed
again), 1 when it passed this time; the last line says which, with the command's exit code.

A report.json is text anyone can write (a CI artifact, a file someone sent): the command is
shown, and runs only after a yes at the prompt, or with ``--yes``; without a terminal to ask on
and without ``--yes`` nothing runs (exit 2).  The recipe's interpreter name, which becomes a
link in the recipe's own temp dir, must be a plain ``python...`` name (#30).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError
from ..core.model import INFO_KINDS, Finding
from ..render import issuetext
from ..results.load import read_report
from ..results.report import CompatReport, JobEntry
from ..util.textsafe import line as safe_line
from ..util.textsafe import lines as safe_lines


def pick(
    report: CompatReport, package: str, *, interpreter: str | None, finding: int | None
) -> tuple[JobEntry, Finding]:
    """(job entry, finding): the package's job (on ``interpreter``) and its finding number N
    (1-based, in the report's order), by default its first finding that is not only info."""
    jobs = [
        j for j in report.packages if j.name == package and (interpreter is None or j.interpreter.name == interpreter)
    ]
    if not jobs:
        names = sorted({str(j.name) for j in report.packages})
        raise ConfigError(
            f"no job of {package!r}"
            + (f" on {interpreter!r}" if interpreter else "")
            + f" in the report; packages: {', '.join(names[:20]) or 'none'}"
        )
    if len(jobs) > 1:
        its = ", ".join(str(j.interpreter.name) for j in jobs)
        raise ConfigError(f"{package!r} ran on several interpreters ({its}): pick one with --interpreter")
    job = jobs[0]
    found = job.findings
    if not found:
        raise ConfigError(f"{package!r} ({job.verdict}) has no finding to reproduce")
    if finding is None:
        chosen = next((f for f in found if f.kind not in INFO_KINDS), found[0])
    elif 1 <= finding <= len(found):
        chosen = found[finding - 1]
    else:
        raise ConfigError(f"--finding {finding}: {package!r} has {len(found)} finding(s), 1..{len(found)}")
    return job, chosen


def print_issues(report_path: Path, package: str, interpreter: str | None) -> int:
    """``--issue``: the upstream-ready issue of each deciding finding of ``package`` (every
    interpreter's job, or the one of ``--interpreter``), Markdown on stdout, separated by a rule;
    one line when there is none.  Exit 0 either way."""
    report = read_report(report_path, "the")
    out = report_path if report_path.is_dir() else report_path.parent
    jobs = [
        j for j in report.packages if j.name == package and (interpreter is None or j.interpreter.name == interpreter)
    ]
    if not jobs:
        pick(report, package, interpreter=interpreter, finding=None)  # says what there is
    texts = [i.text for j in jobs for i in issuetext.issues(report, j, out)]
    if not texts:
        verdicts = ", ".join(f"{j.verdict} on {j.interpreter.name}" for j in jobs)
        print(safe_line(f"{package}: no finding to file upstream ({verdicts})"))
        return 0
    print("\n---\n\n".join(safe_lines(t) for t in texts), end="")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    if args.issue:
        return print_issues(Path(args.report), args.package, args.interpreter)
    job, f = pick(
        read_report(Path(args.report), "the"), args.package, interpreter=args.interpreter, finding=args.finding
    )
    command = (f.recipe if args.recipe else f.reproduce) or ""
    what = "recipe" if args.recipe else "command"
    if not isinstance(command, str) or not command:
        raise ConfigError(f"this finding ({f.kind}) has no {what} to run" + ("" if args.recipe else "; try --recipe"))
    print(safe_line(f"{job.name} {job.version} on {job.interpreter.name}: {f.kind} {f.test_id or ''} — {f.message}"))
    print(safe_lines(command))
    if args.print:
        return 0
    if not args.recipe:
        _venv_kept(Path(args.report), job.job_id, command)
    if not args.yes and not _confirmed(what):
        return 2
    env = dict(os.environ)
    cwd = None
    if args.recipe:
        python = shutil.which(args.python) if args.python else None
        if args.python and python is None:
            raise ConfigError(f"--python {args.python}: not found")
        if python:
            exe = recipe_python(command)  # the recipe's interpreter name (python3.13t)
            pdir = Path(tempfile.mkdtemp(prefix="ft-reproduce-bin-"))
            (pdir / exe).symlink_to(python)
            env["PATH"] = f"{pdir}{os.pathsep}{env.get('PATH', '')}"
        cwd = tempfile.mkdtemp(prefix="ft-reproduce-")
        print(f"# in {cwd}", flush=True)
    sys.stdout.flush()
    rc = subprocess.run(["sh", "-ec", command], cwd=cwd, env=env).returncode
    came_back = rc != 0
    print(
        f"ft-harness reproduce: exit {rc}: "
        + ("the failure came back" if came_back else "it passed this time (a race may need more runs)")
    )
    return 0 if came_back else 1


def _venv_kept(report: Path, job_id: str, command: str) -> None:
    """The exact command runs in the job's venv: ConfigError when a run freed it (#56: only a
    job's logs/ and junit/ stay after its result, unless ``run --keep-workspaces``)."""
    out = report if report.is_dir() else report.parent
    venv = out / "work" / job_id / "venv"
    if "venv" in command and (out / "work" / job_id).is_dir() and not venv.is_dir():
        raise ConfigError(
            f"{venv}: the job's venv was freed when its result was written; run it again with "
            "`ft-harness run --keep-workspaces` to keep it, or use --recipe (the laptop recipe)"
        )


PYTHON_NAME = re.compile(r"python[0-9][0-9.]*t?")


def recipe_python(command: str) -> str:
    """The interpreter a recipe names on its second line (``python3.13t -m venv ...``): a plain
    name, which --python's link in the recipe's temp dir gets; anything else (a path, ``..``)
    is refused."""
    lines = command.splitlines()
    words = lines[1].split() if len(lines) > 1 else []
    exe = words[0] if words else ""
    if not PYTHON_NAME.fullmatch(exe):
        raise ConfigError(
            f"the recipe's interpreter {safe_line(exe)!r} is not a plain python name (python3.13t): not run"
        )
    return exe


def _confirmed(what: str) -> bool:
    """Ask before running a command a report file holds; no terminal, no run (say --yes)."""
    if not sys.stdin.isatty():
        print(
            f"ft-harness reproduce: not run: the {what} comes from the report, which anyone can "
            "write; read it above and run again with --yes (or --print to only show it)",
            file=sys.stderr,
        )
        return False
    try:
        answer = input(f"run this {what}? [y/N] ")
    except EOFError:
        answer = ""
    if answer.strip().lower() in ("y", "yes"):
        return True
    print("ft-harness reproduce: not run", file=sys.stderr)
    return False


def add_parser(command: Any) -> None:
    """The subcommand, on __main__'s ``command(...)`` helper."""
    sp = command(
        "reproduce",
        cmd_reproduce,
        "run one finding of a report again",
        "\nBy default the exact command the job ran (its workspace must still be here);"
        "\n--recipe runs the portable recipe in a fresh directory instead."
        "\nExit 0: the failure came back; 1: it passed this time.",
    )
    sp.add_argument("report", metavar="REPORT", help="a report.json, or the output dir holding one")
    sp.add_argument("package", metavar="PACKAGE", help="the package's name as the report has it")
    sp.add_argument(
        "--finding",
        type=int,
        metavar="N",
        help="the package's finding number N (1-based; default: its first non-info one)",
    )
    sp.add_argument("--interpreter", metavar="NAME", help="the job on this interpreter of the matrix")
    sp.add_argument(
        "--recipe",
        action="store_true",
        help="run the laptop recipe (venv, pinned installs, the sdist's tests) in a fresh dir",
    )
    sp.add_argument("--python", metavar="EXE", help="with --recipe: the free-threaded interpreter to put first on PATH")
    sp.add_argument("--print", action="store_true", help="only print the command")
    sp.add_argument(
        "--issue",
        action="store_true",
        help="print an upstream-ready issue (Markdown) for each deciding finding of the package; runs nothing",
    )
    sp.add_argument(
        "--yes",
        action="store_true",
        help="run it without asking (the command comes from the report file: read it first)",
    )
