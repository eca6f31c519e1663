"""The bounds on what the host reads of a package's own files (issue #29), on the disk a
job's commands may fill (#46, #56: ``workspace_bytes``, ``workspace_files``, ``file_bytes``,
``pip_cache_bytes``) and on the shared wheel store
(#46: ``store_entries_per_job``, ``store_bytes``; harness.store.storecap), each with a name.

A package's sdist and the files its code writes in the job's workspace (logs, probe.json,
JUnit) are untrusted input the host reads outside any container and outside ``job_timeout``.
Every read is bounded by one of these; a package past one gets a result that names it
(``LimitExceeded.limit``), never an exception out of the job or a host that runs out of time
or memory.  The defaults sit well above what the top 1,000 PyPI sdists need (the sweep:
``benchmarks/sweep.py``) and can be set for a run with ``FT_HARNESS_LIMIT_<NAME>`` (upper
case, e.g. ``FT_HARNESS_LIMIT_EXTRACT_BYTES=2147483648``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .model import Phase

__all__ = ["LIMITS", "Limit", "LimitExceeded", "cap_failing_tests", "cap_result_tests", "defaults", "note", "value"]


@dataclass(frozen=True, kw_only=True)
class Limit:
    name: str
    default: int
    what: str


LIMITS: dict[str, Limit] = {
    lim.name: lim
    for lim in (
        Limit(name="extract_bytes", default=1 << 30, what="bytes an sdist may unpack to (counted while extracting)"),
        Limit(name="extract_members", default=100_000, what="files and directories in an sdist"),
        Limit(
            name="tox_expansions", default=1_000, what="{[section]key} substitutions while reading one tox.ini value"
        ),
        Limit(name="tox_value_bytes", default=1 << 20, what="bytes of one tox.ini value after substitution"),
        Limit(name="requirements_depth", default=10, what="depth of a -r chain of requirements files"),
        Limit(name="requirements_files", default=100, what="requirements files one -r chain reads"),
        Limit(name="nesting", default=100, what="nesting depth of a TOML or JSON document"),
        Limit(name="conftest_bytes", default=1 << 20, what="bytes of a conftest.py scanned for imports"),
        Limit(
            name="workspace_bytes",
            default=8 << 30,
            what="bytes a job's workspace may hold on the host's disk (measured every quarter second while "
            "a command runs; past it the command is killed and the job stops). Below a hosted GitHub "
            "runner's ~14 GB of free disk (ubuntu-24.04), which also holds the images, the wheel store "
            "and the pip caches",
        ),
        Limit(
            name="workspace_files",
            default=250_000,
            what="files, directories and links a job's workspace may hold (counted by the same walk; past "
            "it the command is killed and the job stops): a disk's inodes run out as surely as its "
            "blocks, and a walk takes 2-4 µs an entry, so this bounds how long one walk blinds the "
            "watch (under a second). 2.5 times an sdist at extract_members, 13 times the largest of the "
            "top 1,000 (18,604) and its venv",
        ),
        Limit(
            name="file_bytes",
            default=4 << 30,
            what="bytes of any one file a job's command writes, its phase log included (the kernel's "
            "RLIMIT_FSIZE, refused at write time)",
        ),
        Limit(
            name="pip_cache_bytes",
            default=2 << 30,
            what="bytes the docker backend's pip cache volumes (one per job and release) that one run keeps "
            "may hold together, each measured when its job ends: past it that job's volume is removed (its "
            "next install downloads again); one that cannot be measured is removed too",
        ),
        Limit(
            name="store_entries_per_job",
            default=32,
            what="entries one job may add to the shared wheel store (wheels built from sdists, the "
            "tools layer); past it the job's install builds the rest itself, and stores nothing",
        ),
        Limit(
            name="store_bytes",
            default=4 << 30,
            what="bytes one backend's shared wheel store may hold; past it the least recently used "
            "entries this run has not used are removed, and a new entry that still does not fit "
            "is not stored (the install builds it itself)",
        ),
        Limit(
            name="store_bytes_per_job",
            default=1 << 30,
            what="bytes of new entries one job may add to the shared wheel store (its wheels and the "
            "tools layer); past it the job stores nothing more, so one package cannot evict every "
            "other package's entries (#56)",
        ),
        Limit(
            name="store_seconds_per_job",
            default=3600,
            what="seconds one job may spend on the shared wheel store (its dry run, each sdist's "
            "build, waiting on another job's build of the same sdist): the store's time, not the "
            "job's budget; past it the job stores nothing more and its install builds the rest (#56)",
        ),
        Limit(
            name="store_seconds_per_run",
            default=3 * 3600,
            what="seconds all jobs of one run (or the store step) may spend on the shared wheel store "
            "together; the workflow's store job (240 min) ends within it (#56)",
        ),
        Limit(
            name="memory_bytes",
            default=6 << 30,
            what="memory a job's commands may use: a docker container's cap (no swap), the local "
            "backend's RLIMIT_DATA per process; past it the command is killed and the job is "
            "`infra-error` out of memory. Two jobs fit a 16 GB CI runner (#43: grpcio's C++ build "
            "and pillow's suite were killed at the 2 GiB this replaced)",
        ),
        Limit(
            name="log_bytes",
            default=64 << 20,
            what="bytes of one phase's log kept (the rest is cut, and the log says so)",
        ),
        Limit(
            name="tests_per_phase",
            default=200_000,
            what="per-test outcomes parsed from one phase (the ones not passed first)",
        ),
        Limit(
            name="result_tests",
            default=250_000,
            what="per-test outcomes one result file keeps over all its phases (about 40 MB)",
        ),
        Limit(
            name="result_failing_tests",
            default=5_000,
            what="per-test outcomes other than passed or skipped one result file keeps over all its "
            "phases (about 1 to 10 MB); past it the tests whose outcome differs between phases are "
            "kept first, and each phase counts the ones it drops (``failing_not_kept``)",
        ),
        Limit(
            name="artifact_file_bytes",
            default=96 << 20,
            what="bytes of one file of a job's logs/ or junit/ that the copy CI uploads carries "
            "(harness.core.artifactcopy; a larger file is left out, and the job's note says so)",
        ),
        Limit(
            name="artifact_bytes_per_job",
            default=256 << 20,
            what="bytes of one job's logs/ and junit/ that the copy CI uploads carries (shallow files "
            "first: the phases' own logs before what package code wrote deeper down)",
        ),
        Limit(
            name="artifact_files_per_job",
            default=10_000,
            what="files and directories of one job's logs/ and junit/ the copy CI uploads looks at",
        ),
        Limit(
            name="artifact_depth",
            default=32,
            what="directory levels below a job's logs/ or junit/ the copy CI uploads goes down",
        ),
        Limit(
            name="artifact_bytes",
            default=2 << 30,
            what="bytes of every job's logs/ and junit/ together in one copy CI uploads (a shard's, the store step's)",
        ),
    )
}


def value(name: str) -> int:
    """The limit in force: FT_HARNESS_LIMIT_<NAME> when set to a positive integer, else its default."""
    lim = LIMITS[name]
    raw = os.environ.get(f"FT_HARNESS_LIMIT_{name.upper()}", "")
    try:
        v = int(raw)
    except ValueError:
        return lim.default
    return v if v > 0 else lim.default


def defaults() -> dict[str, int]:
    return {name: lim.default for name, lim in LIMITS.items()}


class LimitExceeded(Exception):
    """A package's file went past a named limit: data about the package, never a harness bug."""

    def __init__(self, limit: str, detail: str) -> None:
        self.limit = limit
        self.detail = detail
        super().__init__(f"limit {limit} ({value(limit)}) exceeded: {detail}")


