"""The issue text's recipe reproduces what the run found (issue #57, acceptance 2).

ft_fifthrace's one test fails in about 1 of 5 GIL-off threaded runs (drawn once per process), never
with the GIL on.  The harness finds it (``ft-race``, held on its runs alone); ``reproduce --issue``
prints the issue; its shell blocks, run as written with bash on the same interpreter outside the
harness (a fresh venv made by the recipe's own setup block), must reproduce the failure in at
least 9 of 10 tries of its GIL-off loop, and its GIL-on loop must pass.
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.conftest import cli, run_fixture

pytestmark = [pytest.mark.integration, pytest.mark.slow]
# At a rate of 1 in 5: 20 GIL-off threaded runs nominate the test in 98.8% of jobs (10: 89.3%), and
# 60 runs alone a mode hold it (5 failures needed, Fisher p < 0.05) in 99.6% (40: 92.4%): the job
# decides ft-race in about 98.5% of runs of this test (10 and 40: 82.5%, a flaky CI)
SETTINGS = "settings: {repeat: 20, confirm: 60, job_timeout: 1200}"
RACE = "tests/test_tally.py::test_tally_counts_every_add"


def _bash(script: str, cwd, env) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def test_the_issue_recipe_reproduces_a_one_in_five_race(tmp_path, ft_interpreter) -> None:
    d = run_fixture(tmp_path, "ft_fifthrace", SETTINGS)
    assert d["verdict"] == "ft-race", d["findings"]
    r = cli("reproduce", str(tmp_path / "out"), "ft_fifthrace", "--issue")
    assert r.returncode == 0, r.stderr
    text = r.stdout
    for part in (
        "### Versions",
        "pytest-run-parallel 0.10.0",
        "CPython 3.13.5 (free-threaded)",
        "GIL off (PYTHON_GIL=0): failed in",
    ):
        assert part in text, part
    assert "E       assert 9 == 10" in text  # the failure in full, from the run's JUnit file
    blocks = re.findall(r"^```sh\n(.*?)\n```$", text, re.S | re.M)
    assert len(blocks) == 4, blocks  # the interpreter, the setup, the GIL-off loop, the GIL-on loop
    _, setup, off, on = blocks
    assert "PYTHON_GIL=0" in off and "PYTHON_GIL=1" in on and RACE in off
    runs = int(re.search(r"seq 1 (\d+)", off).group(1))
    k = sum(
        int(a)
        for a, _ in re.findall(
            r"(\d+)/(\d+)", f"{d['findings'][0]['by_mode']['gil0']} {d['findings'][0]['confirmed']['gil0']}"
        )
    )
    assert k > 0 and runs >= 14, runs  # sized to a rate at or below 1 in 5 (ceil(log .05 / log .8) = 14)

    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python3.13t").symlink_to(ft_interpreter.python)  # the recipe's interpreter on PATH
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST", "VIRTUAL_ENV"))}
    env["PATH"] = f"{bindir}{os.pathsep}{env['PATH']}"
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    done = _bash("set -e\n" + setup, laptop, env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    here = f". {laptop}/ft/bin/activate && cd {laptop}/src\n"  # where the setup block leaves the shell

    tries = [_bash(here + off, laptop, env) for _ in range(10)]
    hits = [t for t in tries if re.search(rf"^failed on run \d+ of {runs}: reproduced$", t.stdout, re.M)]
    assert len(hits) >= 9, [t.stdout[-500:] for t in tries if t not in hits]
    assert all("assert 9 == 10" in t.stdout for t in hits)

    # the evidence at hand: on the package page, each run that showed it marked and linked to its log
    failing = [p["name"] for p in d["phases"] if p.get("tests", {}).get(RACE, {}).get("outcome") == "failed"]
    page = (tmp_path / "out/site/pkg/cpython3.13t--ft_fifthrace.html").read_text()
    assert failing and page.count("showed the ft-race") == len(failing)
    assert all(re.search(rf'<a href="[^"]+\.log\.txt">{re.escape(n)}</a>', page) for n in failing), failing
    assert "E       assert 9 == 10" in page  # the first failure in full

    gil_on = _bash(here + on, laptop, env)
    assert f"passed all {runs} runs: not reproduced" in gil_on.stdout, gil_on.stdout[-2000:]
