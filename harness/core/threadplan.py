"""What a job's threaded runs were planned to cover (issue #58), as its result keeps it.

``harness.job.budgetplan`` decides it from the first plain run's per-test durations and the
budget left; the job's test stage runs what it says and the result states the reach:
how many tests ran in threads, how many iterations each, and what was left out and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

HOW = ("whole", "fitted", "sampled")  # as the settings say; fewer iterations for slow tests; a sample


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0


def _num(v: Any) -> float:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 else 0.0


def _counts(v: Any) -> dict[int, int]:
    return {int(k): _int(n) for k, n in v.items() if isinstance(k, str) and k.isdigit()} if isinstance(v, dict) else {}


@dataclass(frozen=True, kw_only=True)
class ThreadPlan:
    how: str = "whole"  # one of HOW
    tests: int = 0  # tests the first plain run timed (the suite as collected there)
    in_threads: int = 0  # of them, the tests each threaded run is given
    iterations: dict[int, int] = field(default_factory=dict)  # iterations -> how many tests get that many
    threads: dict[int, int] = field(default_factory=dict)  # threads -> how many tests get that many
    left_out: int = 0  # tests no threaded run is given (how == "sampled")
    seed: str = ""  # the sample's seed (the ISO week): the same all week, another the next
    pass_seconds: float = 0.0  # one threaded run's estimated time
    budget_seconds: float = 0.0  # the time the plan had for the GIL-off threaded runs
    file: str = ""  # the plan (iterations and test id, a line), relative to the job's output dir
    why: str = ""

    @property
    def reduced(self) -> int:
        """Tests given fewer iterations than the settings'."""
        top = max(self.iterations, default=0)
        return sum(n for it, n in self.iterations.items() if it < top) if self.how != "whole" else 0

    def reach(self, settings_iterations: int) -> str:
        """The reach in words, for a cell and report.md."""
        if self.how == "whole":
            return f"every test in threads, {settings_iterations} iterations each"
        spread = ", ".join(f"{n} × {it}" for it, n in sorted(self.iterations.items(), reverse=True))
        out = f"{self.in_threads} of {self.tests} tests in threads (tests × iterations: {spread}"
        if len(self.threads) > 1 or (self.threads and self.how == "sampled"):
            out += "; tests × threads: " + ", ".join(
                f"{n} × {t}" for t, n in sorted(self.threads.items(), reverse=True)
            )
        out += ")"
        if self.left_out:
            out += f"; {self.left_out} left out by a sample (seed {self.seed})"
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "how": self.how,
            "tests": self.tests,
            "in_threads": self.in_threads,
            "iterations": {str(k): v for k, v in sorted(self.iterations.items())},
            "threads": {str(k): v for k, v in sorted(self.threads.items())},
            "left_out": self.left_out,
            "seed": self.seed,
            "pass_seconds": round(self.pass_seconds, 1),
            "budget_seconds": round(self.budget_seconds, 1),
            "file": self.file,
            "why": self.why,
        }

    @classmethod
    def from_dict(cls, d: Any) -> ThreadPlan | None:
        """Tolerant: a result written by package-reachable code may hold anything here."""
        if not isinstance(d, dict) or d.get("how") not in HOW:
            return None
        return cls(
            how=d["how"],
            tests=_int(d.get("tests")),
            in_threads=_int(d.get("in_threads")),
            iterations=_counts(d.get("iterations")),
            threads=_counts(d.get("threads")),
            left_out=_int(d.get("left_out")),
            seed=d["seed"] if isinstance(d.get("seed"), str) else "",
            pass_seconds=_num(d.get("pass_seconds")),
            budget_seconds=_num(d.get("budget_seconds")),
            file=d["file"] if isinstance(d.get("file"), str) else "",
            why=d["why"] if isinstance(d.get("why"), str) else "",
        )
