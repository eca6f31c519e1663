"""benchmarks/crosscheck.py on the docker backend (#46, acceptance 3): a result file's recipe is
rebuilt from its fields and run in a container of the job's image with the job's isolation;
a planted recipe that would write a host file writes nothing on the host."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.unit.benchmarks.test_crosscheck import _planted

from .conftest import DOCKER

pytestmark = [*DOCKER, pytest.mark.network]


def test_docker_runs_the_rebuilt_recipe_in_a_container_and_nothing_on_the_host(tmp_path, capsys):
    """The job's isolation: a recipe step that would write the host file cannot, the stored text
    is never run, and the setup ran (pip inside the container, its venv in the temp dir)."""
    from benchmarks.crosscheck import main
    from harness.interpreters import images

    interp = subprocess.run(
        ["docker", "images", images.INTERP_REPO, "--format", "{{.Repository}}:{{.Tag}}"], capture_output=True, text=True
    ).stdout.split()
    tag = interp[0] if interp else images.base_tag(images.base_inputs())
    if subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode:
        pytest.skip(f"no image {tag} (ft-harness image)")
    marker = tmp_path / "planted-by-the-result"
    _planted(tmp_path, marker)
    rows = tmp_path / "rows.json"
    python = f"{images.PREFIX}/bin/python3.13t" if interp else "/usr/bin/python3"
    assert (
        main(
            [
                str(tmp_path / "out"),
                "--backend",
                "docker",
                "--image",
                tag,
                "--python",
                python,
                "--runs",
                "1",
                "--json",
                str(rows),
            ]
        )
        == 0
    )
    (row,) = json.loads(rows.read_text())
    assert not marker.exists()
    if not interp:  # the base image's Debian python has no ensurepip: proof the step ran in it
        assert row["setup"] == "failed" and "apt install python3.13-venv" in row["setup_tail"]
        return
    assert row["setup"] == "ok", row.get("setup_tail")
    assert row["seen"] == {"gil0": [row["seen"]["gil0"][0]], "gil1": [row["seen"]["gil1"][0]]}
