"""What a failed build lacked of its machine (harness.parse.buildenv), on captured real builds
(tests/data/buildenv/README.md): each kind names what was missing and its Debian package."""

from pathlib import Path

import pytest

from harness.interpreters.images import PACKAGE_BUILD_DEPS
from harness.parse import tail
from harness.parse.buildenv import NOTE, missing_piece, note

DATA = Path(__file__).resolve().parents[2] / "data"
BUILDENV = DATA / "buildenv"


def log(name: str) -> str:
    return (BUILDENV / f"{name}.log").read_text()


@pytest.mark.parametrize(
    ("name", "kind", "what", "group", "debian", "line"),
    [
        (
            "python-ldap",
            "header",
            "lber.h",
            "OpenLDAP",
            "libldap-dev",
            "Modules/common.h:15:10: fatal error: lber.h: No such file or directory",
        ),
        (
            "python-snappy__0.6.1",
            "header",
            "snappy-c.h",
            "Snappy",
            "libsnappy-dev",
            "src/snappy/snappymodule.cc:33:10: fatal error: snappy-c.h: No such file or directory",
        ),
        (
            "linkfail",
            "library",
            "-lgeos_c",
            "GEOS",
            "libgeos-dev",
            "/usr/bin/ld: cannot find -lgeos_c: No such file or directory",
        ),
        ("pillow__13.0.0", "library", "jpeg", "libjpeg", "libjpeg-dev", "RequiredDependencyException: jpeg"),
        ("psycopg2", "library", "pg_config", "libpq", "libpq-dev", "Error: pg_config executable not found."),
        (
            "shapely",
            "library",
            "geos",
            "GEOS",
            "libgeos-dev",
            '../meson.build:98:13: ERROR: Dependency "geos" not found (tried pkg-config)',
        ),
        (
            "scipy",
            "toolchain",
            "gfortran",
            "Fortran compiler",
            "gfortran",
            "../meson.build:91:2: ERROR: Unknown compiler(s): [['gfortran'], ['flang-new'], ['flang'], "
            "['nvfortran'], ['pgfortran'], ['ifort'], ['ifx'], ['g95']]",
        ),
        (
            "ft_fortran",
            "toolchain",
            "gfortran",
            "Fortran compiler",
            "gfortran",
            "../meson.build:3:0: ERROR: Unknown compiler(s): [['gfortran'], ['flang-new'], ['flang'], "
            "['nvfortran'], ['pgfortran'], ['ifort'], ['ifx'], ['g95']]",
        ),
        ("bcrypt", "toolchain", "cargo", "Rust toolchain", "rustc cargo", "error: can't find Rust compiler"),
        (
            "rpds-py-nocargo",
            "toolchain",
            "cargo",
            "Rust toolchain",
            "rustc cargo",
            "Rust not found, installing into a temporary directory",
        ),
        (
            "ft_rustext",
            "toolchain",
            "cargo",
            "Rust toolchain",
            "rustc cargo",
            "error: [Errno 2] No such file or directory: 'cargo'",
        ),
    ],
)
def test_a_missing_header_library_or_toolchain_names_its_debian_package(name, kind, what, group, debian, line):
    found = missing_piece(log(name))
    assert found is not None
    assert (found.kind, found.what, found.group, found.debian, found.line) == (kind, what, group, debian, line)
    assert f"Debian package: {debian}" in found.message and "not a problem of the package" in found.message
    assert found.cause == f"{group} (Debian: {debian})"


def test_the_image_provides_every_package_the_images_own_gaps_were_named_by():
    """What the slices lacked (pillow's libjpeg, scipy's gfortran, shapely's GEOS, Rust) is in the
    image's list; python-ldap's and python-snappy's are named, but only snappy's is in it."""
    names = {
        p
        for n in ("pillow__13.0.0", "scipy", "shapely", "linkfail", "bcrypt", "psycopg2", "python-snappy__0.6.1")
        for p in missing_piece(log(n)).debian.split()
    }
    assert names <= set(PACKAGE_BUILD_DEPS)
    assert "libldap-dev" not in PACKAGE_BUILD_DEPS


def test_an_unreachable_crate_registry_names_crates_io():
    for found in (
        missing_piece(log("rpds-py-nocrates")),
        missing_piece((DATA / "real" / "jiter-0.19.0" / "install.log").read_text()),
    ):
        assert found is not None and (found.kind, found.what) == ("registry", "crates.io")
        assert found.group == "the crate registry (crates.io)"
        assert found.line.startswith("error: failed to get `")  # cargo's own error line
        assert "Could not resolve host: index.crates.io" in found.line
        assert found.cause == "the crate registry (crates.io): not reachable from the build"


def test_a_compiler_killed_for_memory_is_the_machine_not_the_package():
    """grpcio 1.85.4's C++ build in a container capped at 2 GiB (the store step of 2026-12-06):
    the OOM killer took cc1plus; the CompileError tracebacks after it are of that kill."""
    text = log("grpcio-oom")
    found = missing_piece(text)
    assert found is not None
    assert (found.kind, found.what, found.group) == ("memory", "memory_bytes", "memory")
    assert found.line == "g++: fatal error: Killed signal terminated program cc1plus"
    assert "limit memory_bytes" in found.message and "not a problem of the package" in found.message
    assert found.cause == "memory (the limit memory_bytes): a compiler was killed"
    excerpt = tail(text)  # the job's install phase keeps the tail, and the line as a note
    assert "Killed signal" not in excerpt
    assert note(text, excerpt) == NOTE + found.line
    assert missing_piece(f"{excerpt}\n{note(text, excerpt)}") == found  # what the verdict reads
    # a package's own fatal error is not memory
    assert missing_piece(text.replace("Killed signal terminated program", "no input files; program")) is None


