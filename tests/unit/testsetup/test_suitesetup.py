"""harness.testsetup.suitesetup: the suite setup as one stage, without a job context -- an sdist tree
(captured ones from tests/data/infer and tests/fixtures/packages, or small trees with a real
project's layout made here), matrix.yaml's entry and settings, an interpreter in; the SuiteSetup
out. One test per precedence case (matrix.yaml -> recipe -> inferred), per layout (where the
tests run from, with which pytest args), and for the tools and the compiled check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness.config import matrix, plan
from harness.core.model import InterpreterInfo
from harness.testsetup.suitesetup import APPEND, TOOLS, TOOLS_PYTEST9, SuiteSetup, read_suite
from tests.conftest import INTERP_YAML

ROOT = Path(__file__).resolve().parents[3]
INFER = ROOT / "tests" / "data" / "infer"
PACKAGES = ROOT / "tests" / "fixtures" / "packages"
PY313 = InterpreterInfo(name="t", version="3.13.5", key="k")
SHIPPED = "laruche 2026-03-08 (204de34)"


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _copy(name: str, tmp_path: Path) -> Path:
    src = Path(shutil.copytree(INFER / name, tmp_path / name))
    (src / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    return src


def _decide(src: Path, entry: str, settings: str = "", **kw) -> SuiteSetup:
    (job,) = plan.make_plan(matrix.loads(INTERP_YAML + settings + f"packages: [{entry}]\n"))
    return read_suite(src, job.package, job.settings, PY313, **kw)


def _from(s: SuiteSetup) -> tuple[str, str, str]:
    r = s.at_source.record
    return r.tests_from, r.requires_from, r.pytest_args_from


def test_matrix_yaml_wins_over_the_recipe_and_the_sdist(tmp_path: Path) -> None:
    """propcache 0.5.4: the shipped registry's recipe names tests/, the sdist requirements/test.txt
    and an addopts to neutralize; matrix.yaml's own fields win, each of them."""
    src = _copy("propcache-0.5.4", tmp_path)
    s = _decide(src, "{name: propcache, tests: tests/test_x.py, test_requires: [freezegun], pytest_args: [-x]}")
    assert _from(s) == ("matrix.yaml", "matrix.yaml", "matrix.yaml")
    assert (s.at_source.tests, s.at_source.pytest_args, s.at_source.record.requires) == (
        "tests/test_x.py",
        ("-x",),
        ("freezegun",),
    )
    assert s.test_deps == ()  # matrix.yaml's are installed with the package, not in their own step
    assert s.at_source.record.recipe["tests"] == "tests"  # what the recipe offered, recorded all the same


def test_the_recipe_wins_over_the_inferred_setup(tmp_path: Path) -> None:
    """propcache 0.5.4's recipe (``python -m pytest tests/``) gives the tests path; it names no
    test deps or pytest args, so those stay the sdist's."""
    src = _copy("propcache-0.5.4", tmp_path)
    s = _decide(src, "{name: propcache}")
    assert _from(s) == ("recipe", "inferred", "inferred")
    assert s.at_source.record.recipe["registry"] == SHIPPED
    assert s.at_source.pytest_args[:2] == ("-o", "addopts=")  # the sdist's --cov/-n neutralized
    assert f"recipe ({SHIPPED}): test path tests" in s.at_source.record.sources


def test_the_inferred_setup_alone_when_recipes_are_off(tmp_path: Path) -> None:
    src = _copy("propcache-0.5.4", tmp_path)
    s = _decide(src, "{name: propcache}", "settings: {registry: false}\n")
    assert _from(s) == ("inferred", "inferred", "inferred")
    assert s.at_source.record.recipe == {}
    assert s.test_deps and s.at_source.record.requires == s.test_deps  # requirements/test.txt
    assert s.config == "pytest.ini" and s.tools == TOOLS and s.has_tests


