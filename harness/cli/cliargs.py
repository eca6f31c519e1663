"""The subcommands' arguments, for harness.__main__'s parser: the options several commands share
(``--matrix``, ``--cache``, ``--interpreter``/``--package``) and their types (``--fail-on``'s
verdicts, checked before anything is built; positive counts; ``--shards N`` or ``auto``), and
the definitions of the commands with the most options (``run``, ``report``, ``plan``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from ..backends import BACKENDS
from ..core.model import VERDICTS
from . import commands, reporting, runjobs

FAIL_ON = "comma-separated verdicts that make the exit code 1 (e.g. ft-crash,ft-race)"
RESOLVED = (
    "the versions a `top:` selector resolved (JSON); read first, then rewritten, so every "
    "shard given the plan's file tests the same releases"
)
DURATIONS = "a previous run (report.json or --out dir): its jobs' measured phases estimate times and balance the shards"

REPORTED = (
    "reported.yaml: finding id (findings.json) -> the upstream issue's https URL; shown beside "
    "the finding, and kept in the feed while a run still shows it"
)

AddCommand = Callable[..., argparse.ArgumentParser]  # command(name, func, summary, detail="")


def matrix_arg(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--matrix", default="matrix.yaml", metavar="FILE", help="the matrix file (default: matrix.yaml)")


def cache_arg(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--cache",
        metavar="DIR",
        help="cache of interpreters, sources and pip (default: $FT_HARNESS_CACHE or ~/.cache/ft-harness)",
    )


def only(sp: argparse.ArgumentParser, what: str) -> None:
    sp.add_argument(f"--{what}", action="append", metavar="NAME", help=f"only this {what} of the matrix (repeatable)")


def add_run(command: AddCommand) -> None:
    r = command(
        "run",
        runjobs.cmd_run,
        "build/reuse interpreters, run every job, write results and the report",
        "\nA rerun with the same --out skips the jobs that already have a result.",
    )
    matrix_arg(r)
    cache_arg(r)
    r.add_argument("--out", default="out", metavar="DIR", help="output dir (default: out); a rerun resumes")
    r.add_argument(
        "--backend",
        choices=("auto", *BACKENDS),
        default="auto",
        help="where jobs run (default: auto, docker when an engine answers, else local)",
    )
    r.add_argument("--jobs", "-j", type=_pos_int, default=1, metavar="N", help="jobs at once (default: 1)")
    r.add_argument("--force", action="store_true", help="rerun jobs that already have a result")
    r.add_argument(
        "--keep-workspaces",
        action="store_true",
        help="keep each job's venv and source after its result (for `reproduce`'s exact command); "
        "by default only its logs/ and junit/ stay",
    )
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
    r.add_argument("--reported", metavar="FILE", help=REPORTED)
    only(r, "package")
    only(r, "interpreter")
    r.add_argument("--fail-on", metavar="VERDICTS", type=_verdicts, help=FAIL_ON)


def add_report(command: AddCommand) -> None:
    rp = command("report", reporting.cmd_report, "merge result dirs into report.json, report.md, junit.xml, site/")
    rp.add_argument("dirs", nargs="+", metavar="DIR", help="output dirs of runs (or of shards)")
    rp.add_argument("--out", metavar="DIR", help="where to write the report (default: the first DIR)")
    rp.add_argument(
        "--previous",
        metavar="REPORT",
        help="an earlier report.json (or its dir), to mark what changed; the findings.json beside "
        "it gives the findings feed its first-seen dates and reported links",
    )
    rp.add_argument("--reported", metavar="FILE", help=REPORTED)
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


def add_plan(command: AddCommand) -> None:
    pl = command("plan", commands.cmd_plan, "print the jobs, optionally split into shards")
    matrix_arg(pl)
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
