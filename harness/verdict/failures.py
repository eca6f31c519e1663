"""Tests that failed (JUnit) in the plain/threads runs -> findings (the verdict's failure rules;
``harness.verdict.rules`` assembles the verdict).

- baseline-failure: fails in a plain run (with the GIL on; GIL-off-only plain failures too,
  marked with that mode); ft-race: passes in every plain run and fails in GIL-off threaded runs
  only; thread-unsafe: passes in plain runs, fails in threaded runs with the GIL on.
- repeat-failure: a test pytest-run-parallel ran single-threaded failing only in the threaded runs.
- setup-error / infra-error: tests whose fixture or import is missing (``verdict.setupfind``),
  and a compiled project's pure fallback wheel (``verdict.fallback``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.model import Finding, Phase, by_mode
from ..parse import setup as parse_setup
from . import fallback
from .reprocommands import reproduce
from .setupfind import not_installed_of, setup_finding

__all__ = ["failure_findings"]

BAD = ("failed", "error")


def _table(phases: Sequence[Phase]) -> dict[str, dict[str, str]]:
    """test id -> phase name -> outcome."""
    table: dict[str, dict[str, str]] = {}
    for p in phases:
        for tid, tc in p.tests.items():
            table.setdefault(tid, {})[p.name] = tc.outcome
    return table


def _excerpt_for(phase: Phase, tid: str, fallback: str = "") -> str:
    tc = phase.tests.get(tid)
    msg = tc.message if tc else ""
    return f"{tid}: {msg}".strip(": ") if msg else (fallback or tid)


def _plain_failure(tid: str, plain: Sequence[Phase], bad: Sequence[Phase], asked: Sequence[int]) -> Finding:
    """A test that failed in a plain run. ``baseline-failure`` (not thread-related) needs it to fail
    in a plain run with the GIL on; one that failed with the GIL off where its GIL-on plain run
    passed is a candidate "fails only without the GIL" (an ``ft-race`` nominated by a plain run,
    decided on its runs alone); one whose GIL-on plain run never happened is ``unconfirmed``."""
    modes = tuple(sorted({p.gil for p in bad if p.gil is not None}))
    first = next((p for p in bad if p.gil == 1), bad[0])
    if 1 in modes or 1 not in asked:
        only = "" if 1 in modes else " with the GIL off (the only mode asked)"
        return _junit_finding(
            "baseline-failure",
            tid,
            modes,
            first,
            len(bad),
            len(plain),
            f"{tid} fails in a plain run{only}: not thread-related",
            by_mode(bad, plain),
        )
    on = [p for p in plain if p.gil == 1 and tid in p.tests]
    if on:
        return _junit_finding(
            "ft-race",
            tid,
            modes,
            first,
            len(bad),
            len([p for p in plain if p.gil == 0]),
            f"{tid} fails in a plain run with the GIL off and passes in {len(on)}/{len(on)} with it on",
            by_mode(bad, plain),
        )
    return _junit_finding(
        "unconfirmed",
        tid,
        modes,
        first,
        len(bad),
        len(plain),
        (
            f"{tid} fails in a plain run with the GIL off; no plain run with the GIL on reached it, so "
            "neither a baseline failure (which needs one) nor a free-threading one is established"
        ),
        by_mode(bad, plain),
    )


def failure_findings(
    phases: Sequence[Phase],
    ran_modes: set[int],
    blamed: set[str],
    own: frozenset[str] = frozenset(),
    asked: Sequence[int] = (0, 1),
) -> tuple[list[Finding], set[str]]:
    """baseline-failure, ft-race, thread-unsafe; returns them and the baseline test ids.
    ``own``: the package's top-level modules (the probe's), whose absence is the package's."""
    plain = [p for p in phases if p.kind == "plain"]
    threads = [p for p in phases if p.kind == "threads"]
    table = _table(plain + threads)
    out: list[Finding] = []
    baseline: set[str] = set()
    setup_tests: dict[str, Phase] = {}
    fb = fallback.problem(phases)  # a compiled project's pure fallback wheel was installed
    fb_tests: dict[str, Phase] = {}
    fb_mods: list[str] = []
    single = _single_threaded(phases)
    for tid, row in table.items():
        plain_bad = [p for p in plain if row.get(p.name) in BAD]
        if plain_bad and fb and all(fallback.own_missing(p.tests[tid].message, own) for p in plain_bad):
            fb_tests[tid], fb_mods = (
                plain_bad[0],
                [*fb_mods, fallback.own_missing(plain_bad[0].tests[tid].message, own)],
            )
            continue
        if plain_bad and all(parse_setup.is_setup_message(p.tests[tid].message, own) for p in plain_bad):
            setup_tests.setdefault(tid, plain_bad[0])  # its fixture or import is missing
            continue
        if plain_bad:
            baseline.add(tid)
            if tid not in blamed:
                out.append(_plain_failure(tid, plain, plain_bad, asked))
            continue
        if tid in blamed:
            continue
        if (found := _thread_failure(tid, row, threads, ran_modes, single)) is not None:
            out.append(found)
    ran = any(tc.outcome == "passed" for p in plain for tc in p.tests.values())
    if fb and fb_tests:  # its compiled modules were never installed: a setup fact (verdict.fallback)
        out.append(fallback.finding(fb, fb_tests, fb_mods, phases, ran=ran))
    if setup_tests:
        out.append(_setup_tests_finding(phases, setup_tests, ran))
    return out, baseline


