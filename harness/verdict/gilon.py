"""Which tests the GIL-on runs need (``settings.gil_on: targeted``, the default; issue #34).

A GIL-on run decides something only for a test that failed, errored, crashed or hung with the GIL
off: it tells ``ft-race`` from ``thread-unsafe``, ``ft-crash`` from ``crash``, a GIL-off-only
baseline failure from one in both modes, and a hang's modes. What ``targeted`` does not see is
a test that passed in every GIL-off run and fails only with the GIL on (a baseline failure or a
threaded failure with the GIL on alone, a crash or hang with it on only): ``gil_on: full`` runs
the whole suite in both modes for whoever wants those too.

So the GIL-off runs go first over the whole suite, and :func:`select` reads them:

- ``suite``: the GIL-on runs run the whole suite, as with ``full``, when the GIL-off runs could
  not show which tests matter: no test ran, a run did not finish the suite (the process died,
  was killed, timed out, or its log has no pytest summary), pytest read another project's
  configuration or most items errored, the collect step was refused or timed out, or a crash or
  hang named no test;
- ``tests``: only the tests that were red in some GIL-off run (by node id; the job's test runs
  keep the collected items listed, ``harness/_inner/ft_harness_only.py``), in the plain run and
  in every threaded repetition, so each such test has the same runs in both modes as with
  ``full`` and the k/R ratios, Fisher tests and modes of its findings are the same;
- ``none``: nothing was red with the GIL off: no GIL-on test run happens. :func:`skipped_modes`
  tells the verdict so, and no finding claims the GIL-on mode (there is none to claim it).

Pure over the phases, so a result file decides the same again from itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.gilonrecord import targeted
from ..core.jobspec import Settings
from ..core.model import Phase
from ..parse import incomplete
from ..parse.hang import WATCHDOG_ENDED
from .ranrun import mostly_errors, outside_config

RED = ("failed", "error", "crashed", "timeout")
RUN_KINDS = ("plain", "threads")
REFUSED = (3, 4)  # pytest's internal and usage errors


@dataclass(frozen=True, kw_only=True)
class Selection:
    ran: str  # "suite" | "tests" | "none" (harness.core.gilonrecord.RAN)
    tests: tuple[str, ...] = ()  # ran == "tests": the node ids, sorted
    why: str = ""


def _targeted(settings: Settings) -> bool:
    return targeted(settings.gil_on, settings.gil_modes)  # of the settings alone: TSan not asked here


def _unfinished(p: Phase) -> str:
    """Why a GIL-off run did not run the suite through ("" when it did)."""
    if p.infra:
        return f"the backend failed: {p.infra}"
    if p.oom_killed or p.timed_out or p.signal is not None:
        return "it was killed" + (" (out of memory)" if p.oom_killed else " at its timeout" if p.timed_out else "")
    if p.exit_code not in (0, 1):
        return f"pytest exited {p.exit_code}"
    if p.hang and (p.hang.job_timeout or p.hang.spent or any(WATCHDOG_ENDED in t.excerpt for t in p.hang.tests)):
        return "the process was ended while a test hung"
    if cut := incomplete(p):
        return cut
    if any(not c.test_id for c in p.crashes) or (p.hang and any(not t.test_id for t in p.hang.tests)):
        return "a crash or hang named no test"
    if problem := (outside_config(p) or mostly_errors(p)):
        return problem.message
    return ""


def red_tests(off: Sequence[Phase]) -> set[str]:
    """Every test that failed, errored, crashed or hung in one of ``off``'s runs."""
    red = {t for p in off for t, tc in p.tests.items() if tc.outcome in RED}
    red |= {c.test_id for p in off for c in p.crashes if c.test_id}
    red |= {t.test_id for p in off if p.hang for t in p.hang.tests if t.test_id}
    return red


def select(phases: Sequence[Phase], settings: Settings) -> Selection:
    """What the GIL-on runs run, from the GIL-off runs (module docstring)."""
    if not _targeted(settings):
        why = "settings.gil_on: full" if settings.gil_on == "full" else "one GIL mode asked"
        return Selection(ran="suite", why=why)
    off = [p for p in phases if p.kind in RUN_KINDS and p.gil == 0]
    if not any(p.kind == "plain" for p in off):
        return Selection(ran="suite", why="no plain run with the GIL off")
    if not any(tc.outcome != "skipped" for p in off for tc in p.tests.values()) and not any(p.crashes for p in off):
        return Selection(ran="suite", why="no test ran with the GIL off")
    for p in off:
        if why := _unfinished(p):
            return Selection(ran="suite", why=f"{p.name} did not run the suite through: {why}"[:300])
    for c in (p for p in phases if p.kind == "collect"):
        if c.timed_out or c.infra or c.exit_code in REFUSED or c.signal is not None:
            return Selection(ran="suite", why=f"{c.name} did not finish (exit code {c.exit_code})")
    red = red_tests(off)
    runs = f"the {len(off)} GIL-off run{'s' if len(off) != 1 else ''}"
    if not red:
        return Selection(
            ran="none", why=f"nothing failed, crashed or hung in {runs}: no GIL-on run would decide anything"
        )
    return Selection(
        ran="tests",
        tests=tuple(sorted(red)),
        why=f"{len(red)} test(s) failed, crashed or hung in {runs}; only they decide a mode",
    )


def skipped_modes(phases: Sequence[Phase], settings: Settings) -> set[int]:
    """The modes the job left out on purpose: GIL on when nothing was red with it off."""
    if not _targeted(settings) or any(p.kind in RUN_KINDS and p.gil == 1 for p in phases):
        return set()
    return {1} if select(phases, settings).ran == "none" else set()
