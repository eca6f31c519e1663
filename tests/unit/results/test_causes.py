"""Root causes across packages (harness.results.causes, report.json ``causes``), on captured output.

cffi 2.1.1 refuses free-threaded 3.13 in its setup (tests/data/report/docker: a real run's
result).  Captured on the free-threaded 3.13.5 build (tests/data/report/causes/README.md):
cryptography 50.0.2's build needs cffi (tests/data/real/cryptography-50.0.2/fetch.log), pyOpenSSL
needs cryptography, and urllib3's test dependency trustme needs cryptography (its test-deps step,
``harness.job.stages._deps_sh``'s output, and its record of trustme not installed, which
``harness.parse.testdeps`` reads onto the phase).  Each job's verdict is what ``harness.verdict.decide`` gives
for those phases (urllib3's stop at its test-deps step, its runs left out).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema

from harness.core.evidence import not_installed
from harness.core.jobspec import Settings
from harness.core.model import JobResult, Phase
from harness.parse import tail
from harness.parse.buildenv import note
from harness.render import markdown
from harness.results import aggregate
from harness.results.causes import Cause, build_causes
from harness.results.load import load_results
from harness.results.report import CompatReport
from harness.verdict import decide
from tests.data.report.shared import DATA, full_report

REAL = DATA.parents[0] / "real"
SCHEMA = json.loads((DATA.parents[2] / "harness" / "schema" / "report.schema.json").read_text())


def _cffi() -> JobResult:
    results, problems = load_results([DATA / "docker"])
    assert problems == []
    return next(r for r in results if r.job_id == "cpython3.13t--cffi")


def _job(base: JobResult, package: str, version: str, phases: tuple[Phase, ...]) -> JobResult:
    """A job on cffi's interpreter, decided by the harness's own rules."""
    d = decide(phases, settings=Settings())
    return dataclasses.replace(
        base,
        job_id=f"cpython3.13t--{package}",
        package=package,
        version=version,
        requested=f"=={version}",
        phases=phases,
        verdict=d.verdict,
        qualifier=d.qualifier,
        findings=d.findings,
    )


def _install(name: str, log: Path) -> Phase:
    return Phase(name=name, kind="install", command=("pip", "install"), exit_code=1, excerpt=tail(log.read_text()))


def captured() -> list[JobResult]:
    cffi = _cffi()
    ok = Phase(name="install", kind="install", command=("pip", "install"), exit_code=0)
    deps = Phase(
        name="test-deps",
        kind="setup",
        command=("sh", "-c", "..."),
        exit_code=1,
        excerpt=tail((DATA / "causes" / "urllib3-test-deps.log").read_text()),
        setup=not_installed(["trustme"]),
    )
    return [
        cffi,
        _job(cffi, "cryptography", "50.0.2", (_install("fetch", REAL / "cryptography-50.0.2" / "fetch.log"),)),
        _job(cffi, "pyopenssl", "25.3.0", (_install("install", DATA / "causes" / "pyopenssl-install.log"),)),
        _job(cffi, "urllib3", "2.8.0", (ok, deps)),
    ]


def test_two_packages_blocked_by_a_third_that_refuses_the_interpreter_are_one_group():
    results = captured()
    assert [r.verdict for r in results[:3]] == ["build-failure"] * 3
    causes = build_causes(results)
    assert len(causes) == 1
    (c,) = causes
    assert (c.kind, c.root, c.root_version) == ("dependency", "cffi", "2.1.1")
    assert c.packages == ["cffi", "cryptography", "pyopenssl", "urllib3"] and c.count == 4
    assert c.text == (
        "cffi 2.1.1 does not install on free-threaded 3.13: RuntimeError: CFFI does "
        "not support the free-threaded build of CPython 3.13."
    )
    via = {m.package: m.via for m in c.members}
    assert via == {"cffi": "", "cryptography": "", "pyopenssl": "", "urllib3": "trustme"}


def test_a_package_whose_own_build_fails_is_in_no_group_unless_it_is_the_root_of_others():
    cffi = _cffi()
    assert build_causes([cffi]) == ()
    # cryptography with cffi's own failed job: cffi is its root (cffi in the group too)
    (c,) = build_causes(captured()[:2])
    assert c.root == "cffi" and c.packages == ["cffi", "cryptography"]
    # a verdict about the package's tests is in none
    assert all(
        not any(m.package in ("fx-race", "fx-crash", "msgpack") for m in c.members) for c in full_report().causes
    )


def test_a_root_is_named_only_when_its_own_job_in_the_report_failed():
    """#46: the root is read from the package's build log (pip's last ``Collecting NAME``), text
    the package's own build can print.  cryptography alone (cffi no job of the report): its
    verdict is its own, in no group; cffi's job in the report, failed: cffi is its root."""
    crypto = captured()[1]
    assert build_causes([crypto]) == ()
    rep = aggregate.build_report([crypto], meta={})
    (p,) = rep.packages
    assert (p.verdict, p.answer, p.cause) == ("build-failure", "ft-problem", "refuses 3.13t; supports 3.14t+")
    assert "## Blocked by" not in markdown.render(rep)
    (c,) = build_causes([captured()[0], crypto])
    assert (c.root, c.packages) == ("cffi", ["cffi", "cryptography"])