def test_a_recipes_test_deps_and_pytest_args_add_to_the_inferred_ones(tmp_path: Path) -> None:
    """attrs 26.1.0's sdist, with a recipe that installs one more test dep and gives pytest args:
    both are ``recipe + inferred``, the recipe's after the sdist's."""
    src = _copy("attrs-26.1.0", tmp_path)
    _tree(src, {"pytest.ini": "[pytest]\naddopts = -n auto\n"})  # an addopts the inference neutralizes
    reg = (
        _tree(
            tmp_path,
            {
                "mine.json": json.dumps(
                    {
                        "name": "mine",
                        "commit_date": "2027-01-02",
                        "packages": {
                            "attrs": {
                                "install_command": "pip install -e . && pip install uvloop",
                                "test_command": "python -m pytest tests -p no:randomly",
                            }
                        },
                    }
                )
            },
        )
        / "mine.json"
    )
    s = _decide(src, "{name: attrs}", f"settings: {{registry: {reg}}}\n")
    assert _from(s) == ("recipe", "recipe + inferred", "recipe + inferred")
    r = s.at_source.record
    assert r.requires[-1] == "uvloop" and "hypothesis" in r.requires and s.test_deps == r.requires
    assert r.pytest_args[:2] == ("-o", "addopts=") and r.pytest_args[-2:] == ("-p", "no:randomly")


def test_tests_inside_the_package_run_from_the_installed_copy_without_import_mode_append(tmp_path: Path) -> None:
    """pkg/tests is a package inside pkg/: from the source tree the tree would shadow the build
    (so --import-mode=append there); from site-packages nothing shadows it, and the args are
    decided without it -- not added and taken out again."""
    src = _tree(
        tmp_path / "pkg-1.0",
        {
            "pyproject.toml": "[project]\nname = 'pkg'\n",
            "pkg/__init__.py": "",
            "pkg/tests/__init__.py": "",
            "pkg/tests/test_a.py": "def test_a():\n    pass\n",
        },
    )
    s = _decide(src, "{name: pkg}", "settings: {registry: false}\n")
    assert s.at_source.tests == "pkg/tests" and s.at_source.pytest_args == (APPEND,)
    assert any(n.startswith(APPEND) for n in s.at_source.record.sources)
    assert s.installed is not None
    assert (s.installed.tests, s.installed.pytest_args) == ("pkg/tests", ())
    assert s.installed.record.tests == "pkg/tests" and s.installed.record.pytest_args == ()
    assert not any(n.startswith(APPEND) for n in s.installed.record.sources)
    assert s.installed.record.sources[-1].startswith("tests run from the installed copy: site-packages/pkg/tests")
    # matrix.yaml's own args are its own on both layouts
    mine = _decide(src, "{name: pkg, pytest_args: [--import-mode=append, -x]}", "settings: {registry: false}\n")
    assert mine.at_source.pytest_args == mine.installed.pytest_args == (APPEND, "-x")  # type: ignore[union-attr]


def test_the_captured_in_package_layout_runs_from_site_packages() -> None:
    s = _decide(PACKAGES / "ft_inpkg", "{name: ft_inpkg}", "settings: {registry: false}\n")
    assert s.at_source.tests == "lib/inpkg/tests" and s.installed is not None
    assert s.installed.tests == "inpkg/tests"


def test_a_tests_package_beside_the_package_gets_import_mode_append_at_the_source(tmp_path: Path) -> None:
    src = _tree(
        tmp_path / "pkg-1.0",
        {
            "pyproject.toml": "[project]\nname = 'pkg'\n",
            "pkg/__init__.py": "",
            "tests/__init__.py": "",
            "tests/test_a.py": "def test_a():\n    pass\n",
        },
    )
    s = _decide(src, "{name: pkg}", "settings: {registry: false}\n")
    assert s.at_source.tests == "tests" and s.at_source.pytest_args == (APPEND,)
    assert s.installed is None  # beside the package, not inside it: from the source tree only
    sources = s.at_source.record.sources  # said after what the sdist said
    assert sources[:2] == ("tests dir: tests/", "test deps: none declared")
    assert sources[2].startswith(f"{APPEND}: tests/ is a package and pkg/ sits beside it")


