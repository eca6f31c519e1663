"""Community recipes (harness.testsetup.registry, .recipeapply, harness.testsetup.suitesetup): real
recipes of the shipped laruche snapshot applied to sdist trees -- captured ones from
tests/data/infer, or trees made here with the layout of the real sdist -- and what holds, what
does not, and where each field came from."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from harness.config import matrix, plan
from harness.core.errors import ConfigError
from harness.core.model import InterpreterInfo
from harness.core.suiterecord import TestSetup
from harness.testsetup import infer, recipeapply, registry, suitesetup
from tests.conftest import INTERP_YAML

INFER = Path(__file__).resolve().parents[2] / "data" / "infer"
LABEL = "laruche 2026-03-08 (204de34)"
PY313 = InterpreterInfo(name="t", version="3.13.5", key="k")


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _copy(name: str, tmp_path: Path) -> Path:
    src = shutil.copytree(INFER / name, tmp_path / name)
    (src / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    return Path(src)


def _resolve(
    pkg: matrix.Package, settings: matrix.Settings, src: Path
) -> tuple[suitesetup.RunFrom, TestSetup, tuple[str, ...]]:
    """(where the tests run from the source tree, its test_setup, the test deps to install)."""
    suite = suitesetup.read_suite(src, pkg, settings, PY313)
    return suite.at_source, suite.at_source.record, suite.test_deps


def _job(entry: str = "{name: demo}", settings: str = "") -> plan.Job:
    return plan.make_plan(matrix.loads(INTERP_YAML + settings + f"packages: [{entry}]\n"))[0]


# --------------------------------------------------------------------------- the shipped snapshot


def test_the_shipped_snapshot_names_its_origin_and_keeps_the_license() -> None:
    reg = registry.load()
    assert reg.label == LABEL and reg.source == "https://github.com/devdanzin/laruche"
    assert len(reg.recipes) == 1899  # the enriched recipes: every other one is empty
    head = json.loads(registry.SHIPPED.read_text())
    assert head["license"].startswith("MIT License\n\nCopyright (c) 2026 Daniel Diniz")
    assert reg.get("PropCache") is reg.get("propcache")  # names canonicalized


# --------------------------------------------------------------------------- three real recipes


def test_a_pure_projects_recipe_gives_its_test_deps(tmp_path: Path) -> None:
    """attrs: `pip install -e . && pip install pytest hypothesis pytest-xdist pympler
    cloudpickle`, `python -m pytest -p no:xdist`: on the real attrs 26.1.0 sdist's files."""
    src = _copy("attrs-26.1.0", tmp_path)
    got = recipeapply.apply(registry.load().get("attrs"), src, "attrs", "3.13", registry=LABEL)
    assert got.requires == ("hypothesis", "pympler", "cloudpickle")  # pytest, pytest-xdist: pinned
    assert got.tests == "" and got.pytest_args == () and got.skip == ""
    assert got.not_held == ()  # -p no:xdist is the harness's own business, not news
    pkg, setup, deps = _resolve(_job("{name: attrs}").package, _job().settings, src)
    # the sdist's own `tests` group already names all three: the recipe adds nothing to it
    assert deps == ('cloudpickle; platform_python_implementation == "CPython"', "hypothesis", "pympler")
    assert setup.requires_from == "inferred"
    assert (setup.tests, setup.tests_from) == ("tests", "inferred")  # the recipe names none
    assert setup.recipe["registry"] == LABEL
    assert "recipe (laruche 2026-03-08 (204de34)): test deps hypothesis pympler cloudpickle" in setup.sources


def test_an_extension_projects_recipe_gives_its_tests_path_and_timeout(tmp_path: Path) -> None:
    """propcache (c_extension): `python -m pytest tests/ -p no:xdist`, timeout 300; its install
    names no test deps, so the inference's requirements/test.txt stays."""
    src = _copy("propcache-0.5.4", tmp_path)
    got = recipeapply.apply(registry.load().get("propcache"), src, "propcache", "3.13", registry=LABEL)
    assert (got.tests, got.requires, got.timeout) == ("tests", (), 300)
    assert got.used == ("timeout 300s for the suite", "test path tests")
    job = _job("{name: propcache}", "settings: {job_timeout: 120}\n")
    pkg, setup, deps = _resolve(job.package, job.settings, src)
    assert (pkg.tests, setup.tests_from, setup.requires_from) == ("tests", "recipe", "inferred")
    assert deps == infer.infer_test_setup(src, "propcache").requires  # requirements/test.txt
    assert (
        "timeout 300s for the suite is past settings.job_timeout (120s): the budget may end before every mode ran"
    ) in setup.recipe["not_held"]