def _forged(root: str) -> JobResult:
    """pyOpenSSL's captured install (its cryptography build fails on cffi), with the line a build
    script prints just before the error: ``Collecting <root>``."""
    text = (DATA / "causes" / "pyopenssl-install.log").read_text()
    at = text.index("            RuntimeError: CFFI does not support")
    phase = Phase(
        name="install",
        kind="install",
        command=("pip", "install"),
        exit_code=1,
        excerpt=tail(text[:at] + f"            Collecting {root}\n" + text[at:]),
    )
    return _job(_cffi(), "pyopenssl", "25.3.0", (phase,))


def test_log_text_cannot_make_blocked_by_name_a_project_as_the_root():
    """A build that prints ``Collecting tomli`` (a job of the report, which installed: no-tests)
    or ``Collecting numpy`` (no job of it) before its error names neither as the root; the real
    cffi root still holds when its job failed."""
    tomli = next(r for r in load_results([DATA / "docker"])[0] if r.package == "tomli")
    assert tomli.verdict == "no-tests"  # on 3.13, as cffi's job: the same X.Y
    assert {tomli.interpreter.version[:5], _cffi().interpreter.version[:5]} == {"3.13."}
    for root in ("tomli", "numpy"):
        forged = _forged(root)
        assert forged.verdict == "build-failure"
        assert build_causes([tomli, forged, captured()[3]]) == (), root
        md = markdown.render(aggregate.build_report([tomli, forged], meta={}))
        assert "## Blocked by" not in md and f"{root} does not install" not in md
    (c,) = build_causes([tomli, _forged("cffi"), *captured()[:2]])
    assert (c.root, c.packages) == ("cffi", ["pyopenssl", "cffi", "cryptography"])


def test_a_gil_module_is_a_root_only_when_its_own_job_re_enabled_the_gil():
    """aiohttp 3.14.5's probe (captured, tests/data/parse): Brotli's ``_brotli`` re-enabled the GIL.
    Two packages naming ``_brotli`` are grouped under it only with a brotli job of the report
    that re-enabled the GIL itself; a GIL warning is text a package's import can print."""
    from tests.unit.verdict.test_verdict import load

    aiohttp = _job(_cffi(), "aiohttp", "3.14.5", tuple(load("probe-gil-dependency")))
    assert (aiohttp.verdict, aiohttp.findings[0].module) == ("gil-reenabled", "_brotli")
    httpx = dataclasses.replace(aiohttp, job_id="cpython3.13t--httpx", package="httpx")
    assert build_causes([aiohttp, httpx]) == ()
    brotli = dataclasses.replace(aiohttp, job_id="cpython3.13t--brotli", package="brotli")
    (c,) = build_causes([aiohttp, httpx, brotli])
    assert (c.kind, c.root, c.packages) == ("gil-dependency", "_brotli", ["aiohttp", "httpx"])
    compatible = dataclasses.replace(brotli, verdict="compatible", findings=())
    assert build_causes([aiohttp, httpx, compatible]) == ()