def test_a_pytest9_config_gets_the_pytest9_tools() -> None:
    s = _decide(PACKAGES / "ft_pytest9cfg", "{name: ft_pytest9cfg}", "settings: {registry: false}\n")
    assert s.tools == TOOLS_PYTEST9 and s.config == "pyproject.toml"
    assert s.at_source.record.sources[-1].startswith("pytest==9.2.0: its config is pytest 9's [tool.pytest] table")
    old = _decide(
        PACKAGES / "ft_clean", "{name: ft_clean}", "settings: {registry: false}\n"
    )  # [tool.pytest.ini_options]
    assert old.tools == TOOLS and old.config == "pyproject.toml"


def test_the_compiled_check_reads_the_index_files_the_fetch_kept(tmp_path: Path) -> None:
    """``index_files``: the release's files on the page the fetch read (Source.index_files)."""
    pure = _decide(PACKAGES / "ft_baseline", "{name: ft_baseline}", "settings: {registry: false}\n", index_files=[])
    assert pure.compiled == ""  # no evidence in the sdist
    ext = "pyproject.toml (declares extension modules)"
    unread = _decide(PACKAGES / "ft_clean", "{name: ft_clean}", "settings: {registry: false}\n")
    assert unread.compiled == ext  # the index's files unknown: the sdist's evidence stands
    only_pure = _decide(
        PACKAGES / "ft_clean",
        "{name: ft_clean}",
        "settings: {registry: false}\n",
        index_files=["ft_clean-1.0-py3-none-any.whl"],
    )
    assert only_pure.compiled == ""  # what CPython gets is the pure wheel
    wheel = "ft_clean-1.0-cp313-cp313-manylinux_2_17_x86_64.whl"
    assert (
        _decide(
            PACKAGES / "ft_clean", "{name: ft_clean}", "settings: {registry: false}\n", index_files=[wheel]
        ).compiled
        == f"{ext}; the index has {wheel}"
    )
    local = _decide(
        PACKAGES / "ft_clean",
        f"{{name: ft_clean, path: {PACKAGES / 'ft_clean'}}}",
        "settings: {registry: false}\n",
        index_files=[wheel],
    )
    assert local.compiled == ""  # a local tree is not checked


def test_a_benchmark_tools_fixture_runs_in_one_thread(tmp_path: Path) -> None:
    """wcwidth 0.9.5 (its layout: requirements-tests39.txt pins pytest-codspeed, whose
    ``benchmark`` fixture "can only be used once per test"): the fixture is named in
    pytest-run-parallel's ``thread_unsafe_fixtures``, after the config's own list; matrix.yaml's
    own pytest args are left as they are; no benchmark tool, no option."""
    files = {
        "setup.py": "from setuptools import setup\nsetup(name='w', packages=['w'])\n",
        "w/__init__.py": "",
        "requirements-tests39.txt": "pytest==8.4.2\npytest-codspeed==5.0.3\n",
        "tests/test_b.py": "def test_b(benchmark):\n    benchmark(len, 'x')\n",
    }
    src = _tree(tmp_path / "w", files)
    s = _decide(src, "{name: w, version: '1'}", settings="settings: {registry: false}\n")
    assert s.at_source.pytest_args[-2:] == ("-o", "thread_unsafe_fixtures=benchmark"), s.at_source.pytest_args
    assert any(n.startswith("thread_unsafe_fixtures: benchmark (pytest-codspeed:") for n in s.at_source.record.sources)
    (src / "tox.ini").write_text("[pytest]\nthread_unsafe_fixtures =\n    my_db\n")
    s = _decide(src, "{name: w, version: '1'}", settings="settings: {registry: false}\n")
    assert s.at_source.pytest_args[-2:] == ("-o", "thread_unsafe_fixtures=my_db\nbenchmark")
    s = _decide(src, "{name: w, version: '1', pytest_args: [-x]}", settings="settings: {registry: false}\n")
    assert s.at_source.pytest_args == ("-x",)
    (src / "requirements-tests39.txt").write_text("pytest==8.4.2\n")
    s = _decide(src, "{name: w, version: '1'}", settings="settings: {registry: false}\n")
    assert not any("thread_unsafe_fixtures" in a for a in s.at_source.pytest_args)


