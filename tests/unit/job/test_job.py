"""Small pure helpers of the job runner."""

from __future__ import annotations

import pytest

from harness.job.job import pinned_version


@pytest.mark.parametrize(
    ("spec", "version"),
    [
        ("==2.1.1", "2.1.1"),
        ("===1.0", "1.0"),
        ("==3.*", ""),
        (">=1,<2", ""),
        ("", ""),
        ("~=1.4", ""),
        ("not a spec", ""),
    ],
)
def test_pinned_version(spec, version):
    assert pinned_version(spec) == version


# pytest's own configuration: files it takes, and files it does not (issue #20)
from pathlib import Path  # noqa: E402

from harness.testsetup.pytestcfg import pytest_config  # noqa: E402


def has_pytest_config(src: Path, tests: str) -> bool:
    """Whether pytest, started on ``tests``, finds a configuration inside the package's source."""
    return pytest_config(src, tests, []) is not None


@pytest.mark.parametrize(
    "where, name, text, found",
    [
        ("", "pytest.ini", "", True),  # pytest takes it even when empty
        ("", ".pytest.ini", "[pytest]\n", True),
        ("", "pyproject.toml", "[tool.pytest.ini_options]\naddopts = '-x'\n", True),
        ("", "pyproject.toml", "[tool.pytest]\nminversion = '9'\n", True),
        ("", "pyproject.toml", "[project]\nname = 'x'\n", False),  # ujson 6.1.0's case
        ("", "pyproject.toml", "not [ toml", False),
        ("", "tox.ini", "[tox]\nenvlist = py\n[pytest]\naddopts = -ra\n", True),
        ("", "tox.ini", "[tox]\nenvlist = py\n", False),
        ("", "setup.cfg", "[metadata]\nname = x\n[tool:pytest]\ntestpaths = tests\n", True),
        ("", "setup.cfg", "[metadata]\nname = x\n", False),
        ("tests", "pytest.ini", "[pytest]\n", True),  # found first, walking up from the tests
    ],
)
def test_has_pytest_config(tmp_path: Path, where: str, name: str, text: str, found: bool) -> None:
    src = tmp_path / "outer" / "src" / "pkg-1.0"
    (src / "tests").mkdir(parents=True)
    (src / where / name).write_text(text)
    # what lies above the package's source never counts: that is the point
    (tmp_path / "outer" / "pytest.ini").write_text("[pytest]\naddopts = --strict-markers\n")
    assert has_pytest_config(src, "tests") is found
    assert has_pytest_config(src, "tests/test_x.py") is found
    assert has_pytest_config(src, "") is (found and where == "")


# the command builder: each test phase's command in parts, so a reproduce is built (issue #18)
from harness.backends.base import Workspace  # noqa: E402
from harness.config import matrix, plan  # noqa: E402
from harness.core.model import Phase  # noqa: E402
from harness.job.suite import command as suite_command  # noqa: E402
from harness.verdict import reproduce  # noqa: E402

MATRIX = """\
interpreters: [{name: cp313t, version: "3.13.5", source: "debian:trixie"}]
packages:
  - name: six
    pytest_args: [--import-mode=importlib]
    skip: [{test: "test_six.py::test_lazy", reason: r}, {test: "slow and net", reason: r}]
  - {name: toxpkg, runner: tox, tox_env: py313t}
"""


def _jobs() -> dict[str, plan.Job]:
    return {j.package.name: j for j in plan.make_plan(matrix.loads(MATRIX))}


def test_test_command_parts_and_their_reproduce() -> None:
    ws = Workspace(host_root=Path("/nonexistent"), root="/w", python="/py")
    tc = suite_command(_jobs()["six"], ws, "/w/venv/bin/python", "tests", src="/w/src/six-1.17.0")
    assert tc.head == ("/w/venv/bin/python", "-P", "-m", "pytest", "-p", "no:cacheprovider")
    assert tc.paths == ("tests",)
    assert {
        "--rootdir=/w/src/six-1.17.0",
        "--confcutdir=/w/src/six-1.17.0",
        "--import-mode=importlib",
        "--deselect=test_six.py::test_lazy",
    } <= set(tc.options)
    assert tc.options[tc.options.index("-c") + 1] == "/dev/null"
    assert tc.options[tc.options.index("-k") + 1] == "not (slow and net)"
    ran = Phase(
        name="threads-gil0-r1",
        kind="threads",
        gil=0,
        cwd="/w/src/six-1.17.0",
        test_command=tc.__class__(
            **{**vars(tc), "threads": ("--parallel-threads=4",), "this_run": ("-n", "auto", "--junitxml=/w/j.xml")}
        ),
    )
    line = reproduce(ran, "test_six.py::test_x[a b]")
    assert line.startswith("cd /w/src/six-1.17.0 && /w/venv/bin/python -P -m pytest")
    assert "--parallel-threads=4" in line and "-n auto" not in line and "--junitxml" not in line
    assert line.endswith(" --parallel-threads=4 'test_six.py::test_x[a b]'")
    # the package's own config is named too: pytest never walks up to look for one (ujson 6.1.0)
    own = suite_command(_jobs()["six"], ws, "/v/python", "tests", src="/s", config="/s/setup.cfg").options
    assert own.count("-c") == 1 and own[own.index("-c") + 1] == "/s/setup.cfg"