def test_causes_in_report_json_validate_and_read_back():
    rep = aggregate.build_report(captured(), meta={})
    doc = json.loads(json.dumps(rep.to_dict()))
    jsonschema.validate(doc, SCHEMA)
    assert doc["causes"][0]["root"] == "cffi" and doc["causes"][0]["count"] == 4
    back = CompatReport.from_dict(doc)
    assert back.causes == rep.causes and isinstance(back.causes[0], Cause)
    # a report of schema 4 (no causes) still reads back
    old = {k: v for k, v in doc.items() if k != "causes"} | {"schema": 4}
    assert CompatReport.from_dict(old).causes == ()


def test_report_md_has_a_blocked_by_table():
    md = markdown.render(aggregate.build_report(captured(), meta={}))
    assert "## Blocked by" in md
    row = next(line for line in md.splitlines() if line.startswith("| cffi 2.1.1 does not install"))
    assert "| cffi 2.1.1 |" in row and "urllib3 (via trustme)" in row and row.endswith("| 4 |")


def test_an_unreachable_crates_io_is_a_cause_of_the_build_environment():
    """jiter 0.19.0's build could not reach crates.io (captured, tests/data/real): not about
    jiter, so in a group even alone, with no package at its root, naming the crate registry."""
    jiter = _job(_cffi(), "jiter", "0.19.0", (_install("install", REAL / "jiter-0.19.0" / "install.log"),))
    assert jiter.verdict == "infra-error"
    assert jiter.findings[0].evidence == "build-env"
    assert "the crate registry (crates.io)" in jiter.findings[0].message
    (c,) = build_causes([jiter, *captured()[:2]])[1:]
    assert (c.kind, c.root, c.packages) == ("build-environment", "", ["jiter"])
    assert c.text == "the crate registry (crates.io): not reachable from the build"
    assert "index.crates.io" in c.detail


BUILDENV = DATA.parents[0] / "buildenv"


def _env_install(log: Path) -> Phase:
    """The install phase as harness.parse leaves it: the log's tail, and the line it cut that
    shows what the build lacked (rpds-py's "Rust not found", 100 lines above its traceback)."""
    text = log.read_text()
    return Phase(
        name="install",
        kind="install",
        command=("pip", "install"),
        exit_code=1,
        excerpt="\n".join([tail(text), note(text, tail(text))]).strip(),
    )


def _env_jobs() -> list[JobResult]:
    """Jobs whose install failed for want of a piece of the machine (tests/data/buildenv)."""
    base = _cffi()
    return [
        _job(base, name.split("-no")[0].split("__")[0], "1.0", (_env_install(BUILDENV / f"{name}.log"),))
        for name in (
            "bcrypt",
            "rpds-py-nocargo",
            "ft_rustext",
            "scipy",
            "ft_fortran",
            "pillow__13.0.0",
            "rpds-py-nocrates",
        )
    ]


def test_builds_that_lacked_the_same_piece_of_the_machine_are_one_group():
    jobs = _env_jobs()
    assert {r.verdict for r in jobs} == {"infra-error"}  # never build-failure
    assert {f.evidence for r in jobs for f in r.findings} == {"build-env"}
    causes = build_causes(jobs)
    by_text = {c.text: c for c in causes}
    rust = by_text["Rust toolchain (Debian: rustc cargo)"]
    assert (rust.kind, rust.count, rust.packages) == ("build-environment", 3, ["bcrypt", "rpds-py", "ft_rustext"])
    fortran = by_text["Fortran compiler (Debian: gfortran)"]
    assert fortran.packages == ["scipy", "ft_fortran"]
    assert by_text["libjpeg (Debian: libjpeg-dev)"].packages == ["pillow"]
    assert by_text["the crate registry (crates.io): not reachable from the build"].packages == ["rpds-py"]
    assert [c.count for c in causes] == [3, 2, 1, 1]


