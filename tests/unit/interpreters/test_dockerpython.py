"""The pure parts of running an installed interpreter on the docker backend (harness.interpreters.dockerpython);
tests/integration/test_docker_installed.py runs it for real."""

from __future__ import annotations

import os
from pathlib import Path

from harness.interpreters.dockerpython import SYSTEM_DIRS, prefix_of, runtime_tag, why_not_started

# glibc's dynamic loader, as a container printed it for an interpreter linked to a library outside
# its prefix (tests/integration/test_docker_installed.py::test_a_missing_shared_library_is_named)
LD_SO = (
    "/opt/ft-installed/bin/python3.13t: error while loading shared libraries: libftmissing.so: "
    "cannot open shared object file: No such file or directory\n"
)


def test_a_missing_library_is_named():
    assert why_not_started(LD_SO) == (
        "the shared library libftmissing.so is missing there "
        "(cannot open shared object file: No such file or directory)"
    )


def test_anything_else_is_its_last_line():
    out = "Could not find platform independent libraries <prefix>\nFatal Python error: init_fs_encoding\n"
    assert why_not_started(out) == "Fatal Python error: init_fs_encoding"
    assert why_not_started("") == "no output"


def test_the_prefix_is_the_real_executables(tmp_path):
    real = tmp_path / "opt" / "py" / "bin"
    real.mkdir(parents=True)
    (real / "python3.14t").write_text("")
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    os.symlink(real / "python3.14t", venv / "python")  # a venv's bin/python
    os.symlink("python3.14t", real / "python3")  # make install's python3 link
    assert prefix_of(venv / "python") == tmp_path / "opt" / "py"
    assert prefix_of(real / "python3") == tmp_path / "opt" / "py"


def test_a_system_interpreter_is_not_mounted():
    assert str(prefix_of(Path("/usr/bin/python3"))) in SYSTEM_DIRS


def test_the_runtime_tag_follows_its_base():
    assert runtime_tag("ft-harness/base:trixie-a") != runtime_tag("ft-harness/base:trixie-b")
    assert runtime_tag("ft-harness/base:trixie-a") == runtime_tag("ft-harness/base:trixie-a")
    assert runtime_tag("x").startswith("ft-harness/runtime:")
