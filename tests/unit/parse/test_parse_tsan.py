"""harness.parse.tsan on ThreadSanitizer output captured on this machine (tests/data/tsan)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.core.evidence import TsanFrame, TsanLocation, TsanReport
from harness.parse.tsan import dedup, excerpt, parse_frame, parse_tsan, parse_tsan_dir

DATA = Path(__file__).resolve().parents[2] / "data" / "tsan"


def _read(*parts: str) -> str:
    return DATA.joinpath(*parts).read_text()


# ------------------------------------------------------------------ plain C programs (gcc 12 libtsan)


def test_c_race_attributed_by_markers():
    [r] = parse_tsan(_read("c", "race_markers.log"))
    assert r.kind == "data race"
    assert r.complete
    assert r.test_id == "a"  # the marker before it, not "b" after
    assert r.location == TsanLocation(file="/tmp/h6/c/t.c", line=9, func="w")
    assert [s.access for s in r.stacks] == ["read", "write"]
    assert [s.previous for s in r.stacks] == [False, True]
    assert [s.thread for s in r.stacks] == ["T2", "T1"]
    assert [t.thread for t in r.threads] == ["T2", "T1"]
    assert r.location_text.startswith("Location is global 'counter'")
    assert r.pid is not None and r.pid > 0
    assert r.log == "" and r.count == 1 and r.test_ids == ()  # set by parse_tsan_dir and dedup


def test_c_use_after_free_and_lock_order():
    uaf, loi = parse_tsan(_read("c", "uaf_lockorder.log"))
    assert uaf.kind == "heap-use-after-free"
    assert uaf.location is not None and uaf.location.func == "late_reader"
    # free() is the sanitizer's interceptor: a runtime frame, not the package's
    prev = uaf.stacks[1].frames
    assert prev[0].func == "free" and prev[0].origin == "runtime"
    assert prev[1].func == "main" and prev[1].origin == "package"
    # "As if synchronized via sleep" is neither an access stack nor a thread
    assert any(o.title.startswith("As if synchronized via sleep") for o in uaf.other)
    assert loi.kind == "lock-order-inversion"
    assert loi.title == "lock-order-inversion (potential deadlock)"
    assert len(loi.stacks) == 2  # the two "acquired here while holding" stacks
    assert {s.frames[1].func for s in loi.stacks} == {"ab", "ba"}
    assert [s.access for s in loi.stacks] == ["", ""]
    assert loi.signature != uaf.signature


def test_c_deadly_signal():
    [r] = parse_tsan(_read("c", "segv.log"))
    assert r.deadly and r.kind == "SEGV"
    assert r.complete
    assert r.stacks[0].frames[0].func == "crash"
    assert r.stacks[0].title == r.title  # the signal's stack has no header of its own
    assert r.top_package_frame == "crash /tmp/h6/c/s.c:2"
    assert "0x" not in r.title.split("address")[0]


# ------------------------------------------------------------------ frames


@pytest.mark.parametrize(
    ("line", "func", "file", "lineno", "module", "origin"),
    [
        ("    #0 w /tmp/h6/c/t.c:9 (t+0x121f)", "w", "/tmp/h6/c/t.c", 9, "t", "package"),
        (
            "    #1 pthread_create ../../../../src/libsanitizer/tsan/tsan_interceptors_posix.cpp:1001"
            " (libtsan.so.2+0x5e686)",
            "pthread_create",
            "../../../../src/libsanitizer/tsan/tsan_interceptors_posix.cpp",
            1001,
            "libtsan.so.2",
            "runtime",
        ),
        (
            "    #2 start_thread nptl/pthread_create.c:442 (libc.so.6+0x891f4)",
            "start_thread",
            "nptl/pthread_create.c",
            442,
            "libc.so.6",
            "runtime",
        ),
        (
            "    #3 _PyEval_EvalFrameDefault Python/generated_cases.c.h:813:23 (python3.13t+0x2d3a1)",
            "_PyEval_EvalFrameDefault",
            "Python/generated_cases.c.h",
            813,
            "python3.13t",
            "interpreter",
        ),
        ("    #4 <null> <null> (libfoo.so+0x1234)", "", "", None, "libfoo.so", "package"),
        ("    #5 0x7f0000001234 (<unknown module>)", "", "", None, "<unknown module>", "unknown"),
    ],
)
def test_parse_frame(line, func, file, lineno, module, origin):
    fr = parse_frame(line)
    assert fr is not None
    assert fr == TsanFrame(
        n=int(line.split("#")[1].split()[0]), func=func, file=file, line=lineno, module=module, origin=origin
    )


def test_not_a_frame():
    assert parse_frame("  Thread T1 (tid=1, running) created by main thread at:") is None


# ------------------------------------------------------------------ robustness


def test_every_truncation_parses():
    """Cut the log at every line (and mid-line): never an exception, never a phantom report."""
    text = _read("c", "uaf_lockorder.log")
    full = parse_tsan(text)
    for cut in range(0, len(text), 11):
        got = parse_tsan(text[:cut])
        assert len(got) <= len(full)
        for r in got[:-1]:
            assert r.complete


def test_truncated_report_is_kept_incomplete():
    text = _read("c", "uaf_lockorder.log")
    cut = text.index("Mutex M0 acquired here")
    *done, last = parse_tsan(text[:cut])
    assert [r.kind for r in done] == ["heap-use-after-free"]
    assert last.kind == "lock-order-inversion" and not last.complete
    assert last.summary == "" and last.location is None


def test_garbage_and_empty():
    assert parse_tsan("") == []
    assert parse_tsan("\x00\xff random\n#0 not in a report\nSUMMARY: ThreadSanitizer: x\n") == []


def test_dedup_counts_and_collects_tests():
    r1 = parse_tsan(_read("c", "race_markers.log"))
    r2 = parse_tsan(_read("c", "race_markers.log").replace("test start a", "test start z"))
    [d] = dedup(r1 + r2 + r1)
    assert d.count == 3
    assert d.test_ids == ("a", "z")
    assert d.test_id == "a"
    # idempotent: deduping a deduped list keeps the counts
    assert dedup([d]) == [d]
    assert dedup([d, *r2])[0].count == 4


def test_excerpt_shows_both_stacks():
    [r] = parse_tsan(_read("c", "race_markers.log"))
    ex = excerpt(r)
    assert "Read of size 8" in ex and "Previous write of size 8" in ex
    assert "*#0 w /tmp/h6/c/t.c:9" in ex
    assert ex.endswith("in w")


def test_parse_dir(tmp_path):
    (tmp_path / "tsan.101").write_text(_read("c", "race_markers.log"))
    (tmp_path / "tsan.99").write_text(_read("c", "segv.log"))
    (tmp_path / "other.log").write_text(_read("c", "segv.log"))
    got = parse_tsan_dir(tmp_path)
    assert [(r.log, r.kind) for r in got] == [("tsan.99", "SEGV"), ("tsan.101", "data race")]
    assert parse_tsan_dir(tmp_path / "missing") == []


# ------------------------------------------------------------------ harness.job.tsanenv (env, suppressions, findings)

from harness.core.model import Phase  # noqa: E402
from harness.job import tsanenv as tsan  # noqa: E402
from harness.verdict.tsan import tsan_findings  # noqa: E402

CPYTHON_SUPP = DATA / "cpython-3.13.5-suppressions_free_threading.txt"


def _opts(env: dict[str, str]) -> dict[str, str]:
    import shlex

    return dict(w.split("=", 1) for w in shlex.split(env["TSAN_OPTIONS"]))


def test_tsan_env():
    env = tsan.tsan_env("/w/logs/tsan/threads-r1/", ["/w/tsan.supp"])
    o = _opts(env)
    assert o["log_path"] == "/w/logs/tsan/threads-r1/tsan"
    assert o["suppressions"] == "/w/tsan.supp"
    assert o["halt_on_error"] == "0" and o["exitcode"] == "0"
    assert o["second_deadlock_stack"] == "1"
    assert "suppressions" not in _opts(tsan.tsan_env("/w", []))


def test_tsan_env_quotes_separators_and_refuses_two_files():
    o = _opts(tsan.tsan_env("/a dir:with,seps", ["/s p/x.supp"]))
    assert o["log_path"] == "/a dir:with,seps/tsan"
    assert o["suppressions"] == "/s p/x.supp"
    with pytest.raises(ValueError, match="one suppressions file"):
        tsan.tsan_env("/w", ["/a", "/b"])


def test_install_env_keeps_pip_alive():
    env = tsan.install_env("/w/logs/tsan/install", ["/w/tsan.supp"])
    o = _opts(env)
    assert o["exitcode"] == "0" and o["log_path"] == "/w/logs/tsan/install/tsan"
    # no CFLAGS here: a bare CFLAGS=-fsanitize=thread replaced sysconfig's (-g among them)
    assert "CFLAGS" not in env and "CXXFLAGS" not in env


def test_build_flags_start_from_the_interpreters_own(tmp_path):
    """The shell prefix asks the interpreter for its sysconfig CFLAGS and adds -g and
    -fsanitize=thread, keeping a package's own CFLAGS last (run with this machine's sh)."""
    import subprocess
    import sys
    import sysconfig

    script = tsan.build_flags_sh(sys.executable)
    show = 'printf "%s\\n" "$CFLAGS" "$CXXFLAGS" "$LDFLAGS"'
    env = {"PATH": "/usr/bin:/bin", "CFLAGS": "-DPKG=1"}
    out = subprocess.run(
        ["sh", "-c", f"{script} && {show}"], env=env, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    own = sysconfig.get_config_var("CFLAGS") or ""
    assert out[0] == f"{own} -g -fsanitize=thread -DPKG=1"
    assert out[1] == f"{own} -g -fsanitize=thread"
    assert out[2] == "-fsanitize=thread"
    # an interpreter that cannot answer fails the step instead of compiling without flags
    bad = subprocess.run(
        ["sh", "-c", f"{tsan.build_flags_sh(str(tmp_path / 'nope'))} && echo ran"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert bad.returncode != 0 and "ran" not in bad.stdout


def _tarball(tmp_path: Path) -> Path:
    import tarfile

    tb = tmp_path / "Python-3.13.5.tar.xz"
    with tarfile.open(tb, "w:xz") as tf:
        tf.add(CPYTHON_SUPP, arcname="Python-3.13.5/Tools/tsan/suppressions_free_threading.txt")
        tf.add(CPYTHON_SUPP, arcname="Python-3.13.5/Tools/tsan/suppressions.txt")
    return tb


def test_write_suppressions_merges_cpython_and_package(tmp_path):
    extra = tmp_path / "pkg.supp"
    extra.write_text("race:my_package_known_race\n")
    out = tsan.write_suppressions(_tarball(tmp_path), str(extra), tmp_path / "job" / "tsan.supp")
    text = out.read_text()
    assert "race_top:assign_version_tag" in text and "race:set_allocator_unlocked" in text
    assert text.rstrip().endswith("race:my_package_known_race")
    assert text.index("assign_version_tag") < text.index("my_package_known_race")
    none = tsan.write_suppressions(_tarball(tmp_path), None, tmp_path / "b.supp").read_text()
    assert "my_package" not in none and "thread:pthread_create" in none


def test_write_suppressions_errors(tmp_path):
    from harness.core.errors import BuildError

    with pytest.raises(BuildError, match="tsan_suppressions"):
        tsan.write_suppressions(_tarball(tmp_path), str(tmp_path / "nope"), tmp_path / "x.supp")
    bad = tmp_path / "bad.tar.xz"
    bad.write_bytes(b"not a tarball")
    with pytest.raises(BuildError):
        tsan.write_suppressions(bad, None, tmp_path / "y.supp")


def _phase(rep: int, text: str, gil: int = 0) -> Phase:
    return Phase(name=f"tsan-gil{gil}-r{rep}", kind="tsan", gil=gil, rep=rep, tsan=tuple(dedup(parse_tsan(text))))


def test_findings_count_runs_not_reports():
    race = _read("c", "race_markers.log")
    phases = [
        _phase(1, race + race),
        _phase(2, ""),
        _phase(3, race),
        Phase(name="threads-gil0-r1", kind="threads", gil=0, rep=1),
    ]
    [f] = tsan_findings(phases)
    assert (f.kind, f.evidence, f.count, f.runs, f.modes) == ("ft-race", "tsan", 2, 3, (0,))
    assert f.test_id == "a"
    assert f.stack_top == "w /tmp/h6/c/t.c:9"
    assert f.phase == "tsan-gil0-r1"
    assert "Previous write" in f.excerpt
    assert "`w`" in f.message


def test_findings_kinds():
    phases = [_phase(1, _read("c", "uaf_lockorder.log") + _read("c", "segv.log"))]
    got = {f.message.split(" in ")[0]: f.kind for f in tsan_findings(phases)}
    assert got == {
        "ThreadSanitizer: heap-use-after-free": "ft-race",
        "ThreadSanitizer: lock-order-inversion": "hang",
        "ThreadSanitizer: SEGV": "ft-crash",
    }
    assert tsan_findings([]) == []


def test_pip_install_without_suppressions_is_interpreter_only():
    """`pip install` under the TSan build with no suppressions: CPython's own race,
    no package frame, so no finding -- and CPython's suppressions name it."""
    reports = parse_tsan(_read("py", "install_nosupp.log"))
    assert len(reports) == 2
    for r in reports:
        assert r.kind == "data race"
        assert r.location is not None
        assert (r.location.func, r.location.file) == ("set_allocator_unlocked", "Objects/obmalloc.c")
        assert not r.in_package and r.top_package_frame == "" and r.package_frames == ()
        assert {f.origin for f in r.stacks[0].frames} <= {"interpreter", "runtime"}
        assert r.interpreter_frames[0].module == "python"
    phase = Phase(name="tsan-gil0-r1", kind="tsan", gil=0, rep=1, tsan=tuple(dedup(reports)))
    assert tsan_findings([phase]) == []
    assert "race:set_allocator_unlocked" in CPYTHON_SUPP.read_text()


