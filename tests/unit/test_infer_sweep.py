"""Odd cases the sweep over the top 1,000 sdists found (issue #29), captured in tests/data/infer
(see its README): each a note or a better reading, never an exception."""

from __future__ import annotations

from pathlib import Path

from harness.infer import infer_test_setup

DATA = Path(__file__).resolve().parents[1] / "data" / "infer"


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