def test_an_extension_recipes_path_that_the_sdist_lacks_is_said(tmp_path: Path) -> None:
    """ujson: `python -m pytest -p no:xdist tests/`, after `pip install setuptools
    setuptools-scm && pip install --no-build-isolation -e .`, on a tree without tests/."""
    src = _tree(tmp_path / "ujson-5.11.0", {"pyproject.toml": "[project]\nname = 'ujson'\n", "src/ujson/ujson.c": ""})
    got = recipeapply.apply(registry.load().get("ujson"), src, "ujson", "3.13", registry=LABEL)
    assert got.tests == "" and got.requires == ()
    assert got.not_held == (
        "test path tests/ not in the sdist",
        "installed before the project (build requirements): setuptools setuptools-scm",
    )


def test_skip_versions_stops_the_job_on_that_version_only(tmp_path: Path) -> None:
    """numpy: skip_versions {3.15: "Meson build system: ..."}; `pip install -e ".[test]"`,
    `python -m pytest --pyargs numpy -p no:xdist --durations=10`, timeout 1800."""
    rec = registry.load().get("numpy")
    why = "Meson build system: 'Python dependency not found' on 3.15 (meson cannot find python3.15 sysconfig)."
    assert recipeapply.skip_reason(rec, "3.15") == why and recipeapply.skip_reason(rec, "3.13") == ""
    job = _job("{name: numpy, version: '2.3.5'}")
    skip = suitesetup.registry_skip(job.package, job.settings, "3.15")
    assert skip is not None and skip.recipe["skip"] == why and skip.recipe["timeout"] == 1800
    assert skip.sources == (f"recipe ({LABEL}): not run on 3.15: {why}",)
    assert suitesetup.registry_skip(job.package, job.settings, "3.13") is None
    off = _job("{name: numpy}", "settings: {registry: false}\n")
    assert off.settings.registry is None and suitesetup.registry_skip(off.package, off.settings, "3.15") is None
    # decided once for the plan, by the interpreter's version, before any job runs (#45): the job
    # and the store step read Job.skip, and do not ask the registry themselves
    from harness.config.plan import with_skips

    name = job.interpreter.name
    assert [j.skip for j in with_skips([job, off], {name: "3.15.0a2"})] == [skip, None]
    assert [j.skip for j in with_skips([job], {name: "3.13.5"})] == [None]
    assert with_skips([job], {})[0].skip is None  # a version not known: nothing skipped
    # on 3.13 it runs; what of the recipe holds for a tree with numpy's layout
    src = _tree(
        tmp_path / "numpy-2.3.5",
        {
            "pyproject.toml": "[project]\nname = 'numpy'\n[project.optional-dependencies]\n",
            "requirements/test_requirements.txt": "hypothesis\n",
            "numpy/tests/test_x.py": "",
        },
    )
    got = recipeapply.apply(rec, src, "numpy", "3.13", registry=LABEL)
    assert (got.tests, got.requires, got.pytest_args, got.skip) == ("", (), (), "")
    assert got.not_held == (
        "--pyargs numpy: a module, not a path (the harness picks where installed tests run)",
        "pytest options left out (the harness sets its own): --pyargs --durations=10",
        "installed before the project (build requirements): meson-python meson cython ninja",
        "numpy[test]: no extra 'test' in pyproject.toml or setup.cfg",
    )


# --------------------------------------------------------------------------- reading a recipe


def _recipe(test: str = "", install: str = "", **kw) -> registry.Recipe:
    return registry.Recipe(name="demo", test_command=test, install_command=install, **kw)