def test_pip_built_extension_without_line_info():
    """Captured from the harness's TSan run of ft_tsan_counter (gcc 12 libtsan): the package
    frame has no file:line, only the module and offset; the summary still names the function."""
    from harness.parse.tsan import dedup, parse_tsan_dir

    reports = dedup(parse_tsan_dir(Path(__file__).parents[2] / "data" / "tsan" / "py" / "counter_noline"))
    [r] = reports
    assert r.kind == "data race"
    assert r.location is not None
    assert r.location.func == "bump" and r.location.line is None
    assert r.location.file.endswith("_count.cpython-313t-x86_64-linux-gnu.so")
    assert r.top_package_frame.startswith("bump ")
    assert r.test_ids == ("tests/test_bump.py::test_bump_returns",)


def test_pip_built_extension_with_line_info():
    """Captured from test_tsan.py's run of ft_tsan_counter, built the job's way (the interpreter's
    CFLAGS + -g) and run with strip_path_prefix=<its source tree>: both racing accesses and the
    summary name the C file, relative to the package, and the line of `bumps++`."""
    [r] = dedup(parse_tsan_dir(DATA / "py" / "counter_lines"))
    where = TsanLocation(file="src/ft_tsan_counter/_count.c", line=17, func="bump")
    assert r.kind == "data race" and r.complete
    assert r.location == where
    assert r.top_package_frame == "bump src/ft_tsan_counter/_count.c:17"
    assert [(s.access, s.previous) for s in r.stacks] == [("read", False), ("write", True)]
    for st in r.stacks:
        top = st.frames[0]
        assert (top.func, top.file, top.line, top.origin) == ("bump", "src/ft_tsan_counter/_count.c", 17, "package")
        assert top.module == "_count.cpython-313t-x86_64-linux-gnu.so"
    assert r.test_ids == ("tests/test_bump.py::test_bump_returns",)
    ex = excerpt(r)
    assert ex.count("*#0 bump src/ft_tsan_counter/_count.c:17") == 2
    assert ex.index("Read of size 8") < ex.index("Previous write of size 8")
    assert ex.endswith("data race src/ft_tsan_counter/_count.c:17 in bump")
    # the same race, with or without line info, is one signature per build: the file names it
    [old] = dedup(parse_tsan_dir(DATA / "py" / "counter_noline"))
    assert old.location is not None and old.location.func == where.func
    phase = Phase(name="tsan-gil0-r1", kind="tsan", gil=0, rep=1, tsan=(r,))
    [f] = tsan_findings([phase])
    assert f.stack_top == "bump src/ft_tsan_counter/_count.c:17"
    assert "`bump`" in f.message


