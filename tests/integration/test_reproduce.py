"""`ft-harness reproduce` (issue #16): a real run's ft-crash and ft-race findings, run again, both
by the exact local command and by the laptop recipe in a fresh directory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, INTERP_YAML, cli

pytestmark = [pytest.mark.integration, pytest.mark.network]


@pytest.fixture(scope="module")
def run(tmp_path_factory, ft_interpreter):
    tmp = tmp_path_factory.mktemp("reproduce")
    m = tmp / "matrix.yaml"
    m.write_text(
        "settings: {repeat: 2, iterations: 5, test_timeout: 20, job_timeout: 900, confirm: 8}\n"
        + INTERP_YAML
        + "packages:\n"
        + "".join(f"  - {{name: {n}, path: {FIXTURES / n}}}\n" for n in ("ft_realloc", "ft_sharedbuf"))
    )
    r = cli(
        "run", "--matrix", str(m), "--out", str(tmp / "out"), "--backend", "local", "--jobs", "2", "--keep-workspaces"
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return tmp / "out", ft_interpreter


def test_the_exact_command_brings_the_crash_back(run):
    out, _ = run
    r = cli("reproduce", str(out), "ft_realloc", "--yes", timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "ft-crash tests/test_fill.py::test_fill_large" in r.stdout
    assert "Fatal Python error" in r.stdout + r.stderr
    assert r.stdout.rstrip().endswith("the failure came back")


def test_without_keep_workspaces_the_exact_command_says_the_venv_was_freed(run, tmp_path):
    """#56: a run frees each job's venv once its result is written; the exact command then says
    so in one line (exit 2), naming the flag that keeps it and --recipe."""
    out, _ = run
    copy = tmp_path / "out"
    shutil.copytree(out, copy, symlinks=True, ignore=shutil.ignore_patterns("venv"))
    r = cli("reproduce", str(copy), "ft_realloc", "--yes", timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stdout[-2000:] + r.stderr[-2000:]
    assert "the job's venv was freed when its result was written" in r.stderr
    assert "--keep-workspaces" in r.stderr and "--recipe" in r.stderr


def test_the_recipe_runs_in_a_fresh_dir_with_only_the_interpreter_and_brings_the_race_back(run):
    out, interp = run
    report = json.loads((out / "report.json").read_text())
    (job,) = [j for j in report["packages"] if j["name"] == "ft_sharedbuf"]
    (f,) = [f for f in job["findings"] if f["kind"] == "ft-race"]
    assert str(out) not in f["recipe"] and "/venv/" not in f["recipe"]
    r = cli(
        "reproduce",
        str(out / "report.json"),
        "ft_sharedbuf",
        "--recipe",
        "--python",
        str(Path(interp.python)),
        "--yes",
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "AssertionError" in r.stdout and "PARALLEL FAILED tests/test_label.py::test_label_roundtrip" in r.stdout
    assert "# in " in r.stdout and str(out) not in r.stdout.split("# in ", 1)[1].splitlines()[0]


def test_print_only_shows_and_a_bad_package_is_one_line(run):
    out, _ = run
    r = cli("reproduce", str(out), "ft_sharedbuf", "--print", "--recipe")
    assert r.returncode == 0 and "python3.13t -m venv ft" in r.stdout and "the failure" not in r.stdout
    r = cli("reproduce", str(out), "nope")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "no job of 'nope' in the report; packages: ft_realloc, ft_sharedbuf" in r.stderr