def test_a_build_out_of_disk_space_is_the_machine_not_the_package():
    """grpcio 1.85.4 again, its temporary files in the 1 GiB tmpfs /tmp it had then."""
    text = log("grpcio-nospace")
    found = missing_piece(text)
    assert found is not None and (found.kind, found.group) == ("disk", "disk space")
    assert found.line == (
        "src/core/ext/transport/chttp2/transport/chttp2_transport.cc:3812:1: fatal error: error writing to "
        "/tmp/ccMJlb9M.s: No space left on device"
    )
    assert "not a problem of the package" in found.message
    assert found.cause == "disk space: the build's writes were refused"
    excerpt = tail(text)
    assert missing_piece(f"{excerpt}\n{note(text, excerpt)}") == found


def test_a_git_dependency_and_a_build_script_download_name_their_host():
    git = missing_piece(log("gitdep"))
    assert (git.kind, git.what, git.group) == ("registry", "github.com", "a git repository on github.com")
    assert git.line == (
        "failed to clone into: /root/.cargo/git/db/itoa-a8525d7cabd73149 (fetching https://github.com/dtolnay/itoa)"
    )
    down = missing_piece(log("download"))
    assert (down.kind, down.group) == ("registry", "a download during the build (a download host)")
    assert down.line == "urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>"


def test_a_package_failing_for_itself_is_not_the_machine():
    # ft_nobuild's `#error` under Py_GIL_DISABLED, cffi refusing 3.13t, a requirement not on the index
    assert missing_piece((DATA / "parse" / "install-build-failure" / "logs" / "install.log").read_text()) is None
    assert missing_piece((DATA / "real" / "cryptography-50.0.2" / "fetch.log").read_text()) is None
    assert missing_piece((DATA / "real" / "cffi-2.1.1" / "install.log").read_text()) is None
    assert missing_piece(log("lxml")) is None
    assert missing_piece((DATA / "parse" / "install-dns" / "logs" / "install.log").read_text()) is None


def test_a_missing_header_beside_an_error_of_the_package_is_the_package():
    """The header counts only when it is the log's only compiler error (a probe's missing header
    does not hide a free-threading #error after it); and only a known system library's header."""
    text = log("python-ldap")
    nobuild = (DATA / "parse" / "install-build-failure" / "logs" / "install.log").read_text()
    assert missing_piece(text + "\n" + nobuild) is None
    own = text.replace("lber.h", "ldapmodule_internal.h")
    assert missing_piece(own) is None


def test_the_line_a_long_log_cut_from_its_tail_is_kept_as_a_note():
    """maturin's "Rust not found" is 100 lines above the traceback that ends rpds-py's log: the
    excerpt (its tail) alone would say 'a download host'; the note keeps the cause."""
    text = log("rpds-py-nocargo")
    excerpt = tail(text)
    assert "Rust not found" not in excerpt
    assert missing_piece(excerpt).kind == "registry"
    line = note(text, excerpt)
    assert line == NOTE + "Rust not found, installing into a temporary directory"
    assert missing_piece(f"{excerpt}\n{line}").group == "Rust toolchain"
    assert note(log("bcrypt"), tail(log("bcrypt"))) == ""  # the tail shows it already


def test_parsing_a_failed_install_keeps_the_line_in_the_phase_excerpt(tmp_path):
    """harness.parse.parse_phase on the captured log, as a job's install phase: the excerpt ends
    with the note, so the verdict (which reads the result file alone) says Rust toolchain."""
    from harness.core.model import Phase
    from harness.parse import parse_phase
    from harness.verdict.buildenv import build_env_finding

    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "install.log").write_text(log("rpds-py-nocargo"))
    phase = parse_phase(
        Phase(name="install", kind="install", command=("pip", "install"), exit_code=1, log="logs/install.log"), tmp_path
    )
    assert phase.excerpt.endswith(NOTE + "Rust not found, installing into a temporary directory")
    finding = build_env_finding(phase)
    assert finding is not None and finding.kind == "infra-error" and finding.evidence == "build-env"
    assert finding.message.startswith("build environment: the toolchain cargo (Rust toolchain) is missing")
    assert "Debian package: rustc cargo" in finding.message
    ok = parse_phase(
        Phase(name="install", kind="install", command=("pip", "install"), exit_code=0, log="logs/install.log"), tmp_path
    )
    assert NOTE not in ok.excerpt and build_env_finding(ok) is None  # only a failed install is read


def test_test_dependencies_that_lacked_the_machine_say_what_in_their_setup_finding():
    from harness.core.evidence import not_installed
    from harness.core.model import Phase
    from harness.verdict.setupfind import deps_finding

    deps = Phase(
        name="test-deps",
        kind="setup",
        command=("sh", "-c", "..."),
        exit_code=1,
        excerpt=tail(log("bcrypt")),
        setup=not_installed(["bcrypt"]),
    )
    f = deps_finding(deps)
    assert f.kind == "setup-error"
    assert f.message.startswith(
        "setup: the inferred test dependencies did not install: not installed: bcrypt "
        "(the others are); the toolchain cargo (Rust toolchain) is missing"
    )
    assert "Debian package: rustc cargo" in f.message
