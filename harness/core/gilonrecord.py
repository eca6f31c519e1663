"""What a job's GIL-on runs ran (``settings.gil_on``; issue #34), as its result keeps it.

``harness.verdict.gilon`` decides it from the GIL-off runs, which go first; the job's test stage
runs what it says and the result says why (``JobResult.gil_on``).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import asdict, dataclass
from typing import Any

RAN = ("suite", "tests", "none")  # the whole suite; only the tests listed; no GIL-on test run


def targeted(gil_on: str, gil_modes: Collection[int], *, tsan: bool = False) -> bool:
    """The GIL-on runs follow the GIL-off ones and run what those call for: ``gil_on:
    targeted``, both GIL modes asked, and not under ThreadSanitizer (whose runs are the whole
    suite in every mode). The one test of it: the job's test stage, the verdict
    (harness.verdict.gilon) and the plan's estimate (harness.config.timings) all ask here."""
    return not tsan and gil_on == "targeted" and set(gil_modes) == {0, 1}


@dataclass(frozen=True, kw_only=True)
class GilOn:
    ran: str = "suite"  # one of RAN
    tests: int = 0  # ran == "tests": how many test ids the GIL-on runs were given
    file: str = ""  # ran == "tests": the list, one id a line, relative to the job's output dir
    why: str = ""  # in words: what the GIL-off runs showed that decided it

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Any) -> GilOn | None:
        """Tolerant: a result written by package-reachable code may hold anything here."""
        if not isinstance(d, dict) or d.get("ran") not in RAN:
            return None
        tests = d.get("tests")
        return cls(
            ran=d["ran"],
            tests=tests if isinstance(tests, int) and not isinstance(tests, bool) else 0,
            file=d["file"] if isinstance(d.get("file"), str) else "",
            why=d["why"] if isinstance(d.get("why"), str) else "",
        )
