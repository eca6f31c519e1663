"""Whether a suite's run ran as it should, before anything it shows is about the package.

Four ways a run can look like the package's result and not be: pytest read another project's
configuration (``outside_config``: parse.setup's ``config-outside``), the suite mostly did not
run (``mostly_errors``: most of its items errored at collection or setup), pytest refused the
arguments the harness gave it and the runs collected nothing (``refused_arguments``), or a run
was ended for its silence before any test started (``never_started``). Each is
the harness's setup error (``infra-error``, evidence ``setup``), never a package verdict.
"""

from __future__ import annotations

from ..core.evidence import HungTest
from ..core.model import Finding, Phase
from .reprocommands import reproduce


def outside_config(phase: Phase) -> Finding | None:
    """A run whose pytest took its configuration from outside the package (parse.setup): the
    harness's setup error; its tests ran under another project's config and decide nothing."""
    outside = next((s for s in phase.setup if s.kind == "config-outside"), None)
    if outside is None:
        return None
    return Finding(
        kind="infra-error",
        modes=(phase.gil,) if phase.gil is not None else (),
        evidence="setup",
        excerpt=f"{outside.excerpt}\n{phase.excerpt[-1500:]}",
        message=f"{phase.name}: setup: {outside.excerpt}; {outside.fix}"[:400],
        reproduce=reproduce(phase, None),
        phase=phase.name,
    )


MOSTLY_ERRORS = (0.5, 20)  # a plain run whose errors are over half its items, and at least 20


def mostly_errors(phase: Phase) -> Finding | None:
    """A plain run whose items mostly errored (collection or setup errors, not failures): the
    suite did not run as it should here (multiprocess 0.70.19 collected every Python version's
    tree: 39 passed, 1,191 errors), so it is a setup problem with its first error, never a
    package verdict (issue #35: no verdict from a suite that never ran). Not a run given only some
    tests (``Phase.subset``: the GIL-on runs of ``gil_on: targeted``): those are the red ones."""
    if phase.kind != "plain" or not phase.tests or phase.subset:
        return None
    errors = [t for t, tc in phase.tests.items() if tc.outcome == "error"]
    ran = [tc for tc in phase.tests.values() if tc.outcome != "skipped"]
    share, least = MOSTLY_ERRORS
    if len(errors) < least or len(errors) <= share * len(ran):
        return None
    first = phase.tests[errors[0]]
    return Finding(
        kind="infra-error",
        modes=(phase.gil,) if phase.gil is not None else (),
        count=len(errors),
        runs=len(ran),
        evidence="setup",
        excerpt=f"{errors[0]}: {first.message}"[:1500],
        message=(
            f"{phase.name}: setup: the suite mostly did not run: {len(errors)} of "
            f"{len(ran)} items errored (first: {errors[0]}: {first.message})"
        )[:400],
        reproduce=reproduce(phase, None),
        phase=phase.name,
    )


USAGE_ERROR = 4  # pytest's exit code for arguments it cannot use


def refused_arguments(collect: Phase, runs: list[Phase]) -> Finding | None:
    """The collect step (pytest without workers) stopped on a usage error -- a path that does not
    exist, an option it does not know -- and no run has a test: under pytest-xdist the same
    arguments end as "0 items", exit 5, so the suite looked empty (pymongo 4.20.1, when an
    addopts item was split on spaces: "file or directory not found: or").  The harness's setup
    error, never ``no-tests``."""
    if collect.kind != "collect" or collect.exit_code != USAGE_ERROR or any(p.tests for p in runs):
        return None
    said = [ln.strip() for ln in collect.excerpt.splitlines() if ln.strip().startswith("ERROR:")]
    why = said[-1] if said else f"pytest stopped with a usage error (exit code {USAGE_ERROR})"
    return Finding(
        kind="infra-error",
        evidence="setup",
        excerpt=collect.excerpt[-1500:],
        message=(
            f"{collect.name}: setup: pytest refused the harness's arguments ({why}); "
            "the runs collected nothing, so the suite decided nothing"
        )[:400],
        reproduce=reproduce(collect, None),
        phase=collect.name,
    )


def never_started(phase: Phase, hung: HungTest, modes: tuple[int, ...]) -> Finding:
    """A run ended for its silence before any test started: pytest was still collecting (under
    pytest-xdist the workers collect silently). Slow collection and a freeze while importing the
    test modules look the same from outside, and no test is named: the harness's setup finding,
    not a ``hang`` of the package (pycryptodome 4.5.0 collects Crypto.SelfTest's test vectors for
    minutes on a loaded machine; its import, the probe, takes a second)."""
    return Finding(
        kind="infra-error",
        modes=modes,
        evidence="setup",
        excerpt=hung.excerpt,
        message=(
            f"{phase.name}: setup: no test started: {hung.excerpt or 'the run was silent'}"
            " while pytest collected the suite; raise settings.test_timeout (the silence "
            "allowed grows with it) or narrow the package's `tests`"
        )[:400],
        reproduce=reproduce(phase, None),
        phase=phase.name,
    )
