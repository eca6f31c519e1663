"""Install failures: the package's build vs our infrastructure (captured pip output)."""

from pathlib import Path

from harness.parse.install import classify_install

DATA = Path(__file__).resolve().parents[2] / "data" / "parse"


def log(case: str) -> str:
    return (DATA / case / "logs/install.log").read_text(errors="replace")


def test_compiler_error_is_a_build_failure_with_the_first_error_line():
    kind, evidence, excerpt = classify_install(log("install-build-failure"), timed_out=False)
    assert (kind, evidence) == ("build-failure", "compiler")
    assert excerpt.startswith("src/ext.c:3:2: error: #error")


def test_network_and_missing_versions_are_infra():
    kind, _, excerpt = classify_install(log("install-dns"), timed_out=False)
    assert kind == "infra-error" and "Name or service not known" in excerpt
    kind, _, excerpt = classify_install(log("install-no-match"), timed_out=False)
    assert kind == "infra-error" and "No matching distribution found for pytest==0.0.0.1" in excerpt


def test_timeout_and_backend_failure_are_infra():
    assert classify_install("Collecting x\n", timed_out=True)[0] == "infra-error"
    assert classify_install("", timed_out=False, infra="docker went away")[2] == "docker went away"


def test_cut_build_log_is_still_a_build_failure():
    kind, _, excerpt = classify_install(log("install-build-failure-cut"), timed_out=False)
    assert kind == "build-failure" and excerpt


def test_a_build_backend_exception_is_the_cause_not_pips_summary():
    # cryptography 50.0.2's sdist on 3.13.5t: `pip download` prepares its metadata, which
    # builds cffi, whose setup refuses 3.13t (captured 2026-12-03, tests/data/real/)
    from pathlib import Path

    log = Path(__file__).parents[2] / "data" / "real" / "cryptography-50.0.2" / "fetch.log"
    kind, evidence, line = classify_install(log.read_text(), timed_out=False)
    assert (kind, evidence) == ("build-failure", "log")
    assert line.startswith("RuntimeError: CFFI does not support the free-threaded build of CPython 3.13.")


def test_a_rust_build_that_cannot_reach_crates_io_is_infra_not_the_package():
    # jiter 0.19.0 on 3.13.5t, zero configuration (captured 2026-12-03): no cp313t wheel,
    # maturin starts, cargo cannot resolve index.crates.io (only PyPI is reachable here)
    from pathlib import Path

    log = Path(__file__).parents[2] / "data" / "real" / "jiter-0.19.0" / "install.log"
    kind, evidence, line = classify_install(log.read_text(), timed_out=False)
    assert (kind, evidence) == ("infra-error", "log")
    assert "Could not resolve host" in line and "index.crates.io" in line


def test_a_requirement_the_index_lacks_is_said_as_the_index_s():
    """lxml 6.2.0's build requirement Cython>=3.3.2 on an index whose newest is 3.3.1 (captured,
    tests/data/buildenv/lxml.log): the message names the requirement and what the index has; an
    index that listed nothing (not reached: install-dns) gets no such claim."""
    from harness.parse.install import index_lacks

    text = (DATA.parent / "buildenv" / "lxml.log").read_text()
    said = index_lacks(text)
    assert said is not None and "no release of Cython>=3.3.2 (a build requirement; its newest there is 3.3.1)" in said
    said = index_lacks(log("install-no-match"))
    assert said is not None and "pytest==0.0.0.1 (a requirement; its newest there is " in said
    assert index_lacks(log("install-dns")) is None
    assert index_lacks(log("install-build-failure")) is None
