"""harness.core.limits (issue #29): each bound on what the host reads of a package's files, exceeded by a
small crafted input, ends in a note or result that names it, fast, with no exception out."""

from __future__ import annotations

import bz2
import io
import json
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from harness.core import limits
from harness.job import extract
from harness.testsetup import conftests
from harness.testsetup.infer import infer_test_setup
from harness.testsetup.sdistfiles import nesting, read_toml


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _named(notes: tuple[str, ...] | list[str], limit: str) -> list[str]:
    return [n for n in notes if f"limit {limit} ({limits.value(limit)}) exceeded" in n]


def test_every_limit_has_a_positive_default_and_an_override(monkeypatch: pytest.MonkeyPatch) -> None:
    assert all(lim.default > 0 and lim.what for lim in limits.LIMITS.values())
    monkeypatch.setenv("FT_HARNESS_LIMIT_NESTING", "7")
    assert limits.value("nesting") == 7
    monkeypatch.setenv("FT_HARNESS_LIMIT_NESTING", "seven")
    assert limits.value("nesting") == limits.LIMITS["nesting"].default


# ----------------------------------------------------------------------------- extraction


def _bomb(path: Path, size: int) -> Path:
    """A bz2 tar named .tar.gz (as the issue's 496-byte one) whose one member is ``size`` zeros."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        info = tarfile.TarInfo("bomb-1.0/zeros.bin")
        info.size = size
        tf.addfile(info, io.BytesIO(bytes(size)))
    path.write_bytes(bz2.compress(buf.getvalue()))
    return path


def test_extract_bytes_counted_while_extracting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FT_HARNESS_LIMIT_EXTRACT_BYTES", str(1 << 20))
    archive = _bomb(tmp_path / "bomb-1.0.tar.gz", 4 << 20)
    assert archive.stat().st_size < 1000
    with pytest.raises(limits.LimitExceeded) as e:
        extract.extract(archive, tmp_path / "src")
    assert e.value.limit == "extract_bytes" and "bomb-1.0.tar.gz unpacks to more than 1 MiB" in str(e.value)
    assert not (tmp_path / "src" / "bomb-1.0" / "zeros.bin").exists()  # stopped before writing it


def test_extract_members(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FT_HARNESS_LIMIT_EXTRACT_MEMBERS", "10")
    with tarfile.open(tmp_path / "many-1.0.tar.gz", "w:gz") as tf:
        for i in range(11):
            info = tarfile.TarInfo(f"many-1.0/f{i}.py")
            tf.addfile(info, io.BytesIO(b""))
    with pytest.raises(limits.LimitExceeded, match=r"limit extract_members \(10\) exceeded"):
        extract.extract(tmp_path / "many-1.0.tar.gz", tmp_path / "src")


def test_extract_bytes_of_a_zip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FT_HARNESS_LIMIT_EXTRACT_BYTES", str(1 << 20))
    with zipfile.ZipFile(tmp_path / "z-1.0.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("z-1.0/zeros.bin", bytes(2 << 20))
    with pytest.raises(limits.LimitExceeded, match="extract_bytes"):
        extract.extract(tmp_path / "z-1.0.zip", tmp_path / "src")


@pytest.mark.parametrize(
    "data", [b"", b"\x1f\x8b\x08\x00garbage", b"BZh91AY&SY" + bytes(40), b"PK\x03\x04" + bytes(60)]
)
def test_a_broken_archive_is_an_unsafe_error_not_a_bug(tmp_path: Path, data: bytes) -> None:
    archive = tmp_path / "broken-1.0.tar.gz"
    archive.write_bytes(data)
    with pytest.raises(extract.UNSAFE):
        extract.extract(archive, tmp_path / "src")


# ----------------------------------------------------------------------------- inference


def test_tox_expansions(tmp_path: Path) -> None:
    """Each section's value names the next one ten times, six deep: 10**6 expansions unbounded
    (the issue's 841-byte tox.ini took 84 s); stopped at the limit, at once."""
    refs = lambda sec: " ".join([f"{{[{sec}]x}}"] * 10)  # noqa: E731
    ini = "[testenv]\ndeps = " + refs("s0") + "\n"
    for i in range(6):
        ini += f"[s{i}]\nx = " + refs(f"s{i + 1}") + "\n"
    ini += "[s6]\nx = pytest\n"
    src = _tree(tmp_path, {"tox.ini": ini})
    assert len(ini) < 1000
    t0 = time.monotonic()
    setup = infer_test_setup(src, "pkg")
    assert time.monotonic() - t0 < 2
    assert _named(setup.sources, "tox_expansions")


def test_tox_value_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FT_HARNESS_LIMIT_TOX_VALUE_BYTES", "1000")
    src = _tree(tmp_path, {"tox.ini": "[testenv]\ndeps = {[a]x}\n[a]\nx = " + "y" * 2000 + "\n"})
    assert _named(infer_test_setup(src, "pkg").sources, "tox_value_bytes")


def test_requirements_depth(tmp_path: Path) -> None:
    files = {f"requirements/test{i}.txt": f"-r test{i + 1}.txt\npkg{i}\n" for i in range(1, 1200)}
    files["requirements/test.txt"] = "-r test1.txt\n"
    src = _tree(tmp_path, files)
    setup = infer_test_setup(src, "pkg")
    assert _named(setup.sources, "requirements_depth")
    assert "pkg1" in setup.requires and "pkg50" not in setup.requires


def test_requirements_files(tmp_path: Path) -> None:
    files = {f"requirements/r{i}.txt": f"pkg{i}\n" for i in range(150)}
    files["requirements/test.txt"] = "".join(f"-r r{i}.txt\n" for i in range(150))
    setup = infer_test_setup(_tree(tmp_path, files), "pkg")
    assert _named(setup.sources, "requirements_files")
    assert len(setup.requires) == limits.value("requirements_files") - 1  # test.txt is one of them


def test_requirements_link_loop_is_a_note(tmp_path: Path) -> None:
    src = _tree(tmp_path, {"requirements-test.txt": "-r loop.txt\nfoo\n"})
    (src / "loop.txt").symlink_to("loop.txt")
    setup = infer_test_setup(src, "pkg")
    assert setup.requires == ("foo",)


@pytest.mark.parametrize("deep", ["a = " + "[" * 5000 + "]" * 5000, "a = " + "{b = " * 5000 + "}" * 5000])
def test_nesting_of_a_toml(tmp_path: Path, deep: str) -> None:
    src = _tree(tmp_path, {"pyproject.toml": deep + "\n"})
    setup = infer_test_setup(src, "pkg")
    assert _named(setup.sources, "nesting")


def test_nesting_counts_brackets_outside_strings_and_comments() -> None:
    assert nesting('a = [[1], {b = "[[["}] # [[[[\n') == 2
    assert nesting("x = '[[[' # {{{\n[t]\n") == 1
    assert nesting('s = "a \\" [[ "') == 0


def test_a_toml_just_under_the_parsers_recursion_is_a_note_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FT_HARNESS_LIMIT_NESTING", "100000")  # the limit out of the way: tomllib's own
    notes: list[str] = []
    _tree(tmp_path, {"p.toml": "a = " + "[" * 3000 + "]" * 3000})
    assert read_toml(tmp_path / "p.toml", notes) == {}
    assert "nests too deep to parse" in notes[0]


def test_conftest_bytes(tmp_path: Path) -> None:
    big = "import trustme\n" + "x = 1\n" * (limits.value("conftest_bytes") // 6 + 1)
    src = _tree(tmp_path, {"conftest.py": big})
    notes: list[str] = []
    assert conftests.third_party_imports(src, "", notes) == {}
    assert _named(notes, "conftest_bytes")


@pytest.mark.parametrize(
    ("body", "raised"),
    [
        ("x = " + "(" * 300 + ")" * 300, ""),  # SyntaxError: too many nested parentheses
        ("".join(" " * i + "if x:\n" for i in range(120)) + " " * 120 + "pass\n", ""),  # IndentationError
        ("x = " + "-" * 200_000 + "1", "MemoryError"),  # the parser's stack
        ("x = " + "+".join(["1"] * 300_000), "RecursionError"),  # during ast construction
    ],
)
def test_a_conftest_ast_cannot_parse_is_no_exception(tmp_path: Path, body: str, raised: str) -> None:
    src = _tree(tmp_path, {"conftest.py": "import trustme\n" + body + "\n"})
    notes: list[str] = []
    assert conftests.third_party_imports(src, "", notes) == {}
    assert notes == ([f"conftest.py not scanned for imports: ast raised {raised}"] if raised else [])


# ----------------------------------------------------------------------------- wrong types


@pytest.mark.parametrize(
    "pyproject",
    [
        'dependency-groups = "pytest"',
        '[dependency-groups]\ntest = "pytest"',
        '[dependency-groups]\ntest = ["pytest", 3, {include-group = 4}, ["x"]]',
        "project = 1",
        '[project]\ndependencies = "requests"\noptional-dependencies = ["x"]',
        '[project.optional-dependencies]\ntest = "pytest"',
        "[project.optional-dependencies]\ntest = [1, 2]",
        'tool = "x"',
        "[tool]\npytest = 3",
        "[tool.pytest.ini_options]\naddopts = 3",
        "[tool.pytest.ini_options]\naddopts = {a = 1}",
        '[tool.pytest.ini_options]\naddopts = "--cov \'unclosed"',
        '[tool.pytest.ini_options]\naddopts = ["-p", 3]\nfilterwarnings = 5',
    ],
)
def test_a_wrong_type_is_a_note(tmp_path: Path, pyproject: str) -> None:
    src = _tree(tmp_path, {"pyproject.toml": pyproject + "\n", "tests/test_a.py": ""})
    setup = infer_test_setup(src, "pkg")
    assert setup.tests == "tests"
    assert all(len(r) > 1 for r in setup.requires)  # a string is never read as its characters


def test_unclosed_quote_in_addopts_is_neutralized_and_named(tmp_path: Path) -> None:
    src = _tree(
        tmp_path,
        {
            "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-ra \'unclosed"\n'
            '[dependency-groups]\ntest = "pytest"\n'
        },
    )
    setup = infer_test_setup(src, "pkg")
    assert setup.pytest_args == ("-o", "addopts=")
    assert any("cannot be read (No closing quotation)" in s for s in setup.sources)
    assert any("[dependency-groups] test: not a list (str)" in s for s in setup.sources)


# ----------------------------------------------------------------------------- per phase


def test_tests_per_phase_on_a_captured_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mixed suite's captured plain run (12 tests, some failing) with the limit at 5: the
    failures are kept, the passes dropped, the counts whole, the excerpt names the limit."""
    import json

    from harness.core.model import Phase
    from harness.parse import incomplete, parse_phase

    data = Path(__file__).resolve().parents[2] / "data" / "parse" / "mix"
    raw = json.loads((data / "phases" / "plain-gil0.json").read_text())
    whole = parse_phase(Phase.from_dict(raw), data)
    monkeypatch.setenv("FT_HARNESS_LIMIT_TESTS_PER_PHASE", "5")
    cut = parse_phase(Phase.from_dict(raw), data)
    assert len(whole.tests) == 12 and len(cut.tests) == 5
    assert cut.counts == whole.counts
    bad = {t for t, tc in whole.tests.items() if tc.outcome not in ("passed", "skipped")}
    assert bad and bad <= set(cut.tests)
    assert "[ft-harness] limit tests_per_phase (5) exceeded: 12 tests; 7 passed or skipped" in cut.excerpt
    assert incomplete(cut) == incomplete(whole)  # a cap is not a garbled log


def test_log_bytes_a_flooding_command_keeps_head_and_tail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real command (local backend) prints 3 MiB with the limit at 1 MiB: the log keeps its first
    and last 512 KiB and the line between names the limit; the pytest summary at the end survives."""
    import sys

    from harness.backends.base import Workspace
    from harness.backends.local import LocalBackend
    from harness.core import logcap
    from harness.core.wsfs import JobDir

    monkeypatch.setenv("FT_HARNESS_LIMIT_LOG_BYTES", str(1 << 20))
    (tmp_path / "logs").mkdir()
    log = tmp_path / "logs" / "plain-gil0.log"
    log.write_text("$ the command\n")
    ws = Workspace(host_root=tmp_path, root=str(tmp_path), python=sys.executable)
    code = (
        "import sys\nfor i in range(3 * 1024):\n    print(f'{i:07d} ' + 'p' * 1015)\nprint('=== 9 passed in 1.00s ===')"
    )
    ex = LocalBackend().run(
        ws, [sys.executable, "-c", code], env={}, cwd=str(tmp_path), timeout=60, log=log, network=False
    )
    assert ex.exit_code == 0 and log.stat().st_size > 3 << 20
    with JobDir(tmp_path) as fs:
        line = logcap.cap_log(fs.fd, "logs/plain-gil0.log")
    assert "limit log_bytes (1048576) exceeded" in line and "FT_HARNESS_LIMIT_LOG_BYTES" in line
    text = log.read_text()
    assert len(text) < (1 << 20) + 500
    assert text.startswith("$ the command\n0000000 ") and text.rstrip().endswith("=== 9 passed in 1.00s ===")
    assert text.count(line) == 1
    with JobDir(tmp_path) as fs:
        assert logcap.cap_log(fs.fd, "logs/plain-gil0.log") == ""  # within it now: left as it is


def test_log_bytes_of_a_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.core import logcap

    monkeypatch.setenv("FT_HARNESS_LIMIT_LOG_BYTES", "100")
    read = []

    def flood():
        for _ in range(10**6):
            read.append(1)
            yield b"y" * 30

    data = logcap.capped(flood())
    assert data.startswith(b"y" * 100) and b"limit log_bytes (100) exceeded" in data
    assert len(read) == 4  # reading stopped at the limit
    assert logcap.capped([b"ab", b"cd"]) == b"abcd"


# ----------------------------------------------------------------------------- a job's own files


@pytest.mark.parametrize(
    ("raw", "kept", "dropped"),
    [
        ({"version": "1.0", "modules": ["a._x"], "gil_enabled": True}, {"version", "modules", "gil_enabled"}, []),
        (
            {"version": ["1"], "modules": 5, "imported": [1], "gil_enabled": "yes"},
            set(),
            ["version", "modules", "imported", "gil_enabled"],
        ),
        ({"imported": 3, "modules": []}, {"modules"}, ["imported"]),  # decide raised TypeError on it
        ({"metadata": "x", "errors": {"a": 1}, "warnings": "w"}, set(), ["errors", "metadata", "warnings"]),
        ({"metadata": {"summary": 3, "project_urls": {"a": "https://x", "b": 2}}}, {"metadata"}, []),
    ],
)
def test_probe_json_fields_of_the_wrong_type_are_dropped(raw: dict, kept: set, dropped: list) -> None:
    from harness.core.evidence import Probe
    from harness.core.jobspec import Settings
    from harness.core.model import Phase
    from harness.parse.probe import parse_probe
    from harness.verdict import decide

    got = parse_probe(json.dumps(raw).encode())
    assert set(raw) == kept | set(dropped)
    for k in kept - {"metadata"}:
        assert getattr(got, k) == (tuple(raw[k]) if isinstance(raw[k], list) else raw[k])
    assert all(getattr(got, k) == getattr(Probe(), k) for k in dropped)
    assert sorted(got.problems) == sorted(f"probe.json: {k} has the wrong type, ignored" for k in dropped)
    if "metadata" in kept:
        assert got.metadata == {"project_urls": {"a": "https://x"}}
    probe = Phase(name="probe", kind="probe", exit_code=0, probe=got)
    assert decide([probe], settings=Settings()).verdict  # no exception


def test_probe_read_back_from_a_result_keeps_what_it_told() -> None:
    from harness.core.evidence import Probe
    from harness.parse.probe import parse_probe

    once = parse_probe(b'{"modules": 5, "version": "1"}')
    assert once.version == "1" and once.modules == ()
    assert Probe.from_dict(json.loads(json.dumps(once.to_dict()))) == once
    assert parse_probe(b"[1]").problems == ("probe.json is not an object",)
    assert parse_probe(b"{not json") == parse_probe(None) == Probe()


# ----------------------------------------------------------------------------- a whole job


def test_a_job_whose_sdist_is_a_bomb_gets_a_result_naming_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real job steps (harness.job.job.run_job) on the real scheduler and local backend: the host
    fetches a 500-byte bz2 bomb from an index on loopback, extraction stops at extract_bytes, and
    the job's result file names the limit; the next job in the run still gets its result."""
    import hashlib
    import http.server
    import json
    import sys
    import threading

    from harness.backends.base import Prepared
    from harness.backends.local import LocalBackend
    from harness.config import indexclient, matrix, plan
    from harness.core.model import InterpreterInfo, read_result
    from harness.job.runner import result_path, run_plan

    files = {"bomb-1.0.tar.gz": _bomb(tmp_path / "bomb-1.0.tar.gz", 4 << 20).read_bytes()}

    class Index(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            name = self.path.strip("/").split("/")[-1]
            if self.path.startswith("/simple/"):
                fn = f"{name}-1.0.tar.gz"
                body = json.dumps(
                    {
                        "files": [
                            {
                                "filename": fn,
                                "url": f"/files/{fn}",
                                "hashes": {"sha256": hashlib.sha256(files[fn]).hexdigest()},
                            }
                        ]
                    }
                    if fn in files
                    else {"files": []}
                ).encode()
            else:
                body = files[name]
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv(indexclient.INDEX_ENV, f"http://127.0.0.1:{server.server_port}/simple/")
    monkeypatch.setenv("FT_HARNESS_LIMIT_EXTRACT_BYTES", str(1 << 20))
    try:
        spec = matrix.loads(
            'interpreters: [{name: cp313t, version: "3.13.5", source: "debian:trixie"}]\n'
            "packages: [{name: bomb}, {name: nothing-here}]\n"
        )
        jobs = plan.make_plan(spec)
        info = InterpreterInfo(name="cp313t", version="3.13.5", key="k")
        out = tmp_path / "out"
        summary = run_plan(
            jobs,
            out=out,
            backend=LocalBackend(),
            prepared={"cp313t": Prepared(info=info, python=sys.executable, cache_hit=True)},
        )
    finally:
        server.shutdown()
    assert len(summary.ran) == 2
    bomb = read_result(result_path(out, jobs[0].job_id))
    assert bomb.verdict == "infra-error"
    (f,) = bomb.findings
    assert "limit extract_bytes (1048576) exceeded: bomb-1.0.tar.gz unpacks to more than 1 MiB" in f.message
    assert f.evidence == "setup" and "bug of ft-harness" not in f.message
    assert read_result(result_path(out, jobs[1].job_id)).verdict == "infra-error"  # no sdist: its own result
    assert sum(p.stat().st_size for p in (out / "work").rglob("*") if p.is_file()) < 2 << 20


@pytest.mark.parametrize(
    "report",
    [
        {"install": "x"},
        {"install": [1, "a", None]},
        {"install": [{"metadata": "m"}]},
        {"install": [{"metadata": {"name": 3}}]},
        {"install": [{"metadata": {"name": "pkg"}, "download_info": 5}]},
        {"install": [{"metadata": {"name": "pkg"}, "download_info": {"url": ["x"]}}]},
    ],
)
def test_an_install_report_of_the_wrong_shape_names_no_file(report: dict) -> None:
    from harness.config import wheels
    from harness.core.pipinstalled import PipReport

    assert wheels.installed_from(PipReport.from_dict(report), "pkg") == ""


@pytest.mark.parametrize("page", [{"files": 5}, {"files": "abc"}, {"files": [None, 3, {"filename": 7}]}, []])
def test_an_index_page_of_another_shape_resolves_to_no_release(page) -> None:
    from harness.config import select

    assert select.resolve_page("pkg", page).error


def test_one_page_that_breaks_the_resolver_is_that_project_s_error() -> None:
    from harness.config import select

    def fetch(name: str) -> dict:
        if name == "odd":
            raise RecursionError("maximum recursion depth exceeded while decoding a JSON array")
        return {"files": [{"filename": f"{name}-1.0.tar.gz"}]}

    got = select.resolve(["odd", "fine"], fetch=fetch)
    assert got["odd"].error.startswith("index: RecursionError") and got["fine"].version == "1.0"


def test_result_tests_keeps_every_outcome_that_tells_and_counts_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three phases of 10 tests, t3 failing in threads only, the limit at 12: t3 stays in every
    phase (its plain pass is what makes it a threads-only failure), the passes share the rest."""
    from harness.core.model import Phase, TestCase

    def phase(name: str, failing: set[str]) -> Phase:
        tests = {f"t{i}": TestCase(outcome="failed" if f"t{i}" in failing else "passed") for i in range(10)}
        return Phase(
            name=name,
            kind="plain",
            tests=tests,
            counts={"passed": 10 - len(failing), "failed": len(failing)},
            excerpt="=== 10 passed ===",
        )

    phases = (phase("plain-gil0", set()), phase("threads-gil0-r1", {"t3"}), phase("threads-gil0-r2", set()))
    monkeypatch.setenv("FT_HARNESS_LIMIT_RESULT_TESTS", "12")
    got = limits.cap_result_tests(phases)
    assert sum(len(p.tests) for p in got) == 3 + 3 * 3  # t3 thrice, then (12 - 3) // 3 passes each
    assert all("t3" in p.tests for p in got)
    assert got[1].tests["t3"].outcome == "failed" and got[0].tests["t3"].outcome == "passed"
    assert [p.counts for p in got] == [p.counts for p in phases]
    assert "limit result_tests (12) exceeded: 6 of this phase's 10 per-test outcomes" in got[0].excerpt
    monkeypatch.setenv("FT_HARNESS_LIMIT_RESULT_TESTS", "30")
    assert limits.cap_result_tests(phases) == phases