def test_sdist_built_by_pip_from_an_index_has_line_info_too():
    """Captured: ft_tsan_counter as an sdist installed by `pip install ft_tsan_counter==1.0.0`
    (what a job does for a PyPI package: pip builds it in /tmp/pip-install-*) with the job's
    compile flags and no strip_path_prefix: setuptools hands gcc the relative source path, so
    the frame already reads relative to the package."""
    [r] = dedup(parse_tsan_dir(DATA / "py" / "counter_sdist"))
    assert r.location == TsanLocation(file="src/ft_tsan_counter/_count.c", line=17, func="bump")
    assert [st.frames[0].line for st in r.stacks] == [17, 17]


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        ("/tmp/pip-install-3k9x_a1b/six_0c1d2e3f/src/six/_speedups.c", "src/six/_speedups.c"),
        ("/tmp/pip-req-build-q8w7e6r5/src/pkg/_core.c", "src/pkg/_core.c"),
        ("/work/src/pkg/src/pkg/_core.c", "/work/src/pkg/src/pkg/_core.c"),
        ("Objects/obmalloc.c", "Objects/obmalloc.c"),
    ],
)
def test_pip_build_dirs_are_dropped_from_paths(path, shown):
    """pip's temporary build trees (random names) are cut, so a file reads the same every run
    (a build system that hands the compiler absolute paths, as CMake does, puts them in DWARF;
    setuptools' relative ones need nothing, see the captured sdist log above)."""
    line = f"    #0 bump {path}:17 (_core.cpython-313t-x86_64-linux-gnu.so+0x119e)"
    fr = parse_frame(line)
    assert fr is not None and fr.file == shown