def test_options_kept_left_out_and_paths_checked(tmp_path: Path) -> None:
    src = _tree(tmp_path / "demo", {"sub/tests/test_a.py": "", "sub/tests/unit/test_b.py": "", "x.py": ""})
    got = recipeapply.apply(
        _recipe(
            "cd sub && FOO=1 python -m pytest tests/unit tests -o 'addopts=' -k 'not net' -m 'not slow' "
            "-p no:cov -p no:xdist -p anyio --deselect tests/unit/test_b.py::t --ignore=tests/big "
            "-W ignore::DeprecationWarning -v -n 4 --durations 5 --benchmark-disable tests/missing "
            "tests/test_a.py::test_one ../x.py"
        ),
        src,
        "demo",
        "3.13",
        registry=LABEL,
    )
    assert got.tests == "sub/tests/unit"
    assert got.pytest_args == (
        "-o",
        "addopts=",
        "-k",
        "not net",
        "-m",
        "not slow",
        "-p",
        "no:cov",
        "--deselect=tests/unit/test_b.py::t",
        "--ignore=tests/big",
        "-W",
        "ignore::DeprecationWarning",
    )
    assert got.not_held == (
        "test path sub/tests (in the sdist): the harness runs one path, sub/tests/unit",
        "test path sub/tests/missing not in the sdist",
        "test id sub/tests/test_a.py::test_one: the harness runs a path, not one test",
        "test path sub/../x.py not in the sdist",
        "pytest options left out (the harness sets its own): -p anyio -v -n 4 --durations 5 --benchmark-disable",
    )


def test_install_commands_read_as_test_deps(tmp_path: Path) -> None:
    src = _tree(
        tmp_path / "demo",
        {
            "pyproject.toml": "[project]\nname = 'demo'\n[project.optional-dependencies]\n"
            "test = ['pytest-mock', 'demo[extra]', 'pytest-cov']\nextra = ['trio']\n",
            "requirements/test.txt": "freezegun  # comment\ntomli; python_version < '3.11'\n",
        },
    )
    got = recipeapply.apply(
        _recipe(
            "python -m pytest",
            "pip install cython && pip install --no-build-isolation "
            "-e '.[test]' && python -m pip install -U pytest 'hypothesis>=6' ./vendored "
            "&& pip install -r requirements/test.txt -r requirements/nope.txt && git "
            "submodule update --init",
        ),
        src,
        "demo",
        "3.13",
        registry=LABEL,
    )
    assert got.requires == ("hypothesis>=6", "freezegun", "pytest-mock", "trio")  # extras expanded last
    assert got.not_held == (
        "install of ./vendored: not a requirement of the index (a path of the checkout)",
        "-r requirements/nope.txt: not in the sdist",
        "installed before the project (build requirements): cython",
        'marker false for the target, not installed: tomli; python_version < "3.11"',
    )


def test_a_recipe_for_another_framework_gives_nothing_but_its_skip(tmp_path: Path) -> None:
    rec = _recipe(
        "python -m unittest discover tests",
        "pip install -e . && pip install mock",
        test_framework="unittest",
        skip_versions=(("3.13", "no wheel"),),
    )
    got = recipeapply.apply(rec, tmp_path, "demo", "3.13", registry=LABEL)
    assert (got.tests, got.requires, got.skip) == ("", (), "no wheel")
    assert got.not_held == ("test framework unittest: not pytest, its commands not used",)
    everywhere = recipeapply.apply(_recipe(skip=True, skip_reason="monorepo"), tmp_path, "demo", "3.13", registry=LABEL)
    assert everywhere.skip == ""  # said, not applied
    assert everywhere.not_held[0].startswith("skip on every version (monorepo): not applied")
    odd = recipeapply.apply(_recipe("pytest 'unclosed"), tmp_path, "demo", "3.13", registry=LABEL)
    assert odd.not_held == ('test command "pytest \'unclosed": no pytest in it, not used',)


def test_matrix_yaml_wins_field_by_field(tmp_path: Path) -> None:
    src = _copy("propcache-0.5.4", tmp_path)
    job = _job("{name: propcache, tests: tests/test_x.py, test_requires: [freezegun], pytest_args: [-x]}")
    pkg, setup, deps = _resolve(job.package, job.settings, src)
    assert (setup.tests, setup.requires, setup.pytest_args) == ("tests/test_x.py", ("freezegun",), ("-x",))
    assert {getattr(setup, k) for k in ("tests_from", "requires_from", "pytest_args_from")} == {"matrix.yaml"}
    assert setup.recipe["tests"] == "tests"  # what the recipe offered, recorded all the same


# --------------------------------------------------------------------------- other registries


