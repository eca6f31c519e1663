"""Tests of a compiled module that is not installed, when pip chose a pure fallback wheel (#35).

``harness.verdict.artifact`` puts a ``pure-fallback`` setup problem on the install phase when pip
installed a compiled project's ``py3-none-any`` wheel. Then a test that fails in every plain run
on a missing module of the package's own (``No module named 'propcache._helpers_c'``) tested
nothing the installed artifact has: a setup fact with that cause, never ``baseline-failure``.
Without such a problem, a missing module of the package's own stays the package's failure
(``pkg._speedups`` not built by its own sdist build: parse.setup.is_setup_message).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..core.model import Finding, Phase, SetupProblem
from .artifact import fallback_of, rebuilt
from .reprocommands import reproduce

MISSING_RE = re.compile(r"ModuleNotFoundError: No module named '(?P<mod>[\w.]+)'")


def problem(phases: Sequence[Phase]) -> SetupProblem | None:
    """The install phase's ``pure-fallback`` problem (harness.verdict.artifact), or None."""
    return fallback_of(phases)


def own_missing(message: str, own: frozenset[str]) -> str:
    """The module of the package's own (``own``: its top-level import names) a failure message
    says is missing, or ""."""
    m = MISSING_RE.search(message)
    if m and "." in m.group("mod") and m.group("mod").split(".", 1)[0] in own:
        return m.group("mod")
    return ""


def finding(
    fb: SetupProblem, tests: Mapping[str, Phase], modules: Sequence[str], phases: Sequence[Phase], *, ran: bool
) -> Finding:
    """The tests that need a compiled module the tested artifact lacks: ``setup-error`` (shown)
    when other tests ran, ``infra-error`` when none did; the cause names the wheel."""
    first = next(iter(tests.values()))
    ids = sorted(tests)
    mods = ", ".join(sorted(set(modules))[:5])
    if rebuilt(phases):
        why = (
            f"built from its sdist after pip chose {fb.name}, and the build did not make {mods} "
            "(see the install-sdist log)"
        )
    else:
        why = f"the installed {fb.name} is the pure-Python fallback of a compiled project: {mods} is not in it"
    listed = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
    return Finding(
        kind="setup-error" if ran else "infra-error",
        test_id=ids[0] if len(ids) == 1 else "",
        modes=(first.gil,) if first.gil is not None else (),
        count=len(ids),
        evidence="setup",
        excerpt=f"{fb.excerpt}\n  fix: {fb.fix}\ntests that could not run: {listed}",
        message=f"setup: {len(ids)} test(s) of its compiled modules could not run: {why}; fix: {fb.fix}"[:400],
        reproduce=reproduce(first, None),
        phase=first.name,
    )
