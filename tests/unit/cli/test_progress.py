"""harness.cli.progress: the plain lines of a run, and a reader that goes away."""

from __future__ import annotations

import contextlib
import io
import os
import re

import pytest

from harness.cli import progress
from harness.core.model import InterpreterInfo, JobResult

INFO = InterpreterInfo(name="cpython3.13t", version="3.13.5", key="k")


def result(job_id: str, verdict: str, qualifier: str = "") -> JobResult:
    return JobResult(job_id=job_id, key="x", package=job_id, interpreter=INFO, verdict=verdict, qualifier=qualifier)


def test_plain_lines_count_done_over_total() -> None:
    out = io.StringIO()
    r = progress.PlainReporter(out)
    r.start(3, 1)
    r.step("cp--a", "install")
    r.done(result("cp--a", "compatible", "low thread coverage: 3/120 tests in threads"), 12.4)
    r.done(result("cp--b", "ft-crash"), 0.2)
    r.finish()
    lines = [re.sub(r"^\[ *\d+\.\ds\] ", "", line) for line in out.getvalue().splitlines()]
    assert lines == [
        "3 jobs: 1 already done, 2 to run",
        "[1/3] cp--a: install",
        "[2/3] cp--a: compatible (low thread coverage: 3/120 tests in threads) in 12s",
        "[3/3] cp--b: ft-crash in 0s",
    ]
    assert all(re.match(r"^\[ *\d+\.\ds\] ", line) for line in out.getvalue().splitlines())


def test_the_eta_is_what_the_pending_jobs_are_expected_to_take_over_the_workers() -> None:
    out = io.StringIO()
    r = progress.PlainReporter(out, expected={"cp--a": 600, "cp--b": 300, "cp--c": 60}, workers=2)
    r.start(3, 1, todo=["cp--a", "cp--b"])  # cp--c was reused: not pending
    r.done(result("cp--a", "compatible"), 590)
    r.done(result("cp--b", "compatible"), 280)
    lines = [re.sub(r"^\[ *\d+\.\ds\] ", "", line) for line in out.getvalue().splitlines()]
    assert lines == [
        "3 jobs: 1 already done, 2 to run (ETA ~8 min)",  # (600 + 300) / 2 s
        "[2/3] cp--a: compatible in 590s; ETA ~2 min",  # 300 / 2 s
        "[3/3] cp--b: compatible in 280s",
    ]


def test_a_closed_stdout_silences_the_reporter_without_an_error() -> None:
    r_fd, w_fd = os.pipe()
    os.close(r_fd)  # the reader went away (`ft-harness run | head -1`)
    stream = open(w_fd, "w")  # noqa: SIM115 - closed below, past the broken pipe
    try:
        rep = progress.PlainReporter(stream)
        rep.start(2, 0)  # would raise BrokenPipeError into the job thread
        rep.step("cp--a", "install")
        rep.done(result("cp--a", "compatible"), 1.0)
        assert rep.done_n == 1
        with pytest.raises(BrokenPipeError):  # the pipe really is broken
            os.write(w_fd, b"x")
    finally:
        with contextlib.suppress(BrokenPipeError):
            stream.close()


@pytest.mark.parametrize("ci", ["true", "1"])
def test_ci_gets_plain_lines(monkeypatch: pytest.MonkeyPatch, ci: str) -> None:
    monkeypatch.setenv("CI", ci)
    assert type(progress.make_reporter()) is progress.PlainReporter


def _lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln]


def test_a_heartbeat_says_what_runs_and_how_long_until_it_ends(monkeypatch) -> None:
    # issue #16: interpreter and image builds (4-14 min) printed nothing without -v
    import time

    monkeypatch.delenv("CI", raising=False)
    out = io.StringIO()
    with progress.heartbeat("building CPython 3.13.5", every=0.1, stream=out) as hb:
        hb.step("make -j2")
        time.sleep(0.55)
    lines = _lines(out.getvalue())
    assert lines[:2] == ["building CPython 3.13.5 ...", "building CPython 3.13.5: make -j2"]
    beats = [ln for ln in lines if ln.endswith("so far")]
    assert 2 <= len(beats) <= 5 and beats[0] == "building CPython 3.13.5 (make -j2): 0 s so far"
    assert re.fullmatch(r"building CPython 3\.13\.5: done after 0 s", lines[-1])
    time.sleep(0.3)
    assert _lines(out.getvalue()) == lines  # nothing after the block
    assert not any(t.name == "ft-harness-heartbeat" for t in __import__("threading").enumerate())
    assert progress._elapsed(754) == "12 min 34 s"


