"""ft-harness's command line: the parser, and every error of ours turned into one line and an
exit code (HarnessError.return_code).  The commands themselves are in harness.cli.commands."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Callable
from typing import NoReturn

from . import __version__
from .backends import BACKENDS
from .cli import clihelp, commands, reproduce
from .core.errors import ConfigError, HarnessError
from .core.model import VERDICTS

DESCRIPTION = """\
Tell which Python packages are safe on free-threaded CPython (PEP 703), and why the others
are not: build a free-threaded interpreter, install each package of a matrix, import it, and
run its own test suite with the GIL off and on, plain and in parallel threads."""

EPILOG = clihelp.EXIT_CODES + "\n\nRun `ft-harness COMMAND --help` for the options of a command and an example."

FAIL_ON = "comma-separated verdicts that make the exit code 1 (e.g. ft-crash,ft-race)"
RESOLVED = (
    "the versions a `top:` selector resolved (JSON); read first, then rewritten, so every "
    "shard given the plan's file tests the same releases"
)
DURATIONS = "a previous run (report.json or --out dir): its jobs' measured phases estimate times and balance the shards"
Command = Callable[[argparse.Namespace], int]


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the description's and the epilog's line breaks; wraps option help as usual."""


class _Parser(argparse.ArgumentParser):
    """Bad arguments are one line (and exit 2), like every other bad input."""

    def error(self, message: str) -> NoReturn:
        commands = list(clihelp.subparsers(self)) or list(clihelp.COMMANDS)
        message = clihelp.did_you_mean(message, commands)
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


AddCommand = Callable[..., argparse.ArgumentParser]  # command(name, func, summary, detail="")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="ft-harness", description=DESCRIPTION, epilog=EPILOG, formatter_class=_Formatter)
    p.add_argument("--version", action="version", version=f"ft-harness {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log every step")
    sub = p.add_subparsers(title="commands", dest="command", required=True, metavar="COMMAND")
    common = _Parser(add_help=False)  # so `ft-harness run -v` works too
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log every step")

    def command(name: str, func: Command, summary: str, detail: str = "") -> argparse.ArgumentParser:
        sp = sub.add_parser(
            name,
            parents=[common],
            help=summary,
            epilog=clihelp.epilog(name),
            description=summary[0].upper() + summary[1:] + "." + detail,
            formatter_class=_Formatter,
        )
        sp.set_defaults(func=func)
        return sp

    _add_run(command)
    b = command("build", commands.cmd_build, "build (or reuse) the matrix's free-threaded interpreters")
    _matrix_arg(b)
    _cache_arg(b)
    _only(b, "interpreter")
    _add_report(command)
    d = command("diff", commands.cmd_diff, "compare two report.json files; exit 1 on a regression")
    d.add_argument("old", metavar="OLD", help="the earlier report.json")
    d.add_argument("new", metavar="NEW", help="the later report.json")
    _add_plan(command)
    im = command("image", commands.cmd_image, "build (or reuse) the docker base and interpreter images")
    _matrix_arg(im)
    _cache_arg(im)
    st = command(
        "store",
        commands.cmd_store,
        "build, before any job, the sdists the jobs' wheel plans need into the shared wheel store",
        "\nOnce per interpreter build, each build in its isolated step with its own limit; "
        "a later `run` (or every shard of the workflow, restoring the store from the cache) "
        "finds them built, so no job's budget pays for a dependency's build. Each backend has "
        "its own store (<cache>/wheels/<backend>: a docker run never reads what a local run "
        "stored), bounded by the limits store_entries_per_job and store_bytes.",
    )
    _matrix_arg(st)
    _cache_arg(st)
    st.add_argument(
        "--out",
        default="out",
        metavar="DIR",
        help="output dir: the step's store.json and its logs under DIR/store/ (default: out)",
    )
    st.add_argument(
        "--backend",
        choices=("auto", *BACKENDS),
        default="auto",
        help="where the builds run (default: auto, docker when an engine answers, else local)",
    )
    st.add_argument("--shard", metavar="I/N", help="only the jobs of shard I of N of the plan")
    st.add_argument("--resolved", metavar="FILE", help=RESOLVED + " (default: DIR/resolved.json)")
    _only(st, "package")
    _only(st, "interpreter")
    command("clean", commands.cmd_clean, "remove containers and volumes left by earlier runs")
    reproduce.add_parser(command)
    return p