def test_blocked_by_says_rust_toolchain_and_its_count():
    rep = aggregate.build_report(_env_jobs(), meta={})
    doc = json.loads(json.dumps(rep.to_dict()))
    jsonschema.validate(doc, SCHEMA)
    md = markdown.render(rep)
    row = next(line for line in md.splitlines() if line.startswith("| Rust toolchain (Debian: rustc cargo) |"))
    assert row == r"| Rust toolchain (Debian: rustc cargo) | — | bcrypt, ft\_rustext, rpds-py | 3 |"


def test_a_test_dependency_that_lacked_the_machine_groups_with_the_packages_that_did():
    """A test dependency whose build needed cargo: the suite's job joins the Rust group, via it."""
    base = _cffi()
    ok = Phase(name="install", kind="install", command=("pip", "install"), exit_code=0)
    deps = Phase(
        name="test-deps",
        kind="setup",
        command=("sh", "-c", "..."),
        exit_code=1,
        excerpt=tail((BUILDENV / "bcrypt.log").read_text()),
        setup=not_installed(["bcrypt"]),
    )
    suite = dataclasses.replace(
        base, job_id="cpython3.13t--passlib", package="passlib", verdict="infra-error", phases=(ok, deps), findings=()
    )
    rust = next(c for c in build_causes([suite, *_env_jobs()]) if c.text.startswith("Rust toolchain"))
    assert rust.count == 4 and {m.package: m.via for m in rust.members}["passlib"] == "bcrypt"


def test_the_site_shows_what_blocked_each_package(tmp_path):
    from harness import render

    render.write_all(aggregate.build_report(captured(), meta={}), tmp_path)
    index = (tmp_path / "site" / "index.html").read_text()
    blocked = index.split('<section class="card causes" id="blocked">')[1].split("</section>")[0]
    assert "<strong>cffi</strong> 2.1.1" in blocked
    assert '<a href="pkg/cpython3.13t--urllib3.html">urllib3</a> <span class="muted">(via trustme)</span>' in blocked
    assert index.count(">blocked by cffi</a>") == 3  # cryptography, pyopenssl, urllib3; not cffi
    page = (tmp_path / "site" / "pkg" / "cpython3.13t--cryptography.html").read_text()
    assert "(root: <strong>cffi</strong> 2.1.1). It decided 4 packages" in page


def test_a_build_failing_after_its_dependencies_were_collected_is_about_itself():
    """ft_nobuild's own C extension fails to compile after pip collected pytest's dependencies
    (pluggy last; captured, tests/data/fixtures): pip was building ft_nobuild's wheel, so the
    cause is the package itself, in no group."""
    log = DATA.parents[0] / "fixtures" / "ft_nobuild" / "install.log"
    nobuild = _job(_cffi(), "ft_nobuild", "1.0.0", (_install("install", log),))
    assert nobuild.verdict == "build-failure"
    assert "Collecting pluggy<2,>=1.6 (from pytest)" in nobuild.phases[0].excerpt  # before the error
    assert build_causes([nobuild]) == ()
    assert [c.root for c in build_causes([nobuild, *captured()])] == ["cffi"]


def test_the_harness_own_problems_group_by_their_words_not_the_phase_or_numbers():
    from harness.core.model import Finding

    base = _cffi()
    jobs = [
        dataclasses.replace(
            base,
            job_id=f"cpython3.13t--{name}",
            package=name,
            verdict="infra-error",
            phases=(),
            findings=(Finding(kind="infra-error", phase=ph, message=msg),),
        )
        for name, ph, msg in (
            ("a", "threads-gil0-r1", "threads-gil0-r1: exit code 4, and no test results could be read"),
            ("b", "plain-gil1", "plain-gil1: exit code 3, and no test results could be read"),
        )
    ]
    (c,) = build_causes(jobs)
    assert (c.kind, c.text, c.packages) == (
        "infrastructure",
        "exit code 4 or 3, and no test results could be read",  # every number said (#57)
        ["a", "b"],
    )
