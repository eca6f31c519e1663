"""harness.testsetup.pytestcfg: a pytest plugin named in addopts that is the package's own module
stays; only plugins that are not installed are neutralized (captured sdist metadata:
tests/data/infer/pycryptodome-4.5.0, its pyproject.toml unchanged)."""

from __future__ import annotations

from pathlib import Path

from harness.testsetup import pytestcfg
from harness.testsetup.infer import infer_test_setup

DATA = Path(__file__).resolve().parents[2] / "data" / "infer"


def test_the_packages_own_plugin_is_kept_pycryptodome():
    # addopts = ["-p", "Crypto.SelfTest.plugin", "--pyargs"]: Crypto is pycryptodome's own
    # package (lib/Crypto); neutralized as "not installed", pytest collected Crypto.SelfTest the
    # slow way, past 300 s on a loaded machine, and the stall was published as a hang
    src = DATA / "pycryptodome-4.5.0"
    assert pytestcfg.own_packages(src) == ["Crypto"]
    s = infer_test_setup(src, "pycryptodome")
    assert s.pytest_args == ()  # nothing to neutralize: the config's addopts run as they are
    assert not [n for n in s.sources if "Crypto.SelfTest.plugin" in n]


def test_a_plugin_of_another_distribution_still_goes(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = ["-p", "instafail", "--pyargs"]\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    notes: list[str] = []
    found = pytestcfg.pytest_config(tmp_path, "", notes)
    args = pytestcfg.neutralized_addopts(found, (), "pkg", notes, pytestcfg.own_packages(tmp_path))
    assert args == ("-o", "addopts=", "--pyargs")
