"""Shared fixtures: the real free-threaded interpreter (built once, cached) and a CLI runner;
the test tiers.

A plain ``pytest`` runs the unit tier only: it builds no interpreter, starts no container and
needs no network. The other tiers are opt-in, one option each (``nox -s tests``, and so CI,
passes all four): ``--integration`` (a real free-threaded interpreter, built or cached; the
package index; tests/integration/ and the ``integration``/``network`` markers), ``--docker``
(marker ``docker``), ``--browser`` (marker ``browser``), ``--reliability``
(tests/reliability/, marker ``reliability``). A test belongs to the first of reliability,
browser, docker, integration that it matches, else to the unit tier; tests of a tier not asked
for are deselected, and one line says how many and with which option they run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "packages"
INTERP_YAML = 'interpreters: [{name: cpython3.13t, version: "3.13.5", source: "debian:trixie"}]\n'
# `nox -s tests` installs the wheel it built (not editable) and sets FT_HARNESS_INSTALLED=1: then
# harness, in the tests and in every CLI they start, must be that installed copy.
INSTALLED = os.environ.get("FT_HARNESS_INSTALLED") == "1"
# How tests start the CLI: -P keeps the cwd (often the checkout) off sys.path; SOURCE_PATH puts the
# checkout on it, except when testing the installed copy.
HARNESS = (sys.executable, "-P", "-m", "harness")
SOURCE_PATH: dict[str, str] = {} if INSTALLED else {"PYTHONPATH": str(ROOT)}


TIERS = ("integration", "docker", "browser", "reliability")  # the opt-in ones, besides "unit"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ft-harness tiers", "test tiers beyond the unit tier (opt-in)")
    for name, what in [
        ("integration", "a real free-threaded interpreter (built or cached), the package index"),
        ("docker", "a running docker engine"),
        ("browser", "headless Chromium"),
        ("reliability", "bad inputs and injected faults (tests/reliability)"),
    ]:
        group.addoption(f"--{name}", action="store_true", default=False, help=f"also run the {name} tier: {what}")
    group.addoption(
        "--reliability-table",
        metavar="PATH",
        default="",
        help="where the reliability tier writes its fault table (default: the session's "
        "tmp dir; nox -s reliability-doc: docs/reliability.md)",
    )


def tier(item: pytest.Item) -> str:
    """The tier of a test: its directory under tests/ and its markers."""
    marks = {m.name for m in item.iter_markers()}
    path = item.path.resolve()
    where = path.relative_to(ROOT / "tests").parts[0] if path.is_relative_to(ROOT / "tests") else ""
    if where == "reliability" or "reliability" in marks:
        return "reliability"
    for name in ("browser", "docker"):
        if name in marks:
            return name
    if where == "integration" or marks & {"integration", "network"}:
        return "integration"
    return "unit"


_LEFT_OUT: dict[str, int] = {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = {"unit", *(t for t in TIERS if config.getoption(t))}
    keep, drop = [], []
    for item in items:
        t = tier(item)
        (keep if t in wanted else drop).append(item)
        if t not in wanted:
            _LEFT_OUT[t] = _LEFT_OUT.get(t, 0) + 1
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    # the longest files first: `nox -s tests` runs `-n 2 --dist loadfile`, which hands each worker
    # one file at a time in this order, so the long ones start at once and the short ones fill in
    # (run last, the workflow's test ran alone for its last 6 minutes: CI went past 50)
    items.sort(key=lambda item: _LONGEST.index(item.path.stem) if item.path.stem in _LONGEST else len(_LONGEST))


# the slowest test files of a CI run (`--durations`), slowest first
_LONGEST = (
    "test_workflow_local",
    "test_verdicts",
    "test_issue_recipe",
    "test_tsan",
    "test_faults",
    "test_crash_verdict",
    "test_evidence",
    "test_watchdogproof_docker",
    "test_store_hog",
    "test_budget_plan",
    "test_probe_as_installed",
    "test_watchdogproof",
    "test_forty_jobs",
    "test_shards",
)


def left_out_line() -> str:
    """What the tier options left out, and how to run it; "" when nothing was."""
    if not _LEFT_OUT:
        return ""
    parts = [f"{n} {t}" for t, n in sorted(_LEFT_OUT.items(), key=lambda kv: TIERS.index(kv[0]))]
    flags = " ".join(f"--{t}" for t in TIERS if t in _LEFT_OUT)
    return f"tiers not selected, deselected: {', '.join(parts)} (run them with {flags}; nox -s tests passes all)"


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ANN001
    if left_out_line():
        terminalreporter.write_line(left_out_line())


def pytest_sessionstart(session: pytest.Session) -> None:
    import harness

    # Started in the background of a non-interactive shell (`nox -s tests &`), this process and
    # every harness a test starts inherit SIGINT ignored, and Ctrl-C's tests (a SIGINT sent to a
    # run) then see nothing happen: take SIGINT back as a terminal gives it. An ignored signal
    # survives exec; a handler does not (the children start with the default, as from a shell).
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)

    if INSTALLED and Path(harness.__file__).resolve().is_relative_to(ROOT / "harness"):
        raise pytest.UsageError(
            f"FT_HARNESS_INSTALLED=1 but harness was imported from the checkout "
            f"({harness.__file__}); run pytest with --import-mode=append"
        )


def pypi_on_local(args: tuple[str, ...], env: dict[str, str]) -> list[str]:
    """The packages a ``run --backend local`` would take from a public index: their builds and
    tests would run unisolated on the CI runner (#46), so the tests run those on docker and keep
    the local backend for our own fixtures (a ``path:``, or an index on this machine)."""
    backend = args[args.index("--backend") + 1] if "--backend" in args[:-1] else ""
    if not args or args[0] != "run" or backend != "local" or "--matrix" not in args[:-1]:
        return []
    index = urlsplit(env.get("FT_HARNESS_INDEX_URL") or "https://pypi.org/simple/")
    if index.scheme == "file" or index.hostname in ("127.0.0.1", "localhost", "::1"):
        return []
    import yaml

    doc = yaml.safe_load(Path(args[args.index("--matrix") + 1]).read_text()) or {}
    return [str(p.get("name") or p) for p in doc.get("packages") or () if not isinstance(p, dict) or not p.get("path")]


def cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 3600
) -> subprocess.CompletedProcess:
    """Run the real CLI in a subprocess, as a user would; never a package of the public index on
    the local backend (``pypi_on_local``)."""
    full = {**os.environ, **SOURCE_PATH, "CI": "true", **(env or {})}
    if unisolated := pypi_on_local(args, full):
        pytest.fail(
            f"{', '.join(unisolated)}: from the package index, run with --backend local: "
            "use --backend docker (the local backend is for our own fixtures)"
        )
    return subprocess.run([*HARNESS, *args], cwd=cwd or ROOT, capture_output=True, text=True, timeout=timeout, env=full)


@pytest.fixture(scope="session")
def dist(tmp_path_factory) -> dict[str, Path]:
    """The sdist and the wheel of this tree: the ones `nox -s tests` built, else `python -m build`."""
    if os.environ.get("FT_HARNESS_WHEEL"):
        return {
            "wheel": Path(os.environ["FT_HARNESS_WHEEL"]).resolve(),
            "sdist": Path(os.environ["FT_HARNESS_SDIST"]).resolve(),
        }
    pytest.importorskip("build", reason="building the wheel needs `build` (the test extra)")
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (wheel,), (sdist,) = out.glob("*.whl"), out.glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


@pytest.fixture(scope="session")
def ft_interpreter():
    """The real free-threaded CPython 3.13.5, built from Debian trixie's source (or the cache)."""
    from harness.config import matrix
    from harness.interpreters import interpreters

    spec = matrix.loads(INTERP_YAML + "packages: [{name: six}]\n")
    return interpreters.ensure_built(spec.interpreters[0], interpreters.cache_root())


def fixture_matrix(tmp: Path, names: list[str], settings: str = "") -> Path:
    lines = [INTERP_YAML.rstrip(), settings.rstrip(), "packages:"]
    for n in names:
        lines.append(f"  - {{name: {n}, path: {FIXTURES / n}}}")
    path = tmp / "matrix.yaml"
    path.write_text("\n".join(x for x in lines if x) + "\n")
    return path


def results(out: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((out / "results").glob("*.json"))}


def run_fixture(tmp: Path, name: str, settings: str) -> dict:
    """``ft-harness run`` (local backend) of one fixture package into ``tmp/out``: its result."""
    m = fixture_matrix(tmp, [name], settings)
    r = cli("run", "--matrix", str(m), "--out", str(tmp / "out"), "--backend", "local")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (d,) = results(tmp / "out").values()
    return d