def _matrix_arg(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--matrix", default="matrix.yaml", metavar="FILE", help="the matrix file (default: matrix.yaml)")


def _cache_arg(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--cache",
        metavar="DIR",
        help="cache of interpreters, sources and pip (default: $FT_HARNESS_CACHE or ~/.cache/ft-harness)",
    )


def _only(sp: argparse.ArgumentParser, what: str) -> None:
    sp.add_argument(f"--{what}", action="append", metavar="NAME", help=f"only this {what} of the matrix (repeatable)")


def _add_run(command: AddCommand) -> None:
    r = command(
        "run",
        commands.cmd_run,
        "build/reuse interpreters, run every job, write results and the report",
        "\nA rerun with the same --out skips the jobs that already have a result.",
    )
    _matrix_arg(r)
    _cache_arg(r)
    r.add_argument("--out", default="out", metavar="DIR", help="output dir (default: out); a rerun resumes")
    r.add_argument(
        "--backend",
        choices=("auto", *BACKENDS),
        default="auto",
        help="where jobs run (default: auto, docker when an engine answers, else local)",
    )
    r.add_argument("--jobs", "-j", type=_pos_int, default=1, metavar="N", help="jobs at once (default: 1)")
    r.add_argument("--force", action="store_true", help="rerun jobs that already have a result")
    r.add_argument("--shard", metavar="I/N", help="run only shard I of N of the plan")
    r.add_argument("--durations", metavar="REPORT", help=DURATIONS)
    r.add_argument("--resolved", metavar="FILE", help=RESOLVED + " (default: DIR/resolved.json)")
    r.add_argument(
        "--reuse",
        action="append",
        metavar="DIR",
        help="an earlier run's output dir (or a `report --keep-results` dir): a job "
        "whose key and sdist are the same in its manifest.json is not run again, "
        "its result is reused and says so (repeatable)",
    )
    _only(r, "package")
    _only(r, "interpreter")
    r.add_argument("--fail-on", metavar="VERDICTS", type=_verdicts, help=FAIL_ON)


def _add_report(command: AddCommand) -> None:
    rp = command("report", commands.cmd_report, "merge result dirs into report.json, report.md, junit.xml, site/")
    rp.add_argument("dirs", nargs="+", metavar="DIR", help="output dirs of runs (or of shards)")
    rp.add_argument("--out", metavar="DIR", help="where to write the report (default: the first DIR)")
    rp.add_argument("--previous", metavar="REPORT", help="an earlier report.json, to mark what changed")
    rp.add_argument("--history", metavar="HISTORY", help="an earlier site's history.json, to keep the verdict history")
    rp.add_argument(
        "--matrix",
        metavar="FILE",
        help="the matrix the dirs ran: planned jobs with no result are listed as "
        "missing, results of no planned job are listed and left out",
    )
    rp.add_argument("--fail-on", metavar="VERDICTS", type=_verdicts, help=FAIL_ON)
    rp.add_argument("--resolved", metavar="FILE", help="with --matrix: " + RESOLVED)
    rp.add_argument(
        "--site-url", metavar="URL", help="where the site is published: linked at the top of the step summary"
    )
    rp.add_argument(
        "--keep-results",
        metavar="DIR",
        help="copy the merged result files into DIR/results/ with DIR/manifest.json "
        "(what a later `run --reuse DIR` accepts)",
    )


def _add_plan(command: AddCommand) -> None:
    pl = command("plan", commands.cmd_plan, "print the jobs, optionally split into shards")
    _matrix_arg(pl)
    pl.add_argument(
        "--format",
        choices=("json", "github", "table"),
        default="json",
        help="json (default); github: a matrix for a workflow's strategy; table: for a person",
    )
    pl.add_argument(
        "--shard-limit",
        type=float,
        default=360,
        metavar="MINUTES",
        help="warn when a shard is expected to run longer (default: 360, a hosted runner's 6 h)",
    )
    pl.add_argument(
        "--shards",
        type=_shards,
        default=1,
        metavar="N",
        help="split the jobs into N shards (default: 1); auto: as few as keep each "
        "under 0.8 x --shard-limit, by --durations where measured",
    )
    pl.add_argument("--durations", metavar="REPORT", help=DURATIONS)
    pl.add_argument("--resolved", metavar="FILE", help=RESOLVED)
    pl.add_argument(
        "--jobs",
        "-j",
        type=_pos_int,
        default=1,
        metavar="N",
        help="with --format table: the wall time at `run --jobs N` (default: 1)",
    )
    pl.add_argument(
        "--installed-elsewhere",
        action="store_true",
        help="do not look for the matrix's installed (python:) interpreters here: the "
        "machines that run the jobs have them (a CI plan job); say so instead",
    )


def _verdicts(text: str) -> str:
    """--fail-on's words, checked when the command line is read: before anything is built."""
    words = [w.strip() for w in text.split(",") if w.strip()]
    bad = [w for w in words if w not in VERDICTS]
    if not words or bad:
        raise argparse.ArgumentTypeError(f"unknown verdict {(bad or [text])[0]!r}; one of: {', '.join(VERDICTS)}")
    return text


def _pos_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return v


def _shards(text: str) -> int:
    """``--shards N`` or ``--shards auto`` (commands.AUTO)."""
    return commands.AUTO if text == "auto" else _pos_int(text)


def _run(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        code: int = args.func(args)
    except HarnessError as e:
        print(str(e) if isinstance(e, ConfigError) else f"ft-harness: {e}", file=sys.stderr)
        code = e.return_code
    except KeyboardInterrupt:
        print("ft-harness: interrupted", file=sys.stderr)
        code = 130
    sys.stdout.flush()  # a reader that went away shows here, not as a traceback at exit
    return code


def main(argv: list[str] | None = None) -> int:
    try:
        return _run(argv)
    except BrokenPipeError:
        # stdout was closed (`ft-harness plan | head -1`): exit quietly, like a tool that the
        # SIGPIPE ended; stdout goes to devnull so the flush at exit does not fail again.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