def test_a_number_written_as_a_string_in_pytest9s_table_is_given_with_o(tmp_path: Path) -> None:
    """psutil 7.2.2's [tool.pytest] holds verbosity_subtests = "0": pytest 9.2.0 refuses it
    in every test ("expects one of int | 'auto', got str: '0'"; under xdist, INTERNALERROR
    `assert not crashitem` in every run of 2026-12-07). Given again with -o, pytest reads it as
    ini text. An [tool.pytest.ini_options] table (pytest 8's, all strings) is left alone."""
    src = Path(shutil.copytree(INFER / "psutil-7.2.2", tmp_path / "psutil-7.2.2"))
    s = _decide(src, "{name: psutil, version: '7.2.2'}", "settings: {registry: false}\n")
    assert s.tools == TOOLS_PYTEST9
    assert s.at_source.pytest_args[-2:] == ("-o", "verbosity_subtests=0")
    assert any(n.startswith("verbosity_subtests=0: given with -o") for n in s.at_source.record.sources)
    # a string option that looks like a number stays in the file (ujson 6.1.0's minversion = "9.0")
    text = (src / "pyproject.toml").read_text().replace("[tool.pytest]\n", '[tool.pytest]\nminversion = "9.0"\n')
    (src / "pyproject.toml").write_text(text)
    s = _decide(src, "{name: psutil, version: '7.2.2'}", "settings: {registry: false}\n")
    assert (
        s.at_source.pytest_args[-2:] == ("-o", "verbosity_subtests=0")
        and "minversion=9.0" not in s.at_source.pytest_args
    )
    text = (src / "pyproject.toml").read_text().replace("[tool.pytest]", "[tool.pytest.ini_options]")
    (src / "pyproject.toml").write_text(text)
    s = _decide(src, "{name: psutil, version: '7.2.2'}", "settings: {registry: false}\n")
    assert "verbosity_subtests=0" not in s.at_source.pytest_args


def test_no_tests_dir_and_a_recipe_with_no_python_suite_is_no_tests(tmp_path: Path) -> None:
    """ruff 0.17.6 (#43 acceptance 4): its sdist has no tests dir, and pytest searching the root
    collected three parser resources (``crates/ruff_python_parser/resources/inline/err/*_test.py``,
    deliberate syntax errors) as a failing suite; the shipped laruche recipe says "Rust binary with
    no Python test suite" (test framework none). Both together: no suite to run. A tests dir of
    its own, or no such recipe, and the files are run as before."""
    files = {
        "pyproject.toml": "[project]\nname = 'ruff'\nversion = '0.17.6'\n",
        "crates/ruff_python_parser/resources/inline/err/assert_empty_test.py": "assert\n",
    }
    src = _tree(tmp_path / "ruff-0.17.6", files)
    s = _decide(src, "{name: ruff, version: '0.17.6'}")
    assert not s.has_tests
    assert s.at_source.record.sources[-1].startswith("no Python test suite: the recipe says so (Rust binary")
    assert _decide(src, "{name: ruff, version: '0.17.6'}", "settings: {registry: false}\n").has_tests
    _tree(src, {"tests/test_x.py": "def test_x():\n    pass\n"})
    s = _decide(src, "{name: ruff, version: '0.17.6'}")
    assert s.has_tests and s.at_source.tests == "tests"
