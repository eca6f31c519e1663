"""Odd cases the sweep over the top 1,000 sdists found (issue #29), captured in tests/data/infer
(see its README): each a note or a better reading, never an exception."""

from __future__ import annotations

from pathlib import Path

from harness.testsetup.infer import infer_test_setup

DATA = Path(__file__).resolve().parents[2] / "data" / "infer"


def test_semicolon_separated_extras_in_setup_cfg_stack_data():
    # setup.cfg: `tests = pytest; typeguard; pygments; littleutils; cython` on one line, which
    # setuptools splits on ";" (deprecated, accepted); read as one requirement it was skipped
    s = infer_test_setup(DATA / "stack_data-0.6.3", "stack_data")
    assert s.requires == ("typeguard", "pygments", "littleutils", "cython")  # pytest is the harness's
    assert s.sources == ("tests dir: tests/", "test deps from setup.cfg extras_require tests")


def test_tox_path_separator_substitution_in_a_requirements_path_aiosignal():
    # tox.ini: `deps = -rrequirements{/}ci-wheel.txt`; {/} is tox's os.sep, then -r wheel.txt
    s = infer_test_setup(DATA / "aiosignal-1.4.0", "aiosignal")
    assert s.sources[:2] == ("tests dir: tests/", "test deps from tox.ini [testenv] deps")
    assert not [x for x in s.sources if "not in the sdist" in x]
    assert s.requires == ("pytest-asyncio==1.0.0", "pre-commit==4.2.0", "twine==6.1.0", "tox==4.27.0")
    assert s.pytest_args[:2] == ("-o", "addopts=")  # -p pytest_cov and --cov in pytest.ini


def test_setup_cfg_interpolation_in_an_extra_geopy():
    # setup.cfg: `dev = %(dev-lint)s %(dev-test)s %(dev-docs)s`, ConfigParser's interpolation,
    # which setuptools makes; no test extra, so the dev pass takes it (before: three lines skipped)
    s = infer_test_setup(DATA / "geopy-2.5.0", "geopy")
    assert s.tests == "test"
    assert s.requires == (
        "flake8<7.4,>=7.1.2",
        "isort<8.1,>=5.13.2",
        "pytest-asyncio>=0.17",
        "sphinx<=9.1.0",
        "readme_renderer",
        "sphinx-issues",
        "sphinx_rtd_theme>=3.1.0",
    )
    assert s.sources == ("tests dir: test/", "test deps from setup.cfg extras_require dev")


def test_setup_cfg_interpolation_is_bounded(tmp_path):
    from harness.core import limits

    refs = " ".join(["%(b)s"] * 40)
    (tmp_path / "setup.cfg").write_text(
        f"[options.extras_require]\ntest = {refs}\nb = {refs.replace('b', 'c')}\nc = {refs.replace('b', 'd')}\n"
        f"d = {refs.replace('b', 'e')}\ne = pytest-mock\n"
    )
    s = infer_test_setup(tmp_path, "pkg")
    assert any(f"limit tox_expansions ({limits.value('tox_expansions')}) exceeded" in x for x in s.sources)


def test_an_editable_self_reference_in_tox_deps_pytokens():
    # tox.ini: `deps = -e .[dev]`: the package with its dev extra (before: "not a requirement")
    s = infer_test_setup(DATA / "pytokens-0.4.1", "pytokens")
    assert s.requires == ("black", "build", "mypy", "setuptools", "tox", "twine", "wheel")
    assert s.sources[:2] == ("tests dir: tests/", "test deps from tox.ini [testenv] deps")


def test_an_extra_only_setup_py_declares_is_named_gql():
    # tox.ini: `deps = -e.[test]`; gql declares its extras in setup.py, which is never run or read
    s = infer_test_setup(DATA / "gql-4.4.0", "gql")
    assert s.requires == ()
    assert "gql[test]: no extra 'test' in pyproject.toml or setup.cfg" in s.sources
