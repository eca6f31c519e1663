"""How a package's suite is run: the pytest options and the command (pytest directly, or through
tox) that ``harness.job.job`` runs in every test phase. What it runs with (tests path, config,
pinned tools) is the suite setup's (harness.testsetup.suitesetup).
"""

from __future__ import annotations

from ..backends.base import Workspace
from ..config.plan import Job
from ..core.model import TestCommand
from ..testsetup.suitesetup import TOOLS
from .watchdog import PASS_ENV as WATCHDOG_PASS_ENV

TOX = ("tox==4.67.15",)


def pytest_options(job: Job, *, rootdir: str, config: str = "") -> tuple[str, ...]:
    """pytest's options for every test phase; rootdir and conftest search pinned to the source
    (or to the installed copy: harness.testsetup.where.tests_in_package), and the configuration always named: the
    package's own ``config`` file, else an empty one. pytest walks up from its arguments to the
    first configuration it can read; left to it, a config it cannot read (pytest 9's
    ``[tool.pytest]`` under pytest 8) or none at all sends it out of the package to whatever lies
    above ``--out`` (a pyproject.toml with ``--strict-markers``). parse.setup checks the
    ``configfile:`` line of every run against what was named."""
    cfg = ("-c", config or "/dev/null")
    opts = [
        f"--timeout={job.settings.test_timeout}",
        "-rfE",
        "-v",
        f"--rootdir={rootdir}",
        f"--confcutdir={rootdir}",
        *cfg,
    ]
    exprs = []
    for s in job.package.skip:
        if "::" in s.test or s.test.endswith(".py"):
            opts.append(f"--deselect={s.test}")
        else:
            exprs.append(f"not ({s.test})")
    if exprs:
        opts += ["-k", " and ".join(exprs)]
    return (*opts, *job.package.pytest_args)


def tox_overrides(job: Job, ws: Workspace, pins: tuple[str, ...] = TOOLS) -> list[str]:
    env = job.package.tox_env
    return [
        "-x",
        f"testenv:{env}.basepython={ws.python}",
        "-x",
        f"testenv:{env}.deps+={chr(10).join(pins)}",
        "-x",
        f"testenv:{env}.pass_env+={','.join(WATCHDOG_PASS_ENV)}",
    ]


def command(
    job: Job, ws: Workspace, vpy: str, tests: str, *, src: str, config: str = "", pins: tuple[str, ...] = TOOLS
) -> TestCommand:
    """pytest directly, or tox with the pytest arguments as posargs (its env must pass {posargs})."""
    if job.package.runner == "tox":  # the tox env's command runs pytest
        head: tuple[str, ...] = (
            vpy,
            "-m",
            "tox",
            "-e",
            job.package.tox_env,
            "--skip-pkg-install",
            *tox_overrides(job, ws, pins),
            "--",
        )
    else:
        head = (vpy, "-P", "-m", "pytest", "-p", "no:cacheprovider")
    return TestCommand(
        head=head, options=pytest_options(job, rootdir=src, config=config), paths=(tests,) if tests else ()
    )
