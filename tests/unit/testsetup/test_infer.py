"""Test setup inferred from sdists: real metadata captured in tests/data/infer (see its README)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.requirements import Requirement

from harness.testsetup.infer import Inferred, infer_test_setup
from harness.testsetup.where import tests_in_package as in_package_rel

DATA = Path(__file__).resolve().parents[2] / "data" / "infer"


def test_dependency_groups_attrs():
    s = infer_test_setup(DATA / "attrs-26.1.0", "attrs")
    assert s == Inferred(
        tests="tests",
        # pytest and pytest-xdist[psutil] are the harness's own; cloudpickle's marker holds
        requires=('cloudpickle; platform_python_implementation == "CPython"', "hypothesis", "pympler"),
        # --strict-config stays: every ini key (addopts, xfail_strict, testpaths,
        # filterwarnings) is pytest's own
        pytest_args=(),
        sources=("tests dir: tests/", "test deps from [dependency-groups] tests"),
    )


def test_optional_dependencies_beat_a_dev_group_tenacity():
    # [dependency-groups] has only dev (ruff, mypy, sphinx ...); the test extra is what tests need
    s = infer_test_setup(DATA / "tenacity-9.2.1", "tenacity")
    assert s.requires == ("tornado>=6.0",)
    assert s.sources == ("tests dir: tests/", "test deps from [project.optional-dependencies] test")
    assert s.pytest_args == ()


def test_requirements_file_jinja2():
    # requirements/tests.txt (pip-compile output) is found before tox.ini's -r of the same file,
    # and before requirements/tests37.txt (shortest name first)
    s = infer_test_setup(DATA / "jinja2-3.1.6", "Jinja2")
    assert s.requires == (
        "attrs==24.3.0",
        "idna==3.10",
        "iniconfig==2.0.0",
        "outcome==1.3.0.post0",
        "packaging==24.2",
        "pluggy==1.5.0",
        "sniffio==1.3.1",
        "sortedcontainers==2.4.0",
        "trio==0.27.0",
    )
    assert s.sources == ("tests dir: tests/", "test deps from requirements/tests.txt")


def test_tox_ini_only_python_dateutil():
    # deps = -rrequirements-dev.txt; pytest, pytest-cov, pytest-xdist and coverage dropped
    s = infer_test_setup(DATA / "python_dateutil-4.0.0", "python-dateutil")
    assert s.requires == ("freezegun", "hypothesis>=3.30", "build>=0.3.0", "attrs>=21.2.0")
    assert s.sources == ("tests dir: tests/", "test deps from tox.ini [testenv] deps")


def test_coverage_in_addopts_frozenlist():
    # matrix.yaml's hand config for frozenlist is pytest_args: ["-o", "addopts="]
    s = infer_test_setup(DATA / "frozenlist-1.8.0", "frozenlist")
    assert s.requires == ("cython==3.1.4",)  # requirements/test.txt -> -r cython.txt
    assert s.pytest_args == (
        "-o",
        "addopts=",
        "--durations=10",
        "--showlocals",
        "--doctest-modules",
        "--strict-markers",
    )
    assert s.sources == (
        "tests dir: tests/",
        "test deps from requirements/test.txt",
        "addopts neutralized (pytest.ini): -p pytest_cov (coverage is not measured), "
        "--cov (coverage is not measured), --cov-config=.coveragerc (coverage is not measured), "
        "--cov-context=test (coverage is not measured)",
        "addopts kept: --durations=10 --showlocals --doctest-modules --strict-markers",
    )


def test_setup_cfg_extras_zipp():
    # testing = ... with backslash-continued markers; python_implementation is the old name
    s = infer_test_setup(DATA / "zipp-3.17.0", "zipp")
    assert s.requires == (
        "pytest-checkdocs>=2.4",
        'pytest-black>=0.3.7; platform_python_implementation != "PyPy"',
        'pytest-mypy>=0.9.1; platform_python_implementation != "PyPy"',
        "pytest-enabler>=2.2",
        "pytest-ruff",
        "jaraco.itertools",
        "jaraco.functools",
        "more_itertools",
        "big-O",
        "pytest-ignore-flaky",
    )
    assert s.sources == ("tests dir: tests/", "test deps from setup.cfg extras_require testing")
    assert s.pytest_args == ()  # addopts=--doctest-modules is harmless


def test_markers_and_workers_propcache():
    s = infer_test_setup(DATA / "propcache-0.5.4", "propcache")
    assert s.requires == ("cython==3.3.0", "expandvars", "setuptools")
    assert 'marker false for the target, not installed: tomli; python_version < "3.11"' in s.sources
    assert s.pytest_args == (
        "-o",
        "addopts=",
        "--durations=10",
        "--showlocals",
        "--doctest-modules",
        "--strict-markers",
    )
    assert any("--numprocesses=auto (the harness picks workers per phase)" in n for n in s.sources)
    # the marker is evaluated for the environment given
    old = infer_test_setup(
        DATA / "propcache-0.5.4", "propcache", environment={"python_version": "3.10", "python_full_version": "3.10.4"}
    )
    assert old.requires == (*s.requires, 'tomli; python_version < "3.11"')


def test_round_trip():
    s = infer_test_setup(DATA / "frozenlist-1.8.0", "frozenlist")
    d = s.to_dict()
    assert d["pytest_args"][:2] == ["-o", "addopts="]
    assert Inferred.from_dict(d) == s


# ------------------------------------------------------------------- the rules, on small trees


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_include_group_cycle_and_self_extra(tmp_path):
    src = _tree(
        tmp_path,
        {
            "pyproject.toml": """
