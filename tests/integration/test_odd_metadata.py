"""One package never stops a run (issue #29, acceptance 1), on the real interpreter and the real CLI.

The matrix's first package (tests/fixtures/packages/ft_oddmeta) ships an ``addopts`` with an
unclosed quote (``shlex``: "No closing quotation") and a dependency group that is a string; the
second is a clean fixture.  Before, the first stopped the run with a traceback and no result for
either.  Now both get a result, the first's names both problems, the second is ``compatible``.
"""

from __future__ import annotations

import pytest

from tests.conftest import cli, fixture_matrix, results

pytestmark = [pytest.mark.integration]
SETTINGS = "settings: {threads: 2, iterations: 2, repeat: 1, test_timeout: 60, job_timeout: 600, confirm: 0}"


def test_odd_metadata_first_then_a_clean_package(tmp_path, ft_interpreter) -> None:
    m = fixture_matrix(tmp_path, ["ft_oddmeta", "ft_noconfig"], SETTINGS)
    r = cli("run", "--matrix", str(m), "--out", str(tmp_path / "out"), "--backend", "local", "--jobs", "1")
    assert r.returncode in (0, 1), r.stdout[-3000:] + r.stderr[-3000:]
    assert "Traceback" not in r.stdout + r.stderr
    res = {k.split("--", 1)[1]: v for k, v in results(tmp_path / "out").items()}
    assert set(res) == {"ft_oddmeta", "ft_noconfig"}
    assert res["ft_noconfig"]["verdict"] == "compatible", res["ft_noconfig"]["findings"]
    odd = res["ft_oddmeta"]
    sources = "\n".join(odd["test_setup"]["sources"])
    assert "addopts neutralized (pyproject.toml): it cannot be read (No closing quotation)" in sources
    assert "[dependency-groups] test: not a list (str), ignored" in sources
    assert odd["test_setup"]["pytest_args"][:2] == ["-o", "addopts="]
    # with its unreadable addopts set aside, its (thread-safe) tests ran and passed
    assert odd["verdict"] == "compatible", odd["findings"]
    assert not [f for f in odd["findings"] if "bug of ft-harness" in f["message"]]