def note(name: str, detail: str) -> str:
    """The line a result carries when a package's file went past limit ``name``."""
    return str(LimitExceeded(name, detail))


_ROUTINE = ("passed", "skipped")


def _named(p: Phase) -> set[str]:
    """The test ids a phase's crashes and hang name (what findings are about)."""
    out = {c.test_id for c in p.crashes if c.test_id}
    if p.hang is not None:
        out |= {t.test_id for t in p.hang.tests if t.test_id} | ({p.hang.running} if p.hang.running else set())
    return out


def cap_failing_tests(phases: Sequence[Phase]) -> tuple[Phase, ...]:
    """The phases with at most ``result_failing_tests`` outcomes other than passed or skipped
    over all of them (#56: a suite of 10**5 failing tests made a result ``report`` skips).  Tests
    are kept or dropped whole (every phase's outcome of one test id): first those a crash or hang
    names, then those whose outcome differs between phases (where the findings come from), then
    those failing alike everywhere, each group in the order first seen.  A phase that lost some
    says how many in ``failing_not_kept`` and in its excerpt; its counts stay whole."""
    limit = value("result_failing_tests")
    if sum(1 for p in phases for tc in p.tests.values() if tc.outcome not in _ROUTINE) <= limit:
        return tuple(phases)
    outcomes: dict[str, list[str]] = {}
    for p in phases:
        for t, tc in p.tests.items():
            outcomes.setdefault(t, []).append(tc.outcome)
    named = set().union(*(_named(p) for p in phases))
    telling = [t for t, got in outcomes.items() if any(o not in _ROUTINE for o in got)]
    telling.sort(key=lambda t: (t not in named, len(set(outcomes[t])) == 1))  # stable: first seen first
    drop: set[str] = set()
    kept = 0
    for t in telling:
        n = sum(1 for o in outcomes[t] if o not in _ROUTINE)
        if kept + n <= limit and not drop:
            kept += n
        else:
            drop.add(t)
    out = []
    for p in phases:
        lost = sum(1 for t, tc in p.tests.items() if t in drop and tc.outcome not in _ROUTINE)
        if not lost:
            out.append(p)
            continue
        line = "[ft-harness] " + note(
            "result_failing_tests", f"{lost} of this phase's failing per-test outcomes not kept (its counts are whole)"
        )
        out.append(
            replace(
                p,
                tests={t: tc for t, tc in p.tests.items() if t not in drop},
                failing_not_kept=p.failing_not_kept + lost,
                excerpt=f"{p.excerpt}\n{line}".strip(),
            )
        )
    return tuple(out)


