"""What a user installs is what is tested: the built wheel, `pip install`ed into a fresh venv
(no checkout on sys.path, cwd outside it), answers every subcommand's --help, reuses (or builds)
the same images as the checkout, and runs a fixture package on the docker backend to a verdict."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.interpreters import images, interpreters
from tests.conftest import ROOT, fixture_matrix
from tests.integration.conftest import DOCKER

pytestmark = [*DOCKER, pytest.mark.network, pytest.mark.slow]

SETTINGS = "settings: {threads: 4, iterations: 5, repeat: 1, test_timeout: 20, job_timeout: 600}"
SUBCOMMANDS = {"run", "build", "report", "diff", "plan", "image", "clean", "reproduce"}  # at least these


def _run(argv: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "FT_HARNESS_INSTALLED")
    }
    return subprocess.run(argv, cwd=cwd, env={**env, "CI": "true"}, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory) -> Path:
    """A fresh venv with nothing but `pip install <the wheel>` (its dependencies from the index)."""
    root = tmp_path_factory.mktemp("installed") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=300)
    r = _run(
        [str(root / "bin" / "python"), "-m", "pip", "install", "-q", str(dist["wheel"])], cwd=root.parent, timeout=900
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return root


def test_the_installed_copy_is_the_venvs(venv):
    code = "import harness, harness.interpreters.images as i; print(harness.__file__); print(i.CONTAINERS)"
    r = _run([str(venv / "bin" / "python"), "-c", code], cwd=venv.parent)
    assert r.returncode == 0, r.stderr
    module, containers = (Path(line) for line in r.stdout.splitlines())
    assert module.is_relative_to(venv) and "site-packages" in module.parts
    assert containers == module.parent / "containers"


# The subcommands as the installed CLI's own parser declares them (whatever its help looks like).
LIST_SUBCOMMANDS = """
import argparse, contextlib, io, json, sys
names = []
add = argparse._SubParsersAction.add_parser
argparse._SubParsersAction.add_parser = lambda self, name, **kw: names.append(name) or add(self, name, **kw)
from harness.__main__ import main
sys.argv = ["ft-harness", "--help"]
with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
    main()
print(json.dumps(names))
"""


def test_every_subcommand_answers_help(venv):
    ft = str(venv / "bin" / "ft-harness")
    top = _run([ft, "--help"], cwd=venv.parent)
    assert top.returncode == 0, top.stderr
    listed = _run([str(venv / "bin" / "python"), "-c", LIST_SUBCOMMANDS], cwd=venv.parent)
    assert listed.returncode == 0, listed.stderr
    subs = json.loads(listed.stdout)
    assert set(subs) >= SUBCOMMANDS, subs
    for sub in subs:
        assert re.search(rf"^\s+{sub}\s", top.stdout, re.M), f"{sub} missing from --help"
        r = _run([ft, sub, "--help"], cwd=venv.parent)
        assert (r.returncode, r.stderr) == (0, ""), sub
        assert r.stdout.startswith(f"usage: ft-harness {sub}"), r.stdout[:200]


def test_image_and_a_docker_run_from_the_wheel(venv, tmp_path, interp):
    ft = str(venv / "bin" / "ft-harness")
    m = fixture_matrix(tmp_path, ["ft_clean"], SETTINGS)

    img = _run([ft, "image", "--matrix", str(m)], cwd=tmp_path, timeout=3600)
    assert img.returncode == 0, img.stdout[-3000:] + img.stderr[-3000:]
    # the tags are digests of their inputs: the wheel's copy of containers/ gives the checkout's tags
    script = hashlib.sha256((ROOT / "containers" / "bootstrap-base.sh").read_bytes()).hexdigest()
    base = images.base_tag({**images.base_inputs(), "script": script})
    cache = interpreters.cache_root()
    key = interpreters.build_key(interp, interpreters.fetch_source(interp, cache))
    assert f"base image {base}: " in img.stdout, img.stdout
    assert f"interpreter image {images.interpreter_tag(key)}: " in img.stdout, img.stdout

    out = tmp_path / "out"
    r = _run([ft, "run", "--backend", "docker", "--matrix", str(m), "--out", str(out)], cwd=tmp_path, timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    result = json.loads((out / "results" / "cpython3.13t--ft_clean.json").read_text())
    assert (result["backend"], result["verdict"]) == ("docker", "compatible"), result["findings"]
    report = json.loads((out / "report.json").read_text())
    assert [(p["name"], p["verdict"]) for p in report["packages"]] == [("ft_clean", "compatible")]
    assert "ft_clean" in (out / "site" / "index.html").read_text()  # and its templates