def test_in_ci_the_heartbeat_is_a_folded_group_and_says_a_failure(monkeypatch) -> None:
    monkeypatch.setenv("CI", "true")
    out = io.StringIO()
    with pytest.raises(RuntimeError), progress.heartbeat("::error::x", every=10, stream=out):
        raise RuntimeError("the build failed")
    assert _lines(out.getvalue()) == ["::group::\\::error::x", "::endgroup::", "\\::error::x: stopped after 0 s"]


def test_an_interpreter_build_says_its_steps_and_its_time(tmp_path, monkeypatch, capsys) -> None:
    """interpreters._build on a source tree whose configure and make are slow shell scripts:
    the real configure / make / make install sequence, with the heartbeat's lines on stdout."""
    import tarfile

    from harness.config import matrix
    from harness.interpreters import interpreters

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("FT_HARNESS_HEARTBEAT", "0.1")
    src = tmp_path / "Python-3.13.5"
    src.mkdir()
    (src / "configure").write_text(
        "#!/bin/sh\nsleep 0.35\nprefix=${1#--prefix=}\n"
        "printf 'all:\\n\\tsleep 0.35\\ninstall:\\n\\tmkdir -p $(DESTDIR)%s/bin\\n' \"$prefix\" > Makefile\n"
    )
    (src / "configure").chmod(0o755)
    tarball = tmp_path / "Python-3.13.5.tar.xz"
    with tarfile.open(tarball, "w:xz") as tf:
        tf.add(src, arcname=src.name)
    spec = matrix.loads(
        'interpreters: [{name: cpython3.13t, version: "3.13.5", source: "debian:trixie"}]\npackages: [{name: six}]\n'
    )
    prefix = tmp_path / "cache" / "cpython-3.13.5-ft-x"
    prefix.parent.mkdir()
    interpreters._build(
        spec.interpreters[0], tarball, prefix, tmp_path / "build.log", 1, progress.heartbeat
    )  # the CLI's, passed in: interpreters/ imports no CLI
    assert (prefix / "bin").is_dir()
    lines = _lines(capsys.readouterr().out)
    what = f"building CPython 3.13.5 for cpython3.13t (log {tmp_path / 'build.log'})"
    assert lines[0] == f"{what} ..."
    steps = [
        ln.removeprefix(f"{what}: ")
        for ln in lines
        if ln.startswith(f"{what}: ") and not ln.endswith("so far") and "after" not in ln
    ]
    assert steps == ["configure", "make -j1", "make install"]
    assert any(ln.startswith(f"{what} (configure): ") and ln.endswith("so far") for ln in lines)
    assert any(ln.startswith(f"{what} (make -j1): ") for ln in lines)
    assert lines[-1].startswith(f"{what}: done after ")
    # without one (the default, core.progress.no_heartbeat) the same build says nothing
    interpreters._build(spec.interpreters[0], tarball, prefix, tmp_path / "build.log", 1)
    assert (prefix / "bin").is_dir() and capsys.readouterr().out == ""


def test_the_eta_follows_the_pace_of_the_finished_jobs() -> None:
    """Jobs that take twice their estimate (a loaded machine): the rest are expected to as well,
    once enough has finished to outweigh the estimate (PACE_PRIOR)."""
    out = io.StringIO()
    r = progress.PlainReporter(out, expected={"cp--a": 600, "cp--b": 600, "cp--c": 600})
    r.start(3, 0, todo=["cp--a", "cp--b", "cp--c"])
    assert r.eta() == "ETA ~30 min"
    r.done(result("cp--a", "compatible"), 1200)
    pace = (1200 + progress.PACE_PRIOR) / (600 + progress.PACE_PRIOR)
    assert r.pace() == pytest.approx(pace)
    assert r.eta() == f"ETA ~{2 * 600 * pace / 60:.0f} min"
    r.step("cp--b", "install")
    r.began["cp--b"] -= 500  # it has run 500 s of its expected 600 x pace
    assert r.eta() == f"ETA ~{(2 * 600 * pace - 500) / 60:.0f} min"
    r.done(result("cp--b", "compatible"), 10_000)  # a runaway job: the pace stays within limits
    assert r.pace() == progress.PACE_LIMITS[1]  # (11,200 + 300) / (1,200 + 300) = 7.7, capped