def test_a_packages_own_modules_dir_is_the_packages():
    """A package's Modules/x.c (python-ldap's layout) in its own extension is a package frame;
    CPython's Modules/ in a stdlib extension (lib-dynload) or the interpreter stays CPython's."""
    own = parse_frame("    #0 l_ldap_search Modules/LDAPObject.c:1210 (_ldap.cpython-313t-x86_64-linux-gnu.so+0x9a1c)")
    assert own is not None and own.origin == "package"
    std = parse_frame(
        "    #0 PyCFuncPtr_call Modules/_ctypes/_ctypes.c:4321 (_ctypes.cpython-313t-x86_64-linux-gnu.so+0x1f0e)"
    )
    assert std is not None and std.origin == "interpreter"
    core = parse_frame("    #14 pymain_run_file_obj Modules/main.c:410 (python+0x4389a4)")
    assert core is not None and core.origin == "interpreter"


# ------------------------------------------------------------------ on disk (harness.core.evidence.TsanReport)

CAPTURED = [
    *(("c", n) for n in ("race_markers.log", "uaf_lockorder.log", "segv.log")),
    ("py", "install_nosupp.log"),
    ("py", "counter_lines", "tsan.4131"),
    ("py", "counter_noline", "tsan.1"),
    ("py", "counter_sdist", "tsan.31816"),
]