[project]
name = "demo"
[project.optional-dependencies]
extra1 = ["rich"]
[dependency-groups]
test = ["demo[extra1]", {include-group = "more"}, "not a requirement !!", "pytest>=8"]
more = ["attrs", {include-group = "test"}, {include-group = "ghost"}]
""",
            "src/demo/tests/test_x.py": "",
        },
    )
    s = infer_test_setup(src, "demo")
    assert s.tests == "src/demo/tests"
    assert s.requires == ("attrs", "rich")
    assert "include-group cycle at 'test' cut" in s.sources
    assert "include-group 'ghost' of 'more' does not exist" in s.sources
    assert "'not a requirement !!' skipped: not a requirement" in s.sources


def test_tox_substitution_extras_and_escape(tmp_path):
    src = _tree(
        tmp_path,
        {
            "setup.cfg": "[options.extras_require]\nfancy =\n    numpy\n",
            "tox.ini": "[base]\ndeps = requests\n[testenv]\ndeps =\n    {[base]deps}\n"
            "    -r ../outside.txt\n    py38: mock\n    {env:EXTRA}\n    .\nextras = fancy\n",
            "demo/tests/test_x.py": "",
        },
    )
    (tmp_path.parent / "outside.txt").write_text("evil\n")
    s = infer_test_setup(src, "demo")
    assert s.tests == "demo/tests"
    assert s.requires == ("requests", "numpy")
    assert "requirements file ../outside.txt skipped: not in the sdist" in s.sources
    assert "'py38: mock' skipped: tox substitution or factor" in s.sources


@pytest.mark.parametrize(
    ("addopts", "args", "why"),
    [
        ('"-p xdist -p no:cacheprovider -ra"', (), ""),  # nothing to neutralize: untouched
        (
            '"-p pytest_asyncio -x -n 4"',
            ("-o", "addopts=", "-p", "pytest_asyncio"),
            "-n 4 (the harness picks workers per phase)",
        ),
        ('"-p myplugin"', ("-o", "addopts="), "-p myplugin (myplugin not installed)"),
        (
            '"--strict-config"',
            ("-o", "addopts="),
            "--strict-config (ini keys no installed plugin may know: asyncio_mode)",
        ),
    ],
)
def test_addopts_rules(tmp_path, addopts, args, why):
    src = _tree(
        tmp_path,
        {
            "pyproject.toml": f'[tool.pytest.ini_options]\naddopts = {addopts}\nasyncio_mode = "auto"\n'
            '[dependency-groups]\ntest = ["pytest-asyncio"]\n',
            "tests/test_x.py": "",
        },
    )
    s = infer_test_setup(src, "demo")
    assert s.pytest_args == args
    neutral = [n for n in s.sources if n.startswith("addopts neutralized")]
    assert neutral == ([f"addopts neutralized (pyproject.toml): {why}"] if why else [])


def test_nothing_declared(tmp_path):
    s = infer_test_setup(_tree(tmp_path, {"x.py": ""}), "demo")
    assert s == Inferred(sources=("tests dir: none found (pytest searches the root)", "test deps: none declared"))


def test_free_threaded_requirements_and_a_filterwarnings_category_aiohttp():
    # requirements/test-ft.txt is test.txt for free-threaded builds (uvloop left out); pytest.ini's
    # filterwarnings names coverage.exceptions.CoverageWarning, so pytest must import coverage
    s = infer_test_setup(DATA / "aiohttp-3.14.5", "aiohttp")
    assert not [r for r in s.requires if r.startswith("uvloop")]
    assert "pytest-cov==7.1.0" not in s.requires and s.requires[-1] == "coverage"
    assert s.sources[:3] == (
        "tests dir: tests/",
        "requirements/test-ft.txt: the free-threaded variant of requirements/test.txt",
        "test deps from requirements/test-ft.txt",
    )
    assert "coverage kept: a filterwarnings entry names it" in s.sources
    assert s.pytest_args[:2] == ("-o", "addopts=")


def test_addopts_as_a_toml_list_with_an_option_and_its_value_in_one_item_psutil():
    # pyproject's addopts list holds "-p instafail" as one item, and "--instafail" (that plugin's
    # option), and "-p no:junitxml" (the harness reads JUnit XML): all three must go
    s = infer_test_setup(DATA / "psutil-7.2.2", "psutil")
    assert s.pytest_args[:2] == ("-o", "addopts=")
    assert "--instafail" not in s.pytest_args and "no:junitxml" not in s.pytest_args
    assert "instafail" not in s.pytest_args and s.pytest_args[-2:] == ("-p", "xdist")
    assert s.sources[-2] == (
        "addopts neutralized (pyproject.toml): -p instafail (instafail not installed), "
        "-p no:junitxml (the harness needs it), --instafail (its plugin is not installed)"
    )


def test_test_deps_only_setup_py_declares_come_from_pkg_info_psutil():
    # setup.py's extras_require={"test": TEST_DEPS} is code; the sdist's PKG-INFO (metadata 2.4)
    # holds it as `Requires-Dist: psleak; extra == "test"`: psleak, which tests/test_memleaks.py
    # imports (missing, its collection error broke pytest-xdist in every run of the 2026-12-07
    # run: INTERNALERROR `assert not crashitem`). Markers false for the target (pywin32 on nt)
    # and the harness's own pins are left out; the `dev` extra is not taken first.
    s = infer_test_setup(DATA / "psutil-7.2.2", "psutil")
    assert s.sources[1] == "test deps from PKG-INFO extra test"
    assert s.requires == ("psleak", "pytest-instafail", "setuptools")


def test_hashed_requirements_files_coverage():
    # tox.ini's deps `-r requirements/pytest.txt`, uv output with `--hash=sha256:...` continued on
    # every line: each is a requirement (hypothesis, which tests/conftest.py imports, among them)
    s = infer_test_setup(DATA / "coverage-7.18.0", "coverage")
    assert s.sources[1] == "test deps from tox.ini [testenv] deps"
    names = [Requirement(r).name for r in s.requires]
    assert "hypothesis" in names and "flaky" in names and "sortedcontainers" in names
    assert not [r for r in s.requires if "--hash" in r]
    assert "pytest" not in names and "pytest-xdist" not in names  # the harness's own
    assert not [n for n in s.sources if "not a requirement" in n]


def test_a_conftest_import_declared_in_another_group_urllib3():
    # test/conftest.py imports trustme at module level; the `test` group (picked) leaves it out,
    # the `dev` group has it: step 2b installs it and says why
    s = infer_test_setup(DATA / "urllib3-2.8.0", "urllib3")
    assert s.sources[1] == "test deps from [dependency-groups] test"
    assert s.requires[-1] == "trustme>=1.2.1"
    assert "trustme>=1.2.1 from [dependency-groups] dev: test/conftest.py:10 imports trustme" in s.sources
    # pytest (the harness's), urllib3 (the package), dummyserver (a dir of the sdist): not added
    assert [r for r in s.requires if "trustme" in r] == ["trustme>=1.2.1"]


def test_conftest_imports_that_are_optional_runtime_or_undeclared_are_left(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "pkg"\ndependencies = ["botocore"]\n'
        '[dependency-groups]\ntest = ["pytest-mock"]\n'
        'crt = ["botocore[crt]", "helperlib", "yaml-extra", "PyYAML>=6"]\n'
    )
    (tmp_path / "tests" / "sub").mkdir(parents=True)
    (tmp_path / "tests" / "conftest.py").write_text(
        "import os\nimport botocore\ntry:\n    import helperlib\nexcept ImportError:\n    pass\n"
        "import notdeclared\nfrom . import local\n"
    )
    (tmp_path / "tests" / "sub" / "conftest.py").write_text("import yaml\n")
    s = infer_test_setup(tmp_path, "pkg")
    # botocore: a runtime dep (installed with the package, no [crt] pulled in); helperlib: inside
    # try; notdeclared: nowhere in the sdist (the run's setup-error will name it); yaml -> PyYAML
    assert s.requires == ("pytest-mock", "PyYAML>=6")
    assert "PyYAML>=6 from [dependency-groups] crt: tests/sub/conftest.py:1 imports yaml" in s.sources


# --------------------------------------------------------------------------- tests dir (#35)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "packages"
PY313 = {"python_version": "3.13"}


@pytest.mark.parametrize(("python", "tree"), [("3.13", "py3.13"), ("3.9", "py3.9"), ("3.16", "py3.15")])
def test_per_version_trees_multiprocess(python, tree):
    # multiprocess 0.70.19: py3.9/ ... py3.15/ (and pypy3.*), each with multiprocess/tests; from the
    # root pytest collected every tree (39 passed, 1,191 errors). A newer Python gets the newest
    # tree below it, as its setup.py installs that one.
    src = DATA / "multiprocess-0.70.19"
    s = infer_test_setup(src, "multiprocess", environment={"python_version": python})
    assert s.tests == f"{tree}/multiprocess/tests"
    assert s.sources[0].startswith(
        f"tests dir: {tree}/multiprocess/tests/ (one source tree per Python "
        "version, py3.9/, py3.10/, py3.11/, py3.12/, py3.13/, py3.14/, py3.15/: "
    )
    assert s.sources[0].endswith("the others are not collected)")
    # the tests sit inside the import package: the job runs them from site-packages
    assert in_package_rel(src, s.tests) == "multiprocess/tests"


def test_per_version_trees_none_for_an_older_python():
    s = infer_test_setup(DATA / "multiprocess-0.70.19", "multiprocess", environment={"python_version": "3.8"})
    assert s.tests == ""
    assert s.sources[0].startswith("tests dir: none found (per-version source trees py3.9/")


def test_per_version_tree_fixture():
    s = infer_test_setup(FIXTURES / "ft_pertree", "ft_pertree", environment=PY313)
    assert s.tests == "py3.13/ft_pertree/tests"
    assert s.sources[0] == (
        "tests dir: py3.13/ft_pertree/tests/ (one source tree per Python version, py3.12/, "
        "py3.13/, py3.14/: py3.13/ is Python 3.13's; the others are not collected)"
    )
    assert in_package_rel(FIXTURES / "ft_pertree", s.tests) == "ft_pertree/tests"


def test_tests_only_inside_the_package_fixture():
    # the import package is inpkg (not the distribution's name), under lib/; tools/test_release.py
    # is a maintainer's script that fails wherever it is collected
    s = infer_test_setup(FIXTURES / "ft_inpkg", "ft_inpkg", environment=PY313)
    assert s.tests == "lib/inpkg/tests"
    assert s.sources[0] == (
        "tests dir: lib/inpkg/tests/ (inside the import package lib/inpkg/, none of "
        "tests/, test/, testing/ at the root: the install ships it)"
    )
    assert in_package_rel(FIXTURES / "ft_inpkg", s.tests) == "inpkg/tests"


def _files(root: Path, names: list[str]) -> Path:
    return _tree(root, dict.fromkeys(names, ""))


def test_a_known_tests_dir_beats_the_version_trees(tmp_path):
    _files(tmp_path, ["tests/test_a.py", "py3.12/pkg/__init__.py", "py3.13/pkg/__init__.py"])
    assert infer_test_setup(tmp_path, "pkg", environment=PY313).tests == "tests"


def test_one_py_dir_is_not_a_per_version_layout(tmp_path):
    # a lone py3.13/ is a name; pypy trees are never CPython's
    _files(tmp_path, ["py3.13/pkg/__init__.py", "py3.13/pkg/tests/test_a.py", "pypy3.10/x.py"])
    assert infer_test_setup(tmp_path, "pkg", environment=PY313).tests == "py3.13/pkg/tests"  # in-package
    _files(tmp_path, ["other/test_b.py"])
    assert infer_test_setup(tmp_path / "other", "pkg", environment=PY313).tests == ""


def test_a_version_tree_without_a_known_tests_dir_is_searched_whole(tmp_path):
    _files(tmp_path, ["py3.12/test_a.py", "py3.13/test_a.py"])
    s = infer_test_setup(tmp_path, "pkg", environment=PY313)
    assert s.tests == "py3.13"


def test_in_package_tests_shallowest_first_and_only_with_test_files(tmp_path):
    _files(
        tmp_path,
        [
            "lib/deep/__init__.py",
            "lib/deep/tests/helpers.py",  # no test files
            "lib/alpha/__init__.py",
            "lib/alpha/sub/__init__.py",
            "lib/alpha/sub/tests/test_x.py",
            "lib/beta/__init__.py",
            "lib/beta/test/test_y.py",
            "docs/pkgdoc/__init__.py",
            "docs/pkgdoc/tests/test_doc.py",  # docs/ is not looked in
            "tools/test_release.py",
        ],
    )  # not inside a package
    s = infer_test_setup(tmp_path, "pkg", environment=PY313)
    assert s.tests == "lib/beta/test"
    assert "inside the import package lib/beta/" in s.sources[0]


def test_in_package_tests_not_below_the_depth_limit_or_through_a_link(tmp_path):
    src = _files(tmp_path / "src", ["a/b/c/__init__.py", "a/b/c/tests/test_x.py"])  # 4 levels: too deep
    assert infer_test_setup(src, "pkg", environment=PY313).tests == ""
    _files(tmp_path / "outside", ["pkg2/__init__.py", "pkg2/tests/test_x.py"])
    (src / "linked").symlink_to(tmp_path / "outside")
    assert infer_test_setup(src, "pkg", environment=PY313).tests == ""
    (src / "pkg3").symlink_to(tmp_path / "outside" / "pkg2")
    assert infer_test_setup(src, "pkg", environment=PY313).tests == ""


def test_addopts_list_item_with_a_marker_expression_stays_one_value_pymongo():
    # pymongo 4.20.1's pyproject: addopts = [..., "--strict-config", ..., "-m default or default_async"];
    # pytest takes each list item as one argument, so "-m" gets "default or default_async" whole
    # (split on spaces, "or" and "default_async" became test paths and nothing ran: `no-tests`)
    s = infer_test_setup(DATA / "pymongo-4.20.1", "pymongo")
    assert s.pytest_args[:2] == ("-o", "addopts=")
    i = s.pytest_args.index("-m")
    assert s.pytest_args[i + 1] == "default or default_async"
    assert "or" not in s.pytest_args and "default_async" not in s.pytest_args
