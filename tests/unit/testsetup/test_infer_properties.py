"""Property tests (issue #29): whatever pyproject.toml, setup.cfg, tox.ini, requirements files and
conftest.py an sdist ships, the host's test-setup inference (harness.testsetup.infer, harness.testsetup.pytestcfg,
harness.testsetup.conftests) returns an Inferred of strings -- it never raises -- and within a time bound.

The generators lean on the keys and shapes the inference reads (dependency groups, extras,
addopts, ``-r`` chains, ``{[section]key}``, factor lines, conftest imports), with any type where
a value goes and any text where a string goes."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.testsetup.infer import Inferred, infer_test_setup

BOUND = 5.0  # seconds one sdist's inference may take here (the sweep's max over 949 real ones: see README)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))

KEYS = [
    "project",
    "dependency-groups",
    "optional-dependencies",
    "dependencies",
    "tool",
    "pytest",
    "ini_options",
    "addopts",
    "filterwarnings",
    "include-group",
    "test",
    "tests",
    "testing",
    "dev",
    "name",
    "extras",
    "deps",
]
REQS = [
    "pytest",
    "pytest-cov",
    "hypothesis>=6",
    "attrs[tests]",
    ".[test]",
    "pkg[dev]",
    "-r req.txt",
    "-r requirements/test.txt",
    "-c constraints.txt",
    "-e .",
    "numpy; python_version<'3'",
    "trustme; platform_python_implementation == 'PyPy'",
    "foo @ https://x/y.whl",
    "bar==1.*",
    "baz --hash=sha256:00",
    "{[testenv]deps}",
    "{[base]deps}",
    "py3: mock",
    "!!!",
    "x \\",
    "",
    "# comment",
    "--index-url https://x",
    "coverage[toml]",
    "-p no:cacheprovider",
    "--cov=pkg",
    "-n auto",
    "-p xdist",
    "--strict-config",
    "-ra 'unclosed",
    '"',
    "-p",
    "-o",
    "addopts=",
    "ignore:x:coverage.exceptions.CoverageWarning",
]
text = st.one_of(st.sampled_from(REQS), st.text(max_size=30))


def _toml_value(depth: int = 3) -> st.SearchStrategy:
    scalars = st.one_of(text, st.integers(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False))
    if depth == 0:
        return scalars
    inner = _toml_value(depth - 1)
    return st.one_of(
        scalars,
        st.lists(inner, max_size=5),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(min_size=1, max_size=8)), inner, max_size=5),
    )


def _toml(v: object) -> str:
    """A value in TOML's inline syntax (JSON's strings are TOML basic strings)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    assert isinstance(v, dict)
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml(x)}" for k, x in v.items()) + "}"


pyproject = st.one_of(
    st.dictionaries(st.sampled_from(KEYS), _toml_value(), max_size=4).map(
        lambda d: "".join(f"{json.dumps(k)} = {_toml(v)}\n" for k, v in d.items())
    ),
    st.lists(
        st.one_of(
            st.sampled_from(
                [
                    "[project]",
                    "[dependency-groups]",
                    "[tool.pytest.ini_options]",
                    "[project.optional-dependencies]",
                    "test = [",
                    "]",
                    "{",
                    'addopts = "',
                    "include-group = ",
                    "[[",
                    '"""',
                ]
            ),
            text,
        ),
        max_size=12,
    ).map("\n".join),
)
SECTIONS = [
    "options",
    "options.extras_require",
    "testenv",
    "testenv:py3",
    "tox",
    "pytest",
    "tool:pytest",
    "base",
    "metadata",
]
ini = st.lists(
    st.tuples(
        st.one_of(st.sampled_from(SECTIONS), st.text(max_size=8)),
        st.lists(
            st.tuples(
                st.sampled_from(["deps", "extras", "addopts", "test", "tests", "install_requires", "dev", "x"]),
                st.lists(text, max_size=6).map("\n    ".join),
            ),
            max_size=4,
        ),
    ),
    max_size=5,
).map(lambda secs: "".join(f"[{s}]\n" + "".join(f"{k} = {v}\n" for k, v in kv) for s, kv in secs))
requirements = st.lists(text, max_size=10).map("\n".join)
conftest = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "import trustme",
                "from a.b import c",
                "import os, yaml",
                "try:\n    import x\nexcept ImportError:\n    pass",
                "if True:\n    import y",
                "from . import z",
                "def f(:",
                "x = (((((",
                "import \x00",
            ]
        ),
        st.text(max_size=40),
    ),
    max_size=8,
).map("\n".join)


def _run(files: dict[str, str]) -> Inferred:
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "pkg-1.0"
        for name, body in files.items():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            (src / name).write_text(body, encoding="utf-8", errors="surrogatepass")
        (src / "tests").mkdir(exist_ok=True)
        t0 = time.monotonic()
        setup = infer_test_setup(src, "pkg")
        took = time.monotonic() - t0
    assert took < BOUND, f"{took:.1f} s"
    assert isinstance(setup, Inferred)
    for field in (setup.requires, setup.pytest_args, setup.sources):
        assert isinstance(field, tuple) and all(isinstance(x, str) for x in field)
    assert isinstance(setup.tests, str)
    json.dumps(setup.to_dict())
    return setup


@SETTINGS
@given(pyproject)
def test_any_pyproject(text_: str) -> None:
    _run({"pyproject.toml": text_})


@SETTINGS
@given(ini, ini)
def test_any_setup_cfg_and_tox_ini(setup_cfg: str, tox_ini: str) -> None:
    _run({"setup.cfg": setup_cfg, "tox.ini": tox_ini})


@SETTINGS
@given(requirements, requirements, requirements, ini)
def test_any_requirements_files(a: str, b: str, c: str, tox_ini: str) -> None:
    _run({"requirements-test.txt": a, "req.txt": b, "requirements/test.txt": c, "tox.ini": tox_ini})


@SETTINGS
@given(conftest, conftest, pyproject)
def test_any_conftest(top: str, inner: str, pyproject_: str) -> None:
    _run({"conftest.py": top, "tests/conftest.py": inner, "pyproject.toml": pyproject_})
