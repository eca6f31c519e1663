"""harness.job.wheelsteps: what a failed build of the shared wheel store says of itself (#43; a build
past its limit: tests/unit/store/test_take.py)."""

from dataclasses import replace
from pathlib import Path

from harness.core.model import Phase
from harness.job.wheelsteps import _why
from harness.parse import parse_phase

BUILDENV = Path(__file__).resolve().parents[2] / "data" / "buildenv"


def _failed(tmp_path: Path, log: str, **kw) -> Phase:
    (tmp_path / "logs").mkdir(exist_ok=True)
    (tmp_path / "logs" / "wheel-grpcio-1.85.4.log").write_text(log)
    phase = Phase(
        name="wheel-grpcio-1.85.4",
        kind="wheels",
        command=("pip", "wheel"),
        exit_code=1,
        log="logs/wheel-grpcio-1.85.4.log",
    )
    return replace(parse_phase(phase, tmp_path), **kw)


def test_a_build_killed_for_memory_says_so_in_the_store_record(tmp_path: Path) -> None:
    # grpcio 1.85.4 in the store step at 2 GiB (captured): its cc1plus was killed 3,400 lines
    # above the log's tail; the phase's excerpt keeps the line, and the record names the limit
    phase = _failed(tmp_path, (BUILDENV / "grpcio-oom.log").read_text())
    assert _why(phase) == ", memory (the limit memory_bytes): a compiler was killed"


def test_a_build_failing_for_itself_says_no_cause_of_the_machine(tmp_path: Path) -> None:
    own = (BUILDENV / "lxml.log").read_text()  # nothing of the machine: no cause is made up
    assert _why(_failed(tmp_path, own)) == ""