@pytest.mark.parametrize("parts", CAPTURED, ids=lambda p: "/".join(p))
def test_reports_round_trip_through_json(parts, tmp_path):
    """Every captured report, as parsed and as deduped: to_dict -> JSON -> from_dict is the same
    value, and a phase that holds them reads back equal."""
    import json

    (tmp_path / "tsan.7").write_text(_read(*parts))
    parsed = parse_tsan_dir(tmp_path)
    assert parsed and all(r.log == "tsan.7" for r in parsed)
    for r in [*parsed, *dedup(parsed + parsed)]:
        back = TsanReport.from_dict(json.loads(json.dumps(r.to_dict())))
        assert back == r
        assert isinstance(back.stacks[0].frames[0], TsanFrame)
    phase = Phase(name="tsan-gil0-r1", kind="tsan", gil=0, rep=1, tsan=tuple(parsed))
    assert Phase.from_dict(json.loads(json.dumps(phase.to_dict()))) == phase


def test_report_dict_keys_are_the_old_ones():
    """A parsed report has neither count nor test_ids in its JSON (dedup's keys); a deduped one
    has both; a frame carries 'unrestored' only when TSan could not restore the stack."""
    text = _read("c", "race_markers.log")
    cut = text.index("    #0 w /tmp/h6/c/t.c:9 (t+0x1249)")
    unrestored = text[:cut] + "    [failed to restore the stack]\n" + text[text.index("\n", cut) + 1 :]
    [r] = parse_tsan(unrestored)
    d = r.to_dict()
    assert "count" not in d and "test_ids" not in d and "log" not in d
    assert d["location"] == {"file": "/tmp/h6/c/t.c", "line": 9, "func": "w"}
    assert d["stacks"][1]["frames"] == [
        {"n": 0, "func": "", "file": "", "line": None, "module": "", "origin": "unknown", "unrestored": True}
    ]
    assert "unrestored" not in d["stacks"][0]["frames"][0]
    assert TsanReport.from_dict(d).stacks[1].frames[0].unrestored
    [dd] = dedup([r, r])
    assert (dd.to_dict()["count"], dd.to_dict()["test_ids"]) == (2, ["a"])
    cut_off = parse_tsan(text[: text.index("SUMMARY")])[0]
    assert cut_off.location is None and cut_off.to_dict()["location"] == {}


