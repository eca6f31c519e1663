"""Malformed matrices through the real CLI: one `file:line:` line on stderr, exit 2, no traceback."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import HARNESS, SOURCE_PATH

pytestmark = pytest.mark.reliability
BAD = Path(__file__).parents[1] / "data" / "bad_matrices"
CASES = sorted(BAD.glob("*.yaml"))
OTHER_INPUTS = ("a 10 MB matrix", "a missing file", "a directory")  # the last two tests below


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*HARNESS, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", **SOURCE_PATH},
    )


def expected(path: Path) -> tuple[int, str]:
    first = path.read_bytes().split(b"\n", 1)[0].decode()
    if not first.startswith("# expect: "):
        return 1, "the file is empty"
    line, _, msg = first[len("# expect: ") :].partition(": ")
    return int(line), msg


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
@pytest.mark.parametrize("command", ["run", "plan"])
def test_bad_matrix_one_line_exit_2(path: Path, command: str, tmp_path: Path) -> None:
    r = run_cli(command, "--matrix", str(path), cwd=tmp_path)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, r.stderr
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr
    line, msg = expected(path)
    m = re.match(rf"^{re.escape(str(path))}:(\d+): (.*)$", lines[0])
    assert m, lines[0]
    assert int(m.group(1)) == line
    assert m.group(2).startswith(msg), (m.group(2), msg)


def test_ten_megabyte_matrix(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("packages:\n" + "  - name: x\n" * 900_000)
    assert big.stat().st_size > 10_000_000
    r = run_cli("run", "--matrix", str(big), cwd=tmp_path)
    assert r.returncode == 2
    assert re.fullmatch(rf"{re.escape(str(big))}:1: the file is \d+ bytes; .*", r.stderr.strip())


def test_missing_file_and_directory(tmp_path: Path) -> None:
    r = run_cli("run", "--matrix", "nope.yaml", cwd=tmp_path)
    assert (r.returncode, r.stderr.strip()) == (2, "nope.yaml: no such file (pass --matrix FILE)")
    r = run_cli("run", "--matrix", str(tmp_path), cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.strip().endswith("is a directory, not a matrix file")


def test_the_docs_say_how_many_bad_inputs_and_faults_are_tried() -> None:
    """The numbers in docs/explanation/reliability.md are the suite's own count."""
    from tests.reliability.conftest import counts, counts_line

    page = (Path(__file__).parents[2] / "docs" / "explanation" / "reliability.md").read_text()
    assert counts_line(counts()) in " ".join(page.split()), counts_line(counts())
