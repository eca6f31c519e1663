"""A setup failure is not a package failure (issue #14), on real runs of two fixtures.

tests/data/parse/setup-*/ are whole jobs of a real harness run (local backend, 3.13.5t):
ft_setupfail's conftest imports a module nothing declares (the suite cannot be collected),
ft_nofixture has one test using pytest-mock's `mocker`, which is not installed.
"""

from __future__ import annotations

from harness.core.jobspec import Settings
from harness.parse.setup import find_setup_problems, is_setup_message
from harness.verdict import decide
from tests.unit.verdict.test_verdict import DATA, load

S = Settings()


def test_a_suite_that_cannot_be_collected_is_infra_error_with_the_real_cause_and_fix():
    d = decide(load("setup-setupfail"), settings=S)
    assert d.verdict == "infra-error"
    assert {f.evidence for f in d.findings} == {"setup"}
    f = d.findings[0]
    assert f.excerpt.startswith(
        "tests/conftest.py:3: ModuleNotFoundError: No module named 'ft_undeclared_test_helper' (while loading conftest)"
    )
    assert "fix: test_requires: [ft_undeclared_test_helper]" in f.excerpt
    assert f.message.startswith("setup: plain-gil") and "baseline" not in f.message


def test_one_test_missing_a_fixture_is_shown_but_does_not_decide():
    d = decide(load("setup-nofixture"), settings=S)
    assert d.verdict == "compatible"
    (f,) = [f for f in d.findings if f.kind == "setup-error"]
    assert f.test_id == "tests/test_double.py::test_double_is_called"
    assert "fixture 'mocker' not found" in f.excerpt and "test_requires: [pytest-mock]" in f.excerpt
    assert not [f for f in d.findings if f.kind == "baseline-failure"]


def test_the_parser_on_the_captured_logs():
    text = (DATA / "setup-setupfail" / "logs" / "plain-gil0.log").read_text()
    (p,) = find_setup_problems(text)
    assert (p.kind, p.name, p.where) == ("missing-module", "ft_undeclared_test_helper", "tests/conftest.py:3")
    text = (DATA / "setup-nofixture" / "logs" / "plain-gil1.log").read_text()
    (p,) = find_setup_problems(text)
    assert (p.kind, p.name, p.fix) == ("missing-fixture", "mocker", "test_requires: [pytest-mock]")
    assert p.where.endswith("tests/test_double.py:8")
    assert find_setup_problems((DATA / "mix" / "logs" / "plain-gil1.log").read_text()) == ()
    assert is_setup_message("fixture 'mocker' not found") and not is_setup_message("assert 1 == 2")


def test_unknown_addopts_option_and_a_test_module_import():
    root = DATA.parent / "setup"
    (p,) = find_setup_problems((root / "unknown-option.log").read_text())
    assert (p.kind, p.name) == ("unknown-option", "--cov=d")
    assert p.fix == 'pytest_args: ["-o", "addopts="] (or test_requires: [pytest-cov])'
    (p,) = find_setup_problems((root / "test-module-import.log").read_text())
    assert (p.kind, p.name, p.where) == ("missing-module", "hypothesis_not_installed_xyz", "tests/test_b.py:1")


def test_a_filterwarnings_entry_naming_a_missing_module():
    # aiohttp 3.14.5 with zero configuration: coverage is dropped as a coverage tool, but its
    # filterwarnings names coverage.exceptions.CoverageWarning, so pytest stops (exit 4)
    (p,) = find_setup_problems((DATA.parent / "setup" / "filterwarnings-module.log").read_text())
    assert (p.kind, p.name) == ("missing-module", "coverage")
    assert p.where == "filterwarnings: ignore:Couldn't import C tracer:coverage.exceptions.CoverageWarning"
    assert p.fix.startswith("test_requires: [coverage]")


def test_a_plugin_a_conftest_names_that_cannot_be_imported_setuptools():
    # setuptools 84.2.1's conftest.py has pytest_plugins = 'setuptools.tests.fixtures'; its wheel
    # does not ship setuptools/tests, and pytest stops before collecting (no summary line)
    (p,) = find_setup_problems((DATA.parent / "setup" / "plugin-import.log").read_text())
    assert (p.kind, p.name) == ("missing-module", "setuptools.tests")
    assert p.where == "the plugin setuptools.tests.fixtures (pytest_plugins or -p)"
    assert p.excerpt == (
        "ImportError: Error importing plugin \"setuptools.tests.fixtures\": No module named 'setuptools.tests'"
    )
    assert p.fix.startswith("test_requires: [setuptools]")


def test_an_unknown_mark_made_an_error_by_filterwarnings_python_dateutil():
    # python-dateutil 4.0.0: `filterwarnings = error`, tests marked `no_cover` (pytest-cov's
    # marker), pytest-cov not installed: collection stops in an xdist worker's INTERNALERROR
    (p,) = find_setup_problems((DATA.parent / "setup" / "unknown-mark-warning.log").read_text())
    assert (p.kind, p.name) == ("unknown-marker", "no_cover")
    assert p.excerpt.startswith("PytestUnknownMarkWarning: Unknown pytest.mark.no_cover")
    assert "PytestUnknownMarkWarning" in p.fix


def test_a_config_pytest_took_from_outside_the_package_is_the_harness_setup_error():
    # issue #36, ujson 6.1.0's shape: the package's config is only in [tool.pytest] (pytest 9's),
    # pytest 8.4.2 did not read it and walked up to the outer project's pyproject.toml, whose
    # --strict-markers failed collection on the package's own marker (captured: the fixture
    # ft_pytest9cfg under a directory with that pyproject.toml, the harness's command line)
    text = (DATA.parent / "setup" / "config-walked-up.log").read_text()
    problems = find_setup_problems(text)
    assert problems[0].kind == "config-outside"
    assert problems[0].name == "/tmp/cap/outer/pyproject.toml"
    assert problems[0].excerpt.endswith("outside its rootdir /tmp/cap/outer/out/work/j/src/ft_pytest9cfg")
    # named with -c, the same file pytest reports: no problem (whatever the tests then do)
    named = (DATA.parent / "setup" / "config-named.log").read_text()
    assert not [p for p in find_setup_problems(named) if p.kind == "config-outside"]
    # a -c that names another file than the one pytest took is one too
    other = named.replace("-c /tmp/cap/outer/out/work/j/src/ft_pytest9cfg/pyproject.toml", "-c /dev/null", 1)
    (p,) = [p for p in find_setup_problems(other) if p.kind == "config-outside"]
    assert p.excerpt.endswith(", not /dev/null")


def test_a_run_under_an_outside_config_decides_infra_error_not_baseline():
    import dataclasses

    from harness.core.model import Phase, TestCase

    text = (DATA.parent / "setup" / "config-walked-up.log").read_text()
    p = Phase(
        name="plain-gil1",
        kind="plain",
        gil=1,
        exit_code=2,
        excerpt=text[-2000:],
        setup=find_setup_problems(text),
        tests={"tests/test_marks.py": TestCase(outcome="error", message="collection failure")},
    )
    d = decide([p, dataclasses.replace(p, name="plain-gil0", gil=0)], settings=S)
    assert d.verdict == "infra-error"
    assert "pytest read its configuration from /tmp/cap/outer/pyproject.toml" in d.findings[0].message
    assert not [f for f in d.findings if f.kind == "baseline-failure"]