def _thread_failure(
    tid: str, row: dict[str, str], threads: Sequence[Phase], ran_modes: set[int], single: dict[str, str]
) -> Finding | None:
    """A test that passes in plain runs and fails in threaded ones: ft-race (with the GIL off
    only), thread-unsafe (with it on), repeat-failure (run single-threaded there); else None."""
    bad_by_mode = {m: [p for p in threads if p.gil == m and row.get(p.name) in BAD] for m in ran_modes}
    fail_modes = tuple(sorted(m for m, ps in bad_by_mode.items() if ps))
    if not fail_modes:
        return None
    modes: tuple[int, ...] = fail_modes
    if fail_modes == (0,):
        kind = "ft-race"
        why = "fails in threaded runs with the GIL off only; passes in plain runs"
    elif fail_modes == (1,) and 0 in ran_modes:
        kind = "thread-unsafe"
        why = "fails in threaded runs with the GIL on, not in its GIL-off ones: not thread-safe regardless of the GIL"
    else:
        kind = "thread-unsafe"
        why = "fails in threaded runs with the GIL on too: not thread-safe regardless of the GIL"
    hits = [p for m in modes for p in bad_by_mode[m]]
    runs = [p for p in threads if p.gil in modes and p.name in row]
    per_mode = by_mode(hits, [p for p in threads if p.gil in ran_modes and p.name in row])
    if tid in single:  # pytest-run-parallel never ran it in threads: not a thread finding
        kind, why = (
            "repeat-failure",
            (
                f"fails in the threaded runs, which ran it single-threaded ({single[tid]}), and passes "
                "in plain runs: its repetition there (--iterations on one fixture instance) or an "
                "earlier test's state, not threads"
            ),
        )
    return _junit_finding(
        kind,
        tid,
        modes,
        hits[0],
        len(hits),
        len(runs),
        f"{tid} {why} ({len(hits)}/{len(runs)} threaded runs "
        f"{'with the GIL off' if modes == (0,) else 'with the GIL on' if modes == (1,) else 'of both modes'})",
        per_mode,
    )


def _setup_tests_finding(phases: Sequence[Phase], setup_tests: dict[str, Phase], ran: bool) -> Finding:
    """The tests whose fixture or import is missing (``parse.setup``), in one finding; its kind
    is setup-error when some test passed in a plain run (``ran``), else infra-error."""
    first = next(iter(setup_tests.values()))
    kind = "setup-error" if ran else "infra-error"  # shown; the verdict only if nothing ran
    missing = not_installed_of(phases)
    return setup_finding(kind, first, sorted(setup_tests), f"{len(setup_tests)} test(s) could not run", missing)


def _single_threaded(phases: Sequence[Phase]) -> dict[str, str]:
    """test id -> why pytest-run-parallel ran it single-threaded, from its trusted accounts (the
    collect-only run, or a threaded run without xdist)."""
    out: dict[str, str] = {}
    for p in phases:
        if p.parallel is not None and p.parallel.trusted:
            out.update(p.parallel.single)
    return out


def _junit_finding(
    kind: str,
    tid: str,
    modes: tuple[int, ...],
    first: Phase,
    count: int,
    runs: int,
    message: str,
    per_mode: dict[str, str] | None = None,
) -> Finding:
    """A test's failure seen in JUnit: evidence and the reproduce command from its first bad run."""
    return Finding(
        kind=kind,
        test_id=tid,
        modes=modes,
        count=count,
        runs=runs,
        evidence="junit",
        excerpt=_excerpt_for(first, tid),
        message=message,
        reproduce=reproduce(first, tid),
        phase=first.name,
        by_mode=per_mode or {},
    )