def test_from_dict_ignores_unknown_keys_and_fills_missing():
    r = TsanReport.from_dict(
        {
            "kind": "data race",
            "from_a_newer_harness": 1,
            "stacks": [{"title": "Read of size 8", "frames": [{"func": "f", "x": 2}]}],
            "location": {"func": "f"},
        }
    )
    assert r.kind == "data race" and r.count == 1 and r.test_ids == () and r.threads == ()
    assert r.stacks[0].frames == (TsanFrame(func="f"),)
    assert r.location == TsanLocation(func="f")
    assert TsanReport.from_dict({}) == TsanReport()


RESULT_SCHEMA3 = DATA / "result_schema3.json"  # written by tests/data/tsan/make_result.py at 0de6995


def test_result_written_before_the_types_reads_back():
    """A result whose Phase.tsan the harness wrote as plain dicts: it reads back into
    TsanReports that write the same JSON again, and the verdict makes the same findings of them."""
    import json

    from harness.core.model import read_result

    raw = json.loads(RESULT_SCHEMA3.read_text())
    res = read_result(RESULT_SCHEMA3)
    assert [len(p.tsan) for p in res.phases] == [9, 2]
    for ph, old in zip(res.phases, raw["phases"], strict=True):
        assert [r.to_dict() for r in ph.tsan] == old["tsan"]
    assert res.to_dict()["phases"] == raw["phases"]
    made = [f.to_dict() for f in tsan_findings(res.phases)]
    # the same findings; since schema 15 each has its counts per mode too (Finding.by_mode)
    assert [{k: v for k, v in f.items() if k != "by_mode"} for f in made] == raw["findings"]
    assert [f["by_mode"] for f in made] == [{"gil0": f["ratio"]} for f in raw["findings"]]
    by_log = {(r.log, r.kind): r for r in res.phases[0].tsan}
    race = by_log[("tsan.4131", "data race")]
    assert race.location == TsanLocation(file="src/ft_tsan_counter/_count.c", line=17, func="bump")
    assert race.stacks[1].previous and race.stacks[1].frames[0].origin == "package"
    assert race.test_id == "tests/test_bump.py::test_bump_returns"
    cut = by_log[("tsan.5001", "lock-order-inversion")]
    assert not cut.complete and cut.location is None
    assert by_log[("tsan.103", "SEGV")].deadly


# ------------------------------------------------------------------ the TSan job's venv (harness/_inner/venv_layer.py)


def test_venv_seeded_from_a_layer_runs_its_scripts(tmp_path):
    """A layer made the ordinary way (this interpreter's venv + ensurepip: real pip-written
    scripts), copied into a --without-pip venv whose path is too long for a shebang: pip runs
    from the new venv, through the script pointed at it (pip's /bin/sh trampoline form)."""
    import subprocess
    import sys

    sys.path.insert(0, str(Path(tsan.__file__).parent.parent / "_inner"))
    try:
        import venv_layer
    finally:
        sys.path.pop(0)
    layer = tmp_path / "layer"
    subprocess.run([sys.executable, "-m", "venv", str(layer)], check=True, capture_output=True)
    venv = tmp_path / ("d" * 130) / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    venv_layer.seed(str(venv), str(layer))
    script = (venv / "bin" / "pip").read_text().splitlines()
    assert script[0] == "#!/bin/sh" and str(venv / "bin" / "python") in script[1]
    out = subprocess.run(
        [str(venv / "bin" / "pip"), "--version"],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin"},
    ).stdout
    assert f"from {venv}/lib/" in out
    short = tmp_path / "v2"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(short)], check=True)
    venv_layer.seed(str(short), str(layer))
    assert (short / "bin" / "pip").read_text().startswith(f"#!{short}/bin/python")


def test_venv_falls_back_to_the_ordinary_way(tmp_path):
    """A seeder that fails (here: it is not there) leaves an ordinary venv with pip in it,
    made by venv --clear over the half-made one."""
    import subprocess
    import sys

    venv = tmp_path / "venv"
    script = tsan.venv_sh(
        sys.executable, str(venv), str(tmp_path / "missing_seeder.py"), str(tmp_path / "layers"), ["pytest==8.4.2"]
    )
    r = subprocess.run(["sh", "-c", script], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "--version"], capture_output=True).returncode == 0
