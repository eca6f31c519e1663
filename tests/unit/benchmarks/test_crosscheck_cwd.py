"""benchmarks/crosscheck.py (#56): the dir a recipe's setup says it ended in (``.cwd`` in the
recipe's temp dir, which the setup -- package code -- can write) is read through no link, only
from a regular file of at most MAX_CWD_BYTES, and only when it names a dir below the work dir;
anything else ends the check as a failed setup, and no test line runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from benchmarks.crosscheck import CWD_FILE, MAX_CWD_BYTES, check_recipe
from harness.core.model import read_result
from tests.unit.reuse.test_reuse import RUN0

RECIPE = "# the recipe\npython3.13t -m venv ft\ncd src\nPYTHON_GIL=0 python -m pytest tests/test_x.py::test_a"


class PlantingRunner:
    """Runs nothing: its setup leaves ``.cwd`` as ``plant`` makes it; every script is kept."""

    def __init__(self, plant: Any) -> None:
        self.plant = plant
        self.scripts: list[str] = []

    def workdir(self, tmp: Path) -> str:
        return str(tmp)

    def run(self, script: str, tmp: Path, *, exe: str, network: bool, timeout: float) -> tuple[int | None, str]:
        self.scripts.append(script)
        if len(self.scripts) == 1:
            (tmp / "src").mkdir()
            self.plant(tmp / CWD_FILE, tmp)
        return 0, "1 passed"


def _check(tmp_path: Path, plant: Any) -> tuple[dict[str, Any], list[str]]:
    res = read_result(RUN0 / "cp313t--attrs.json")
    runner = PlantingRunner(plant)
    work = tmp_path / "work"
    work.mkdir()
    row = check_recipe(res, RECIPE, "ft-crash", (0,), runner, 1, work)  # type: ignore[arg-type]
    return row, runner.scripts


def test_the_setup_dir_written_as_the_recipe_does_is_where_the_tests_run(tmp_path):
    row, scripts = _check(tmp_path, lambda f, tmp: f.write_text(f"{tmp / 'src'}\n"))
    assert row["setup"] == "ok"
    assert len(scripts) == 3 and all(f"cd {tmp_path / 'work' / 'src'} && " in s for s in scripts[1:])


def _link_to_host_file(f: Path, tmp: Path) -> None:
    outside = tmp.parent / "host-file"  # a host file naming a dir: read through the link, it would be used
    outside.write_text(f"{tmp / 'src'}\n")
    f.symlink_to(outside)


def _link_to_dir(f: Path, tmp: Path) -> None:
    (tmp / "d").mkdir()
    (tmp / "d" / "x").write_text(f"{tmp / 'src'}\n")
    f.symlink_to(tmp / "d" / "x")  # a link even to a file inside the dir is not followed


@pytest.mark.parametrize(
    "plant",
    [
        pytest.param(_link_to_host_file, id="link-out"),
        pytest.param(_link_to_dir, id="link-in"),
        pytest.param(lambda f, tmp: os.mkfifo(f), id="fifo"),
        pytest.param(lambda f, tmp: f.mkdir(), id="directory"),
        pytest.param(lambda f, tmp: f.write_text(f"{tmp / 'src'}\n" + " " * MAX_CWD_BYTES), id="too-big"),
        pytest.param(lambda f, tmp: f.write_text("/\n"), id="outside-work"),
        pytest.param(lambda f, tmp: f.write_text(f"{tmp}/../..\n"), id="dot-dot"),
        pytest.param(lambda f, tmp: f.write_bytes(b"\xff\xfe\n"), id="not-utf8"),
        pytest.param(lambda f, tmp: None, id="missing"),
    ],
)
@pytest.mark.timeout(30)  # without the check, the FIFO's read blocks
def test_a_planted_cwd_file_is_a_failed_setup_and_runs_no_test(tmp_path, plant):
    row, scripts = _check(tmp_path, plant)
    assert row == {
        "setup": "failed",
        "setup_tail": f".cwd: not a regular file of at most {MAX_CWD_BYTES} bytes naming a dir below "
        f"{tmp_path / 'work'}",
        "reproduced": False,
    }
    assert len(scripts) == 1