def cap_result_tests(phases: Sequence[Phase]) -> tuple[Phase, ...]:
    """The phases as a result file keeps them: at most ``result_failing_tests`` outcomes other
    than passed or skipped (``cap_failing_tests``), and at most ``result_tests`` per-test outcomes
    over all of them.  Every outcome kept of a test that was not passed or skipped in some phase
    stays (the findings and a later diff compare those across phases); the others share what is
    left, phase by phase, and a cut phase's excerpt says how many it dropped.  Its counts stay
    whole.  The verdict is decided before, on everything parsed: a suite of 10**6 passing tests
    made a 77 MiB result that ``report`` skips (load.MAX_RESULT_BYTES)."""
    phases = cap_failing_tests(phases)
    limit = value("result_tests")
    if sum(len(p.tests) for p in phases) <= limit:
        return tuple(phases)
    telling = {t for p in phases for t, tc in p.tests.items() if tc.outcome not in _ROUTINE}
    must = sum(1 for p in phases for t in p.tests if t in telling)
    share = max(0, limit - must) // max(1, sum(1 for p in phases if p.tests))
    out = []
    for p in phases:
        rest = [t for t in p.tests if t not in telling]
        if len(rest) <= share:
            out.append(p)
            continue
        keep = {t for t in p.tests if t in telling} | set(rest[:share])
        line = "[ft-harness] " + note(
            "result_tests",
            f"{len(rest) - share} of this phase's {len(p.tests)} per-test outcomes (passed or skipped) not kept",
        )
        out.append(
            replace(p, tests={t: tc for t, tc in p.tests.items() if t in keep}, excerpt=f"{p.excerpt}\n{line}".strip())
        )
    return tuple(out)