def test_tox_test_command_passes_pytest_options_as_posargs() -> None:
    ws = Workspace(host_root=Path("/nonexistent"), root="/w", python="/py")
    tc = suite_command(_jobs()["toxpkg"], ws, "/w/venv/bin/python", "", src="/w/src/p")
    assert tc.head[:6] == ("/w/venv/bin/python", "-m", "tox", "-e", "py313t", "--skip-pkg-install")
    assert tc.head[-1] == "--" and "testenv:py313t.basepython=/py" in tc.head
    assert tc.paths == () and tc.options[0].startswith("--timeout=")


def test_a_planted_config_link_is_not_followed(tmp_path: Path) -> None:
    # after the install, package code could have replaced its pyproject.toml with a link to a
    # host file: the search reads no link (and says "no config of its own")
    host = tmp_path / "host.toml"
    host.write_text("[tool.pytest.ini_options]\naddopts = '-x'\n")
    src = tmp_path / "src" / "pkg-1.0"
    (src / "tests").mkdir(parents=True)
    (src / "pyproject.toml").symlink_to(host)
    assert has_pytest_config(src, "tests") is False
    (src / "pyproject.toml").unlink()
    (src / "pyproject.toml").write_text(host.read_text())
    assert has_pytest_config(src, "tests") is True


# ---- tests inside the import package run from the installed copy (harness.testsetup.where)
from harness.testsetup.where import tests_in_package as in_package_rel  # noqa: E402


def _tree(root: Path, files: list[str]) -> None:
    for f in files:
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_text("")


@pytest.mark.parametrize(
    ("tests", "src_files", "expected"),
    [
        # numpy's layout: numpy/tests inside numpy/ (whether the install ships it: jobfiles.site_packages)
        ("numpy/tests", ["numpy/__init__.py", "numpy/conftest.py", "numpy/tests/__init__.py"], "numpy/tests"),
        # src layout, tests inside the package
        ("src/pkg/tests", ["src/pkg/__init__.py", "src/pkg/tests/test_a.py"], "pkg/tests"),
        # a tests dir beside the package is not inside it (a clash)
        ("tests", ["pkg/__init__.py", "tests/__init__.py"], None),
        ("tests", ["pkg/__init__.py", "tests/test_a.py"], None),
        # a conftest.py of the source outside the package: it would be lost from site-packages
        ("src/pkg/tests", ["conftest.py", "src/pkg/__init__.py", "src/pkg/tests/test_a.py"], None),
        ("", ["pkg/__init__.py"], None),
    ],
)
def test_tests_inside_the_package_run_from_site_packages(
    tmp_path: Path, tests: str, src_files: list[str], expected: str | None
) -> None:
    src = tmp_path / "src"
    _tree(src, src_files)
    assert in_package_rel(src, tests) == expected


def test_installed_tests_take_the_sources_config_file() -> None:
    ws = Workspace(host_root=Path("/nonexistent"), root="/w", python="/py")
    tc = suite_command(
        _jobs()["six"],
        ws,
        "/v/python",
        "numpy/tests",
        src="/w/venv/lib/python3.13t/site-packages",
        config="/w/src/numpy-2.5.5/pytest.ini",
    )
    opts = list(tc.options)
    assert opts[opts.index("-c") + 1] == "/w/src/numpy-2.5.5/pytest.ini"
    assert "--rootdir=/w/venv/lib/python3.13t/site-packages" in opts
    assert "--confcutdir=/w/venv/lib/python3.13t/site-packages" in opts


def test_the_pip_cache_is_one_per_build_environment():
    """A wheel pip built without libyaml's headers must not come back in an image that has them
    (pyyaml 6.0.4 on 3.13.15t, 2026-12-06: "Using cached pyyaml-6.0.4-cp313-cp313t…whl", no
    yaml.CLoader): on docker the cache is keyed by the image's tag (interpreter build + its build
    dependencies), elsewhere by the interpreter build."""
    from pathlib import Path

    from harness.backends.base import Workspace
    from harness.job.job import pip_cache_dir

    def ws(image: str) -> Workspace:
        return Workspace(
            host_root=Path("/x"),
            root="/work",
            python="/opt/python/bin/python3.13t",
            pip_cache="/cache/pip",
            image=image,
        )

    old = pip_cache_dir(
        ws("ft-harness/interp:cpython-3.13.15-ft-0dc8cebd3d78-c14601e7"), "cpython-3.13.15-ft-0dc8cebd3d78"
    )
    new = pip_cache_dir(
        ws("ft-harness/interp:cpython-3.13.15-ft-0dc8cebd3d78-9708ac6f"), "cpython-3.13.15-ft-0dc8cebd3d78"
    )
    assert old == "/cache/pip/cpython-3.13.15-ft-0dc8cebd3d78-c14601e7" and new != old
    assert pip_cache_dir(ws(""), "cpython-3.13.5-ft-aa8650c37ad2") == "/cache/pip/cpython-3.13.5-ft-aa8650c37ad2"
