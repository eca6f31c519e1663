"""The command line: the real `python -m harness` in a subprocess (help, exit codes, a closed
stdout, a docker engine that does not answer), and main() in-process for the run path through
the backend registry and for every error class's exit code."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from harness import __main__ as cli_main
from harness import backends
from harness.backends import Opened, Prepared
from harness.cli import commands, progress, runjobs
from harness.config import matrix, plan, sharding
from harness.core.errors import BuildError, ConfigError, HarnessError, InfraError, Interrupted, RegressionError
from harness.job import runner
from tests.conftest import HARNESS, ROOT, SOURCE_PATH, cli
from tests.unit.job.test_runner import INFO, FakeBackend, FakeSteps

RUN1 = ROOT / "tests" / "data" / "report" / "run1"
NO_DOCKER = {"DOCKER_HOST": "unix:///nonexistent/ft-harness-test/docker.sock"}
INTERP = 'interpreters: [{name: cpython3.13t, version: "3.13.5", source: "debian:trixie"}]\n'


def write_matrix(tmp: Path, names: list[str]) -> Path:
    path = tmp / "matrix.yaml"
    path.write_text(INTERP + "packages:\n" + "".join(f"  - {{name: {n}}}\n" for n in names))
    return path


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


# ----------------------------------------------------------------------------- help


def test_help_describes_the_tool_and_lists_the_exit_codes() -> None:
    r = cli("--help")
    assert r.returncode == 0, r.stderr
    assert "Tell which Python packages are safe on free-threaded CPython" in r.stdout
    assert "HarnessError" not in r.stdout and "harness.cli.commands" not in r.stdout
    codes = r.stdout.split("exit codes:", 1)[1]
    for code, meaning in [
        ("0", "the harness worked"),
        ("1", "a gate failed"),
        ("2", "bad input"),
        ("3", "could not be fetched or built"),
        ("4", "infrastructure"),
        ("130", "interrupted"),
        ("141", "stdout was closed"),
    ]:
        assert any(line.split()[:1] == [code] and meaning in line for line in codes.splitlines()), (code, codes)
    for name in ("run", "build", "report", "diff", "plan", "image", "clean", "reproduce"):
        assert f"    {name} " in r.stdout


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_every_option_has_help_and_every_value_a_metavar() -> None:
    parser = cli_main.build_parser()
    subs = _subparsers(parser)
    assert set(subs) == {"run", "build", "report", "diff", "plan", "image", "store", "clean", "reproduce"}
    for name, p in [("ft-harness", parser), *subs.items()]:
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                continue
            where = f"{name} {'/'.join(a.option_strings) or a.dest}"
            assert a.help and a.help != argparse.SUPPRESS, f"{where} has no help"
            if a.nargs != 0 and not a.choices:  # takes a value: the usage names it
                assert a.metavar, f"{where} has no metavar"
        if p is not parser:
            assert p.description and "exit codes:" in (p.epilog or ""), name


def test_subcommand_help_shows_metavars(tmp_path: Path) -> None:
    r = cli("run", "--help")
    assert r.returncode == 0
    for shown in (
        "--matrix FILE",
        "--out DIR",
        "--jobs N",
        "--shard I/N",
        "--package NAME",
        "--fail-on VERDICTS",
        "--backend {auto,local,docker}",
    ):
        assert shown in r.stdout, shown
    assert "exit codes:" in r.stdout


def test_version() -> None:
    r = cli("--version")
    assert (r.returncode, r.stdout.strip()) == (0, f"ft-harness {cli_main.__version__}")


@pytest.mark.parametrize("argv, verbose", [(["plan"], False), (["plan", "-v"], True), (["-v", "plan"], True)])
def test_verbose_before_or_after_the_command(argv: list[str], verbose: bool) -> None:
    assert cli_main.build_parser().parse_args(argv).verbose is verbose


# ----------------------------------------------------------------------------- a closed stdout


def test_plan_into_head_exits_quietly_through_a_real_pipe(tmp_path: Path) -> None:
    """`ft-harness plan | head -1`: far more output than a pipe holds, so a write after head
    exits is certain; the CLI ends with 141 and nothing on stderr."""
    m = write_matrix(tmp_path, [f"pkg{i}" for i in range(2000)])
    full = cli("plan", "--matrix", str(m))
    assert full.returncode == 0 and len(full.stdout) > 4 * 65536  # pipes hold 64 KiB
    env = {**SOURCE_PATH, "PATH": "/usr/bin:/bin"}
    producer = subprocess.Popen(
        [*HARNESS, "plan", "--matrix", str(m)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path
    )
    head = subprocess.Popen(["head", "-1"], stdin=producer.stdout, stdout=subprocess.PIPE)
    assert producer.stdout is not None and producer.stderr is not None
    producer.stdout.close()  # head holds the only read end now
    first, _ = head.communicate(timeout=60)
    err = producer.stderr.read().decode()
    producer.wait(timeout=60)
    assert first.decode() == full.stdout.splitlines(keepends=True)[0]
    assert err == ""  # no traceback, no "Exception ignored" at exit
    assert producer.returncode == 141


def test_a_stdout_closed_before_the_first_write(tmp_path: Path) -> None:
    """Output small enough to sit in Python's buffer: the failure comes at the flush, and must
    not come back as "Exception ignored ... BrokenPipeError" when the interpreter exits."""
    m = write_matrix(tmp_path, ["six"])
    r_fd, w_fd = os.pipe()
    os.close(r_fd)
    try:
        p = subprocess.run(
            [*HARNESS, "plan", "--matrix", str(m)],
            stdout=w_fd,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            env={**SOURCE_PATH, "PATH": "/usr/bin:/bin"},
        )
    finally:
        os.close(w_fd)
    assert (p.returncode, p.stderr) == (141, "")


# ----------------------------------------------------------------------------- exit codes


def test_unknown_package_is_bad_input(tmp_path: Path) -> None:
    m = write_matrix(tmp_path, ["six"])
    r = cli("run", "--matrix", str(m), "--package", "nope", "--out", str(tmp_path / "out"))
    assert r.returncode == 2
    assert one_line(r.stderr) == f"--package 'nope' is not in {m}"
    assert not (tmp_path / "out").exists()


def test_report_merges_and_the_gate_fails_on_a_verdict(tmp_path: Path) -> None:
    shutil.copytree(RUN1 / "results", tmp_path / "run1" / "results")
    r = cli("report", str(tmp_path / "run1"))
    assert r.returncode == 0, r.stderr
    for name in ("report.md", "report.json", "index.html", "junit.xml"):
        assert f"wrote {tmp_path / 'run1'}" in r.stdout and name in r.stdout
    summary = next(line for line in r.stdout.splitlines() if line.startswith("summary: "))
    assert "1 ft-crash" in summary and "1 infra-error" in summary
    report = json.loads((tmp_path / "run1" / "report.json").read_text())
    assert {p["name"]: p["verdict"] for p in report["packages"]}["fx-ft-crash"] == "ft-crash"

    r = cli("report", str(tmp_path / "run1"), "--fail-on", "ft-crash,hang")
    assert r.returncode == 1
    assert one_line(r.stderr) == "ft-harness: --fail-on matched: fx-ft-crash (ft-crash), fx-hang (hang)"
    r = cli("report", str(tmp_path / "run1"), "--fail-on", "no-such-verdict")
    assert r.returncode == 2
    assert one_line(r.stderr).startswith(
        "ft-harness report: argument --fail-on: unknown verdict 'no-such-verdict'; one of: "
    )


def test_gates_tell_the_truth_before_any_work(tmp_path: Path) -> None:
    # issue #16: a typo in --fail-on is told at once (nothing built), an empty dir is not a report
    t0 = time.monotonic()
    r = cli(
        "run", "--matrix", str(tmp_path / "absent.yaml"), "--fail-on", "ft-crash,typo", "--out", str(tmp_path / "out")
    )
    assert r.returncode == 2 and time.monotonic() - t0 < 5
    assert "unknown verdict 'typo'" in one_line(r.stderr) and not (tmp_path / "out").exists()
    (tmp_path / "empty").mkdir()
    r = cli("report", str(tmp_path / "empty"))
    assert r.returncode == 2
    assert "no valid result to report in" in one_line(r.stderr)
    assert not (tmp_path / "empty" / "report.json").exists()


def test_diff_exits_1_on_a_regression_only(tmp_path: Path) -> None:
    old = json.loads(
        cli("report", str(RUN1), "--out", str(tmp_path / "a")).stdout and (tmp_path / "a" / "report.json").read_text()
    )
    new = json.loads(json.dumps(old))
    pkg = next(p for p in new["packages"] if p["verdict"] == "compatible")
    pkg["verdict"] = "ft-crash"
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    r = cli("diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"))
    assert r.returncode == 1 and pkg["name"] in r.stdout, r.stdout + r.stderr
    r = cli("diff", str(tmp_path / "new.json"), str(tmp_path / "old.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    r = cli("diff", str(tmp_path / "missing.json"), str(tmp_path / "old.json"))
    assert r.returncode == 2
    assert one_line(r.stderr) == f"{tmp_path / 'missing.json'}: no such file"


@pytest.mark.parametrize("argv", [["clean"], ["image"], ["run", "--backend", "docker"]])
def test_a_docker_engine_that_does_not_answer_is_infra(tmp_path: Path, argv: list[str]) -> None:
    m = write_matrix(tmp_path, ["six"])
    extra = [] if argv == ["clean"] else ["--matrix", str(m), "--cache", str(tmp_path / "cache")]
    out = ["--out", str(tmp_path / "out")] if argv[0] == "run" else []
    r = cli(*argv, *extra, *out, env=NO_DOCKER, timeout=120)
    assert r.returncode == 4, r.stdout + r.stderr
    line = one_line(r.stderr)
    assert line.startswith("ft-harness: docker daemon is not answering"), line
    if argv == ["clean"]:  # says so without the SDK's exception text
        assert line == (
            f"ft-harness: docker daemon is not answering at {NO_DOCKER['DOCKER_HOST']}: "
            "nothing to clean (containers and volumes live in the engine; start it "
            "and rerun)"
        )


def test_auto_falls_back_to_local_with_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", NO_DOCKER["DOCKER_HOST"])
    name, note = backends.choose("auto")
    assert name == "local"
    assert note.startswith("no docker engine answers (docker daemon is not answering: ")
    assert note.endswith("); using --backend local")
    assert backends.choose("local") == ("local", "")
    assert backends.choose("docker") == ("docker", "")


def test_an_unknown_backend_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown backend 'vm' \(one of local, docker\)"):
        backends.open_backend("vm", [], cache=tmp_path, run_id="r")


@pytest.mark.parametrize(
    "error, code",
    [
        (RegressionError("--fail-on matched: x"), 1),
        (ConfigError("bad", file="m.yaml", line=3), 2),
        (BuildError("configure failed"), 3),
        (InfraError("disk full"), 4),
        (Interrupted("interrupted: 1 of 2 results kept"), 130),
        (KeyboardInterrupt(), 130),
    ],
)
def test_each_error_class_has_its_exit_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], error: BaseException, code: int
) -> None:
    def fail(args: argparse.Namespace) -> int:
        print("partial output")
        raise error

    monkeypatch.setattr(commands, "cmd_plan", fail)
    assert cli_main.main(["plan"]) == code
    captured = capsys.readouterr()
    assert captured.out == "partial output\n"
    if isinstance(error, ConfigError):
        assert captured.err == "m.yaml:3: bad\n"  # bad input: the location first, no prefix
    elif isinstance(error, HarnessError):
        assert captured.err == f"ft-harness: {error}\n"
    else:
        assert captured.err == "ft-harness: interrupted\n"


# ----------------------------------------------------------------------------- run, in-process


def test_run_goes_through_the_registry_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    m = write_matrix(tmp_path, ["alpha", "beta"])
    opened: list[tuple[list[str], int, str]] = []

    def open_fake(jobs, *, cache, run_id, workers, say, heartbeat) -> Opened:
        opened.append(([j.interpreter.name for j in jobs], workers, str(cache)))
        say("interpreter cpython3.13t: cache hit (interp-key-1)")
        assert heartbeat is progress.heartbeat  # the CLI's, passed in (interpreters/ import no CLI)
        return Opened(
            backend=FakeBackend(),
            prepared={j.interpreter.name: Prepared(info=INFO, python="/fake/python", cache_hit=True) for j in jobs},
        )

    steps = FakeSteps({"cpython3.13t--beta": lambda job, backend: "ft-crash"})
    monkeypatch.setitem(backends.BACKENDS, "fake", open_fake)
    monkeypatch.setattr(runner, "run_job", steps)
    monkeypatch.setenv("CI", "true")
    out = tmp_path / "out"
    argv = [
        "run",
        "--matrix",
        str(m),
        "--out",
        str(out),
        "--backend",
        "fake",
        "--jobs",
        "2",
        "--cache",
        str(tmp_path / "cache"),
    ]
    assert cli_main.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert opened == [(["cpython3.13t", "cpython3.13t"], 2, str(tmp_path / "cache"))]
    assert lines[0] == "interpreter cpython3.13t: cache hit (interp-key-1)"
    assert re.search(r"\] 2 jobs: 0 already done, 2 to run \(ETA ~\d+ (s|min)\)$", lines[1]), lines[1]
    assert f"2 jobs ran, 0 reused from {out / 'results'}" in lines
    assert f"wrote {out / 'report.json'}" in lines
    assert "summary: 1 ft-crash, 1 compatible" in lines
    report = json.loads((out / "report.json").read_text())
    assert report["meta"]["backend"] == "fake"
    assert {p["name"]: p["verdict"] for p in report["packages"]} == {"alpha": "compatible", "beta": "ft-crash"}
    assert sorted(steps.ran) == ["cpython3.13t--alpha", "cpython3.13t--beta"]

    assert cli_main.main([*argv, "--fail-on", "ft-crash"]) == 1  # the rerun resumes, then gates
    captured = capsys.readouterr()
    assert f"0 jobs ran, 2 reused from {out / 'results'}" in captured.out.splitlines()
    assert captured.err == "ft-harness: --fail-on matched: beta (ft-crash)\n"
    assert len(steps.calls) == 2


def test_the_local_backend_says_once_that_it_does_not_isolate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue #17: running untrusted package code without isolation is said at the start
    m = write_matrix(tmp_path, ["alpha"])

    def open_fake(jobs, *, cache, run_id, workers, say, heartbeat) -> Opened:
        return Opened(
            backend=FakeBackend(),
            prepared={j.interpreter.name: Prepared(info=INFO, python="/fake/python", cache_hit=True) for j in jobs},
        )

    monkeypatch.setitem(backends.BACKENDS, "local", open_fake)
    monkeypatch.setattr(runner, "run_job", FakeSteps({}))
    argv = ["run", "--matrix", str(m), "--out", str(tmp_path / "out"), "--backend", "local"]
    assert cli_main.main(argv) == 0
    err = capsys.readouterr().err
    assert err.count("no isolation") == 1 and "--backend docker" in err


def _args(**kw) -> argparse.Namespace:
    base = {"shard": None, "durations": None, "interpreter": None, "package": None, "matrix": "m.yaml"}
    return argparse.Namespace(**{**base, **kw})


def test_select_jobs_shards_the_whole_plan_then_filters() -> None:
    spec = matrix.loads(
        'interpreters: [{name: a, version: "3.13.5", source: "debian:trixie"},'
        ' {name: b, version: "3.13.5", source: "debian:trixie", sanitizer: thread}]\n'
        "packages: [{name: p1}, {name: p2}, {name: p3}]\n"
    )
    everything = plan.make_plan(spec)
    assert runjobs.select_jobs(spec, _args()) == everything
    second = sharding.shard(everything, 2, 2, None)
    assert 0 < len(second) < len(everything)
    assert runjobs.select_jobs(spec, _args(shard="2/2")) == second
    assert runjobs.select_jobs(spec, _args(shard="2/2", package=["p1"])) == [
        j for j in second if j.package.name == "p1"
    ]
    assert {j.interpreter.name for j in runjobs.select_jobs(spec, _args(interpreter=["b"]))} == {"b"}
    with pytest.raises(ConfigError, match=r"--package 'zz' is not in m.yaml"):
        runjobs.select_jobs(spec, _args(package=["p1", "zz"]))
