"""A compiled project whose only wheel for 3.13t is its pure fallback (#35): propcache 0.5.4.

The index has ``propcache-0.5.4-py3-none-any.whl`` and cp313 wheels, none for cp313t, so pip
installs the pure one; before, the suite's ``[c-extension-module]`` tests failed on ``No module
named 'propcache._helpers_c'`` and the package was published as ``baseline-failure``. With no
settings the job builds propcache from its sdist and the C tests run; with ``fallback_wheel:
keep`` the pure wheel is tested and the missing extension is a setup finding.  On the docker
backend: a release from the index never builds or runs unisolated on the CI runner (#46).
"""

from __future__ import annotations

import pytest

from tests.conftest import INTERP_YAML, cli, results
from tests.integration.conftest import DOCKER

pytestmark = [*DOCKER, pytest.mark.network]


def _run(tmp_path, settings: str) -> dict:
    m = tmp_path / "matrix.yaml"
    m.write_text(
        INTERP_YAML + f"settings: {{repeat: 1, iterations: 2, confirm: 0{settings}}}\n"
        'packages: [{name: propcache, version: "==0.5.4"}]\n'
    )
    r = cli("run", "--matrix", str(m), "--out", str(tmp_path / "out"), "--backend", "docker")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (d,) = results(tmp_path / "out").values()
    assert d["backend"] == "docker"
    return d


def _c_tests(phase: dict, outcome: str) -> int:
    return sum(1 for t, tc in phase["tests"].items() if "[c-extension-module]" in t and tc["outcome"] == outcome)


def test_propcache_is_built_from_its_sdist_and_its_c_tests_run(tmp_path, ft_interpreter) -> None:
    d = _run(tmp_path, "")
    assert d["wheel"]["fallback"] == "propcache-0.5.4-py3-none-any.whl"
    assert (d["wheel"]["installed"], d["wheel"]["installed_file"]) == ("built from sdist", "propcache-0.5.4.tar.gz")
    names = [p["name"] for p in d["phases"] if p["kind"] != "wheels"]  # the wheel store's steps aside
    assert names[:3] == ["fetch", "install", "install-sdist"], names
    (install,) = [p for p in d["phases"] if p["name"] == "install"]
    assert [s["kind"] for s in install["setup"]] == ["pure-fallback"]
    plain = [p for p in d["phases"] if p["kind"] == "plain"]
    assert plain and all(_c_tests(p, "passed") >= 20 and _c_tests(p, "error") == 0 for p in plain)
    assert d["verdict"] == "compatible", d["findings"]


def test_the_kept_fallback_says_so_and_is_no_baseline_failure(tmp_path, ft_interpreter) -> None:
    d = _run(tmp_path, ", fallback_wheel: keep")
    assert (d["wheel"]["installed"], d["wheel"]["fallback"]) == ("wheel (pure)", "propcache-0.5.4-py3-none-any.whl")
    assert "install-sdist" not in [p["name"] for p in d["phases"]]
    assert d["verdict"] == "compatible", d["findings"]
    (f,) = [f for f in d["findings"] if f["evidence"] == "setup"]
    assert f["kind"] == "setup-error" and "propcache._helpers_c is not in it" in f["message"]
    assert not [f for f in d["findings"] if f["kind"] == "baseline-failure"]
