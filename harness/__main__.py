"""ft-harness's command line: the parser, and every error of ours turned into one line and an
exit code (HarnessError.return_code).  The subcommands' shared options and longest definitions
are in harness.cli.cliargs; the commands themselves in harness.cli.runjobs (run, store),
harness.cli.reporting (report, diff), harness.cli.commands (plan, build, image, clean) and
harness.cli.reproduce."""

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
from .cli import cliargs, clihelp, commands, reporting, reproduce, runjobs
from .core.errors import ConfigError, HarnessError

DESCRIPTION = """\
Tell which Python packages are safe on free-threaded CPython (PEP 703), and why the others
are not: build a free-threaded interpreter, install each package of a matrix, import it, and
run its own test suite with the GIL off and on, plain and in parallel threads."""

EPILOG = clihelp.EXIT_CODES + "\n\nRun `ft-harness COMMAND --help` for the options of a command and an example."

Command = Callable[[argparse.Namespace], int]


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the description's and the epilog's line breaks; wraps option help as usual."""


class _Parser(argparse.ArgumentParser):
    """Bad arguments are one line (and exit 2), like every other bad input."""

    def error(self, message: str) -> NoReturn:
        commands = list(clihelp.subparsers(self)) or list(clihelp.COMMANDS)
        message = clihelp.did_you_mean(message, commands)
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


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

    cliargs.add_run(command)
    b = command("build", commands.cmd_build, "build (or reuse) the matrix's free-threaded interpreters")
    cliargs.matrix_arg(b)
    cliargs.cache_arg(b)
    cliargs.only(b, "interpreter")
    cliargs.add_report(command)
    d = command("diff", reporting.cmd_diff, "compare two report.json files; exit 1 on a regression")
    d.add_argument("old", metavar="OLD", help="the earlier report.json")
    d.add_argument("new", metavar="NEW", help="the later report.json")
    cliargs.add_plan(command)
    im = command("image", commands.cmd_image, "build (or reuse) the docker base and interpreter images")
    cliargs.matrix_arg(im)
    cliargs.cache_arg(im)
    st = command(
        "store",
        runjobs.cmd_store,
        "build, before any job, the sdists the jobs' wheel plans need into the shared wheel store",
        "\nOnce per interpreter build, each build in its isolated step with its own limit; "
        "a later `run` (or every shard of the workflow, restoring the store from the cache) "
        "finds them built, so no job's budget pays for a dependency's build. Each backend has "
        "its own store (<cache>/wheels/<backend>: a docker run never reads what a local run "
        "stored), bounded by the limits store_entries_per_job and store_bytes.",
    )
    cliargs.matrix_arg(st)
    cliargs.cache_arg(st)
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
    st.add_argument("--resolved", metavar="FILE", help=cliargs.RESOLVED + " (default: DIR/resolved.json)")
    cliargs.only(st, "package")
    cliargs.only(st, "interpreter")
    command("clean", commands.cmd_clean, "remove containers and volumes left by earlier runs")
    reproduce.add_parser(command)
    return p


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
