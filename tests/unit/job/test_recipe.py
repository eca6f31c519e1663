"""Laptop recipes (issue #16) from real runs' captured phases: nothing of the machine that ran them."""

from __future__ import annotations

import pytest

from harness.cli.reproduce import pick
from harness.core.errors import ConfigError
from harness.core.jobspec import Settings
from harness.core.model import InterpreterInfo
from harness.job.laptoprecipe import recipe
from harness.job.suite import TOOLS
from harness.results.report import CompatReport
from harness.verdict import decide
from tests.unit.verdict.test_verdict import load

INTERP = InterpreterInfo(name="cpython3.13.15t", version="3.13.15", key="k", python_name="python3.13t")


def _recipes(case: str, **kw) -> dict[str, str]:
    phases = load(case)
    d = decide(phases, settings=Settings())
    return {f"{f.kind} {f.test_id}": recipe(f, phases, interp=INTERP, tools=TOOLS, **kw) for f in d.findings}


def test_a_pypi_finding_names_the_release_the_tools_and_the_test_only():
    # six 1.17.0 on the docker backend: the job's cwd was /work/src/six-1.17.0, its venv /work/venv
    got = _recipes(
        "confirm-six-docker", package="six", version="1.17.0", local_path="", test_requires=["pytest-cov==7.0.0"]
    )
    text = got["thread-unsafe test_six.py::TestCustomizedMoves::test_custom_move_attribute"]
    lines = text.splitlines()
    assert lines[0].startswith("# needs a free-threaded CPython 3.13.15 on PATH as python3.13t")
    assert lines[1] == "python3.13t -m venv ft && . ft/bin/activate"
    assert lines[2] == (
        "python -m pip install six==1.17.0 pytest==8.4.2 pytest-run-parallel==0.10.0 "
        "pytest-timeout==2.4.0 pytest-cov==7.0.0"
    )  # no xdist: the run is alone
    assert lines[3] == "python -m pip download --no-deps --no-binary six -d sdist six==1.17.0"
    last = lines[-1]
    assert last.startswith("PYTHONFAULTHANDLER=1 PYTHON_GIL=0 python -P -m pytest -p no:cacheprovider ")
    assert "--rootdir=. --confcutdir=. --import-mode=importlib --parallel-threads=4 --iterations=5" in last
    assert last.endswith(" test_six.py::TestCustomizedMoves::test_custom_move_attribute")
    for t in got.values():
        assert "/work" not in t and "venv/bin" not in t and "--junitxml" not in t and " -n " not in t


def test_a_local_package_is_copied_from_its_path_and_installed_from_there():
    (text,) = _recipes(
        "confirm-realloc",
        package="ft_realloc",
        version="1.0.0",
        local_path="tests/fixtures/packages/ft_realloc",
        test_requires=[],
    ).values()
    assert "cp -R tests/fixtures/packages/ft_realloc src && cd src" in text
    assert "python -m pip install . pytest==8.4.2" in text and "pip download" not in text
    assert text.splitlines()[-1].endswith("--parallel-threads=4 --iterations=5 tests/test_fill.py::test_fill_large")
    assert "/tmp/conf" not in text  # where that job's workspace was


REPORT = CompatReport.from_dict(
    {
        "packages": [
            {
                "name": "six",
                "version": "1.17.0",
                "interpreter": {"name": "a"},
                "findings": [{"kind": "no-thread-coverage"}, {"kind": "ft-race", "recipe": "r", "reproduce": "x"}],
            },
            {"name": "six", "version": "1.17.0", "interpreter": {"name": "b"}, "findings": []},
            {"name": "idna", "version": "3.20", "interpreter": {"name": "a"}, "findings": [{"kind": "hang"}]},
        ]
    }
)


def test_pick_takes_the_first_finding_that_is_not_only_info():
    job, f = pick(REPORT, "six", interpreter="a", finding=None)
    assert f.kind == "ft-race" and job.interpreter.name == "a"
    assert pick(REPORT, "six", interpreter="a", finding=1)[1].kind == "no-thread-coverage"


@pytest.mark.parametrize(
    ("package", "interpreter", "finding", "says"),
    [
        ("six", None, None, "ran on several interpreters (a, b): pick one with --interpreter"),
        ("six", "b", None, "has no finding to reproduce"),
        ("idna", None, 3, "--finding 3: 'idna' has 1 finding(s), 1..1"),
        ("nope", None, None, "no job of 'nope' in the report; packages: idna, six"),
    ],
)
def test_pick_says_what_is_wrong_in_one_line(package, interpreter, finding, says):
    with pytest.raises(ConfigError) as e:
        pick(REPORT, package, interpreter=interpreter, finding=finding)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_the_config_named_by_c_is_the_sdists_own_file_not_the_workspaces():
    # issue #36: every test phase names its config with -c; the recipe names it in the sdist
    import dataclasses

    phases = load("confirm-six-docker")
    named = [
        dataclasses.replace(
            p,
            test_command=dataclasses.replace(
                p.test_command, options=(*p.test_command.options, "-c", f"{p.cwd}/setup.cfg")
            ),
        )
        if p.test_command
        else p
        for p in phases
    ]
    d = decide(named, settings=Settings())
    f = next(f for f in d.findings if f.kind == "thread-unsafe")
    text = recipe(
        f, named, interp=INTERP, tools=TOOLS, package="six", version="1.17.0", local_path="", test_requires=[]
    )
    assert " -c setup.cfg " in text and "/work" not in text
