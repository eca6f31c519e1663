"""Help a newcomer can use (#37): an example and the exit codes in every command's --help, "did you
mean" for a mistyped command, the CLI reference page generated from the parser (and stale when
the parser changes), `plan --jobs` and the resolved versions, `diff` of output dirs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import __main__ as cli_main
from harness.cli import clihelp
from tests.conftest import ROOT, cli

RUN1 = ROOT / "tests" / "data" / "report" / "run1"


def subparsers() -> dict:
    return clihelp.subparsers(cli_main.build_parser())


def test_every_command_has_an_example_and_its_own_exit_codes() -> None:
    subs = subparsers()
    assert set(subs) == set(clihelp.COMMANDS)
    for name, p in subs.items():
        text = p.format_help()
        examples = text.split("example", 1)[1].split("exit codes:", 1)[0]
        assert f"ft-harness {name} " in examples or examples.strip().endswith(f"ft-harness {name}"), name
        codes = [
            line.split()[0]
            for line in text.split("exit codes:", 1)[1].splitlines()
            if line.strip() and line.split()[0].isdigit()
        ]
        assert codes[0] == "0" and len(codes) == len(set(codes)), (name, codes)
    # said where they differ: diff's 1 is a regression, reproduce's 1 is "it passed this time"
    assert "1    a regression" in subs["diff"].format_help()
    assert "1    it passed this time" in subs["reproduce"].format_help()
    assert "diff found a regression" not in subs["clean"].format_help()


def test_a_command_without_an_entry_still_has_help() -> None:
    assert clihelp.epilog("new-command") == clihelp.EXIT_CODES


def test_run_help_shows_an_example() -> None:
    r = cli("run", "--help")
    assert r.returncode == 0
    assert "example" in r.stdout and "  ft-harness run --matrix matrix.yaml --out out" in r.stdout


@pytest.mark.parametrize(
    "typed, suggested", [("rnu", "run"), ("plna", "plan"), ("dif", "diff"), ("reprodce", "reproduce")]
)
def test_a_mistyped_command_gets_did_you_mean(typed: str, suggested: str) -> None:
    msg = f"argument COMMAND: invalid choice: '{typed}' (choose from 'run', 'build')"
    assert (
        clihelp.did_you_mean(msg, list(clihelp.COMMANDS)) == f"unknown command '{typed}'; did you mean '{suggested}'?"
    )


def test_rnu_suggests_run_in_one_line() -> None:
    r = cli("rnu")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == ("ft-harness: unknown command 'rnu'; did you mean 'run'? (see ft-harness --help)")
    r = cli("zzzzzz")
    assert r.returncode == 2 and "one of: run, build, report" in r.stderr


def test_other_argument_errors_are_unchanged() -> None:
    msg = "argument --jobs/-j: must be a positive integer, got '0'"
    assert clihelp.did_you_mean(msg, list(clihelp.COMMANDS)) == msg


def test_the_cli_reference_page_is_generated_from_the_parser() -> None:
    page = (ROOT / clihelp.CLI_PAGE).read_text(encoding="utf-8")
    parser = cli_main.build_parser()
    stale = f"{clihelp.CLI_PAGE} is stale: run `{clihelp.REGENERATE}`"
    if f"with {clihelp.python_tag()};" in page:  # the Python that wrote it: byte for byte
        assert page == clihelp.reference(parser), stale
    flat = " ".join(page.split())  # any Python: every command, option and help text is there
    for name, p in [("", parser), *clihelp.subparsers(parser).items()]:
        assert f"## ft-harness {name}".strip() in page, stale
        for a in p._actions:
            for text in [*a.option_strings, a.help or ""]:
                assert " ".join(text.split()) in flat, (stale, name, text)
        assert " ".join((p.epilog or "").split()) in flat, (stale, name)


def test_the_reference_goes_stale_when_the_parser_changes() -> None:
    parser = cli_main.build_parser()
    before = clihelp.reference(parser)
    sub = clihelp.subparsers(parser)["plan"]
    sub.add_argument("--new-option", metavar="X", help="an option added after the page was written")
    after = clihelp.reference(parser)
    assert before != after and "--new-option X" in after


def test_the_generator_script_checks_the_page() -> None:
    r = subprocess.run(
        [sys.executable, "tools/cli_reference.py", "--check"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr


# ----------------------------------------------------------------------------- plan and diff


def _plan(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    (tmp_path / "names.txt").write_text("six\nidna\n")
    (tmp_path / "m.yaml").write_text(
        'interpreters: [{name: cpython3.13t, version: "3.13.5", source: "debian:trixie"}]\n'
        "packages:\n  - {top: 2, from: names.txt}\n"
    )
    # the versions are already resolved: planning asks no index
    record = [
        {"name": "six", "version": "1.17.0", "error": "", "note": "", "extension": False},
        {"name": "idna", "version": "3.20", "error": "", "note": "", "extension": False},
    ]
    (tmp_path / "resolved.json").write_text(json.dumps(record))
    return cli(
        "plan",
        "--matrix",
        str(tmp_path / "m.yaml"),
        "--resolved",
        str(tmp_path / "resolved.json"),
        *argv,
        env={"FT_HARNESS_INDEX_URL": "http://127.0.0.1:9/simple/"},
    )


def test_plan_table_gives_the_wall_time_at_jobs_n_and_the_resolved_versions(tmp_path: Path) -> None:
    r = _plan(tmp_path, "--format", "table", "--jobs", "2")
    assert r.returncode == 0, r.stderr
    assert "\nat --jobs 2: ~" in r.stdout
    assert "resolved versions:\n  six ==1.17.0\n  idna ==3.20" in r.stdout
    assert r.stderr.strip() == f"resolved versions written to {tmp_path / 'resolved.json'}"
    r = _plan(tmp_path, "--format", "json")  # machine output stays JSON alone
    assert r.returncode == 0 and json.loads(r.stdout)["jobs"]


def test_diff_accepts_output_dirs(tmp_path: Path) -> None:
    r = cli("report", str(RUN1), "--out", str(tmp_path / "a"))
    assert r.returncode == 0, r.stderr
    r = cli("diff", str(tmp_path / "a"), str(tmp_path / "a" / "report.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    (tmp_path / "empty").mkdir()
    r = cli("diff", str(tmp_path / "empty"), str(tmp_path / "a"))
    assert r.returncode == 2 and "not a regular file" in r.stderr