def test_a_newer_snapshot_gzipped_or_a_checkout_is_read(tmp_path: Path) -> None:
    doc = {
        "name": "mine",
        "commit": "abcdef0123",
        "commit_date": "2027-01-01",
        "packages": {"Demo_Pkg": {"test_command": "pytest t", "timeout": 60}},
    }
    gz = tmp_path / "r.json.gz"
    gz.write_bytes(gzip.compress(json.dumps(doc).encode()))
    reg = registry.load(str(gz))
    assert reg.label == "mine 2027-01-01 (abcdef0)" and reg.get("demo-pkg").timeout == 60
    _tree(
        tmp_path / "laruche" / "packages",
        {"demo.yaml": "package: demo\ntest_command: pytest x\nskip_versions:\n  '3.13': why\n"},
    )
    reg = registry.load(str(tmp_path / "laruche"))
    assert reg.get("demo").skip_versions == (("3.13", "why"),) and reg.name == "laruche"


@pytest.mark.parametrize(
    "text, why",
    [
        ("not json", "not JSON: Expecting value"),
        ("[]", "a registry file is a JSON object, got list"),
        ('{"packages": []}', "no 'packages' mapping"),
        ('{"packages": {"x": {"timeout": "ten"}}}', "packages.x.timeout must be a positive integer or null, got 'ten'"),
        ('{"packages": {"x": {"skip_versions": ["3.15"]}}}', "packages.x.skip_versions must map a version"),
    ],
)
def test_a_file_that_is_no_registry_is_one_line_at_the_matrix_key(tmp_path: Path, text: str, why: str) -> None:
    (tmp_path / "reg.json").write_text(text)
    with pytest.raises(ConfigError) as e:
        matrix.loads(
            INTERP_YAML + "settings:\n  registry: reg.json\npackages: [{name: six}]\n", file="m.yaml", base=tmp_path
        )
    assert str(e.value).startswith("m.yaml:3: settings.registry names 'reg.json', which is not a recipe registry: ")
    assert why in str(e.value) and str(e.value).endswith("false turns recipes off)")
    assert "\n" not in str(e.value)


def test_the_registry_setting(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text('{"packages": {}}')

    def load(v: str) -> str | None:
        return matrix.loads(
            INTERP_YAML + f"settings: {{registry: {v}}}\npackages: [{{name: six}}]\n", base=tmp_path
        ).settings.registry

    assert load("r.json") == str(tmp_path / "r.json") and load("false") is None and load("shipped") == "shipped"
    assert matrix.loads(INTERP_YAML + "packages: [{name: six}]\n").settings.registry == "shipped"
    with pytest.raises(ConfigError, match=r"settings.registry names 'nope.json', which does not exist"):
        load("nope.json")


def test_the_plan_names_the_jobs_the_registry_skips() -> None:
    spec = matrix.loads(
        'interpreters: [{name: ft313, version: "3.13.5", source: "debian:trixie"},\n'
        '  {name: ft315, version: "3.15", source: "python:python3.15t"},\n'
        '  {name: ftany, source: "python:python3t"}]\n'
        "packages: [{name: numpy}, {name: six}]\n"
    )
    assert suitesetup.planned_skips(plan.make_plan(spec)) == [
        "ft315--numpy: not run: recipe (laruche 2026-03-08 (204de34)): not run on 3.15: Meson build system: "
        "'Python dependency not found' on 3.15 (meson cannot find python3.15 sysconfig)."
    ]


def test_a_recipes_test_deps_add_to_the_sdists_never_replace_them() -> None:
    """asyncpg 0.32.0 (the not-tuned-on slice): its recipe installs `uvloop`; its sdist's `test`
    group names distro, gssapi, uvloop ... Taking the recipe's alone left distro out and 299 of
    306 items errored at collection."""
    own = ("flake8~=6.1", "distro~=1.9.0", 'uvloop>=0.23.0; platform_system != "Windows"')
    assert suitesetup._requires((), ("uvloop", "pytest-asyncio"), own) == (
        (*own, "pytest-asyncio"),
        "recipe + inferred",
    )
    assert suitesetup._requires((), ("uvloop",), ()) == (("uvloop",), "recipe")
    assert suitesetup._requires((), ("Uvloop",), own) == (own, "inferred")
    assert suitesetup._requires(("x",), ("uvloop",), own) == (("x",), "matrix.yaml")
