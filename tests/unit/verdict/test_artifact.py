"""A compiled project's pure fallback wheel (#35): found from pip's report and the sdist.

The reports are pip's own ``--report`` of propcache 0.5.4's job on 3.13t (captured, trimmed to
the fields read: each item's name, version and download URL; tests/data/artifact): pip chose
``propcache-0.5.4-py3-none-any.whl`` (no cp313t wheel on the index), then the install-sdist
phase built it from the sdist. The sdist's file list is the real one (``tar tzf``).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from harness.config import wheels
from harness.core.evidence import Wheel
from harness.core.jobspec import Settings
from harness.core.model import InterpreterInfo, Phase
from harness.core.pipinstalled import PipReport
from harness.job.stages import rebuild_sh
from harness.parse import parse_phase
from harness.parse.pipreport import parse_pip_report
from harness.render.common import wheel_summary
from harness.testsetup import compiled
from harness.verdict import artifact, decide

DATA = Path(__file__).resolve().parents[2] / "data" / "artifact"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "packages"


def _report(name: str) -> PipReport:
    return parse_pip_report((DATA / f"propcache-0.5.4-{name}.json").read_bytes())


def _sdist(root: Path, listing: str) -> Path:
    for line in (DATA / listing).read_text().splitlines():
        (root / line).parent.mkdir(parents=True, exist_ok=True)
        (root / line).write_text("")
    return root


def test_propcache_fallback_wheel_from_pips_report():
    assert artifact.fallback_wheel(_report("install-report"), "propcache") == "propcache-0.5.4-py3-none-any.whl"
    assert artifact.fallback_wheel(_report("install-report"), "PropCache") == "propcache-0.5.4-py3-none-any.whl"
    # pytest's wheel is pure too, but it is not the package under test
    assert artifact.fallback_wheel(_report("install-report"), "attrs") == ""
    # the rebuild's report: the sdist, nothing to fall back from
    assert artifact.fallback_wheel(_report("install-sdist-report"), "propcache") == ""


@pytest.mark.parametrize("raw", [None, b"", b"not json", b"[]", b'{"install": 3}', b'{"install": [{"metadata": 1}]}'])
def test_a_report_of_any_shape_is_no_fallback(raw):
    assert artifact.fallback_wheel(parse_pip_report(raw), "propcache") == ""


@pytest.mark.parametrize(
    ("name", "pure"),
    [
        ("propcache-0.5.4-py3-none-any.whl", True),
        ("six-1.17.0-py2.py3-none-any.whl", True),
        ("propcache-0.5.4-cp313-cp313t-manylinux_2_17_x86_64.whl", False),
        ("cryptography-46.0.0-cp311-abi3-manylinux_2_28_x86_64.whl", False),
        ("propcache-0.5.4.tar.gz", False),
        ("", False),
    ],
)
def test_is_pure_wheel(name, pure):
    assert artifact.is_pure_wheel(name) is pure


def test_propcache_sdist_is_compiled(tmp_path):
    assert (
        compiled.compiled_evidence(_sdist(tmp_path, "propcache-0.5.4-sdist-files.txt"))
        == "src/propcache/_helpers_c.pyx"
    )


def test_compiled_evidence_on_fixtures_and_small_trees(tmp_path):
    assert compiled.compiled_evidence(FIXTURES / "ft_clean") == "pyproject.toml (declares extension modules)"
    assert compiled.compiled_evidence(FIXTURES / "ft_baseline") == ""
    (tmp_path / "a" / "tests").mkdir(parents=True)
    (tmp_path / "a" / "tests" / "helper.c").write_text("")  # a test's C file: not the package's
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "example.pyx").write_text("")
    assert compiled.compiled_evidence(tmp_path / "a") == ""
    assert compiled.compiled_evidence(tmp_path) == ""
    (tmp_path / "Cargo.toml").write_text("")
    assert compiled.compiled_evidence(tmp_path) == "Cargo.toml"


def test_problem_and_rebuild_command():
    p = artifact.problem("propcache-0.5.4-py3-none-any.whl", "src/propcache/_helpers_c.pyx", "build")
    assert (p.kind, p.name, p.where) == (
        "pure-fallback",
        "propcache-0.5.4-py3-none-any.whl",
        "src/propcache/_helpers_c.pyx",
    )
    assert p.excerpt == (
        "pip installed propcache-0.5.4-py3-none-any.whl, the pure-Python fallback wheel of a "
        "compiled project (src/propcache/_helpers_c.pyx): its compiled modules are not in it"
    )
    assert "install-sdist" in p.fix
    assert artifact.problem("w.whl", "x.pyx", "keep").fix.startswith("fallback_wheel: build")
    install = Phase(name="install", kind="install", exit_code=0, setup=(p,))
    assert artifact.fallback_of([install]) == p and not artifact.rebuilt([install])
    rebuild = Phase(name="install-sdist", kind="install", exit_code=0)
    assert artifact.rebuilt([install, rebuild])
    assert rebuild_sh("/w/venv/bin/python", "PropCache", "/w/sdist/propcache-0.5.4.tar.gz", "/w/r.json") == (
        "/w/venv/bin/python -m pip install --force-reinstall --no-deps --no-binary propcache --report /w/r.json "
        "/w/sdist/propcache-0.5.4.tar.gz"
    )
    # a setup problem of an install phase reads back from the result as it was written
    assert Phase.from_dict(json.loads(json.dumps(install.to_dict()))).setup == (p,)


def test_the_wheel_column_says_what_was_tested():
    files = ("propcache-0.5.4-py3-none-any.whl", "propcache-0.5.4.tar.gz")  # the fetch's page's
    interp = InterpreterInfo(name="cpython3.13t", version="3.13.5", key="k")
    fb = "propcache-0.5.4-py3-none-any.whl"
    built = wheels.wheel_info(
        "propcache",
        local=False,
        version="0.5.4",
        interp=interp,
        fallback=fb,
        index_files=files,
        install_report=_report("install-sdist-report"),
    )
    assert (built.installed, built.installed_file, built.fallback) == ("built from sdist", "propcache-0.5.4.tar.gz", fb)
    assert built.available == "pure"  # from the files the fetch read, no second request
    assert wheel_summary(built) == (
        "pure-Python wheel, built from sdist, not its pure fallback propcache-0.5.4-py3-none-any.whl"
    )
    kept = wheels.wheel_info(
        "propcache",
        local=False,
        version="0.5.4",
        interp=interp,
        fallback=fb,
        index_files=files,
        install_report=_report("install-report"),
    )
    assert (kept.installed, kept.installed_file) == ("wheel (pure)", fb)
    assert "kept: its compiled modules untested" in wheel_summary(kept)
    assert Wheel.from_dict(built.to_dict()) == built
    assert "fallback" not in Wheel(installed="wheel (pure)").to_dict()  # omitted when none


# ------------------------------------------------------------------ the verdict (verdict.fallback)

PARSE = Path(__file__).resolve().parents[2] / "data" / "parse" / "propcache-fallback-kept"


def _kept_phases() -> list[Phase]:
    """propcache 0.5.4, settings.fallback_wheel: keep, a real run on 3.13t (install, probe and
    the two plain runs kept): each plain run 35 passed, 22 errors on propcache._helpers_c."""
    return [
        parse_phase(Phase.from_dict(json.loads(p.read_text())), PARSE)
        for p in sorted((PARSE / "phases").glob("*.json"))
    ]


def test_the_kept_fallbacks_missing_extension_is_a_setup_fact_never_baseline_failure():
    phases = _kept_phases()
    assert [p.counts for p in phases if p.kind == "plain"] == [{"passed": 35, "error": 22, "skipped": 1}] * 2
    d = decide(phases, settings=Settings(fallback_wheel="keep"))
    assert d.verdict == "compatible"
    assert not [f for f in d.findings if f.kind == "baseline-failure"]
    (f,) = [f for f in d.findings if f.evidence == "setup"]
    assert (f.kind, f.count, f.phase) == ("setup-error", 22, "plain-gil0")
    assert f.message.startswith(
        "setup: 22 test(s) of its compiled modules could not run: the installed "
        "propcache-0.5.4-py3-none-any.whl is the pure-Python fallback of a compiled "
        "project: propcache._helpers_c is not in it; fix: fallback_wheel: build"
    )
    assert "tests/test_cached_property.py::test_cached_property[c-extension-module]" in f.excerpt


def test_without_the_fallback_record_the_same_runs_are_the_packages_failure():
    # what the job said before #35 (propcache 0.5.4 was published so): the install phase's
    # pure-fallback problem is what turns the missing extension into a setup fact
    phases = [dataclasses.replace(p, setup=()) if p.kind == "install" else p for p in _kept_phases()]
    d = decide(phases, settings=Settings())
    assert d.verdict == "baseline-failure"
    assert len([f for f in d.findings if f.kind == "baseline-failure"]) == 22


def test_after_the_rebuild_a_still_missing_extension_says_the_build_left_it_out():
    phases = _kept_phases()
    at = next(i for i, p in enumerate(phases) if p.kind == "install") + 1
    phases.insert(at, Phase(name="install-sdist", kind="install", exit_code=0))
    (f,) = [f for f in decide(phases, settings=Settings()).findings if f.evidence == "setup"]
    assert (
        "built from its sdist after pip chose propcache-0.5.4-py3-none-any.whl, and the build did not "
        "make propcache._helpers_c" in f.message
    )


def test_nothing_passed_makes_it_the_verdict():
    phases = _kept_phases()
    for i, p in enumerate(phases):
        if p.kind == "plain":
            phases[i] = dataclasses.replace(p, tests={t: tc for t, tc in p.tests.items() if "c-extension" in t})
    d = decide(phases, settings=Settings())
    # the suite mostly errored (verdict.ranrun), and the fallback finding says why
    assert d.verdict == "infra-error" and not [f for f in d.findings if f.kind == "baseline-failure"]
    assert [f.kind for f in d.findings if f.message.startswith("setup: 22 test(s) of its compiled")] == ["infra-error"]


def test_the_laptop_recipe_builds_the_package_from_its_sdist_too():
    from harness.core.model import Finding
    from harness.job.laptoprecipe import recipe

    phases = _kept_phases()
    f = Finding(kind="ft-race", test_id="tests/test_api.py::test_api", phase="plain-gil0")
    interp = InterpreterInfo(name="cpython3.13t", version="3.13.5", key="k")
    kw = {
        "package": "propcache",
        "version": "0.5.4",
        "local_path": "",
        "interp": interp,
        "tools": ("pytest==8.4.2",),
        "test_requires": (),
    }
    assert "python -m pip install propcache==0.5.4 pytest==8.4.2\n" in recipe(f, phases, **kw)
    built = [*phases, Phase(name="install-sdist", kind="install", exit_code=0)]
    assert "python -m pip install --no-binary propcache propcache==0.5.4 pytest==8.4.2\n" in recipe(f, built, **kw)


def test_a_compiled_project_is_one_with_compiled_cpython_wheels():
    # the release's files as the index listed them (PEP 691, 2026-12-05): propcache 0.5.4 has 130
    # cp3XX wheels (none cp313t) beside its pure one; multiprocess 0.70.19 has one py3X-none-any
    # wheel per version and compiled wheels for PyPy only, and its setup.py declares an extension
    # it never builds on Python 3: its pure wheel is no fallback, nothing is rebuilt
    files = json.loads((DATA / "index-files.json").read_text())
    got = compiled.with_cpython_wheel("src/propcache/_helpers_c.pyx", files["propcache-0.5.4"])
    assert got.startswith("src/propcache/_helpers_c.pyx; the index has propcache-0.5.4-cp3")
    assert compiled.with_cpython_wheel("setup.py (declares extension modules)", files["multiprocess-0.70.19"]) == ""
    assert any(f.startswith("multiprocess-0.70.19-pp310") for f in files["multiprocess-0.70.19"])
    assert compiled.with_cpython_wheel("x.c", ["a-1.0-cp313-abi3-manylinux_2_17_x86_64.whl"]).endswith(
        "abi3-manylinux_2_17_x86_64.whl"
    )
    assert compiled.with_cpython_wheel("x.c", ["a-1.0.tar.gz", "bad.whl", "a-1.0-py3-none-any.whl"]) == ""
