"""A claim about the GIL's part only from runs in both modes, and only where fresh counts hold it.

``ft-race`` and ``ft-crash`` say "only with the GIL off"; ``crash`` and ``thread-unsafe`` say "in
both modes" (or "only with it on"). Each needs runs of its test in every planned mode, which a job
does not always have: its budget may end in the GIL-off runs, a phase may be cut short. After
confirmation (``verdict.confirm``), every such finding is checked against all the runs of its test:

- a crash or hang (``ft-crash``, ``crash``, ``hang``) is the verdict only where its evidence holds
  (issue #58): it recurred, in another suite run or in a run of its test alone, or, for a crash,
  its one observation carries a fatal-signal dump with a stack. A one-off is ``unconfirmed`` with
  its counts (``one_off``);
- a planned mode in which the test never ran (suite runs of the finding's kind, or runs alone)
  leaves nothing to compare: the finding becomes ``unconfirmed`` and says which mode is missing
  and why; it is shown, never the verdict (with the budget spent, that is ``infra-error``);
- "only with the GIL off" is decided on the runs alone (issue #47): the suite's runs
  nominated the candidate, so they are no evidence for it. Each candidate's runs alone give a
  one-sided Fisher exact p (GIL-off failures above GIL-on ones), and the job's candidates are
  one family: Holm's procedure (``util.stats.holm``) holds a claim only while the chance that the
  job publishes any false "only without the GIL" stays at or under ``util.stats.ALPHA``
  (0.05), however many candidates the suite nominated. A race that does not hold is
  ``unconfirmed`` with its counts; a crash that does not hold stays a ``crash`` (a signal is no
  flakiness), saying that whether it happens only without the GIL is not established;
- a candidate never re-run alone (``confirm: 0``, the budget spent) is not claimed either;
- ``thread-unsafe`` (fails in threads with the GIL on too) needs a rate that holds: its runs
  alone (both modes together) must fail at least as often as a rate at its *floor* would
  (``confirm.floor``: the rate the threaded suite runs of its test are sure, 95%, to show;
  ``confirm.rate_need``). A rarer failure is real, but the next run of the same job would most
  likely pass it: it is ``unconfirmed`` with its counts, shown beside the verdict, so that two runs
  of one matrix publish the same verdict;
- a ThreadSanitizer finding (evidence ``tsan``) states its counts: a race report with its stacks
  is no flaky assertion; its runs are the TSan runs of each mode.

A mode left out by ``settings.gil_modes`` is no missing evidence: the user asked for one mode,
and the finding says what it says of that mode. Nor is the GIL-on mode that ``gil_on: targeted``
left out because nothing was red with the GIL off (``verdict.gilon.skipped_modes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..core.jobspec import Settings
from ..core.model import Finding, Phase
from ..util.stats import ALPHA, fisher_greater, holm, holm_level
from .confirm import MAX_UNSAFE, floor, mode_words, rate_need
from .crashhang import RUN_KINDS, crashed_alone
from .gilon import skipped_modes

CLAIMS = ("ft-crash", "crash", "ft-race", "thread-unsafe")
EVENT_KINDS = ("ft-crash", "crash", "hang")  # the verdict only where the event's evidence holds (``one_off``)
BAD = ("failed", "error")


def _kinds(f: Finding) -> tuple[str, ...]:
    """The suite runs comparable to the finding's: threaded ones for a race, any run for a crash."""
    if f.kind in ("ft-race", "thread-unsafe") and not f.phase.startswith("plain-"):
        return ("threads",)
    return RUN_KINDS


def _alone(f: Finding, m: int) -> tuple[int, int]:
    hit, _, n = f.confirmed.get(f"gil{m}", "0/0").partition("/")
    return (int(hit), int(n)) if hit.isdigit() and n.isdigit() else (0, 0)


def counts(f: Finding, phases: Sequence[Phase], m: int) -> tuple[int, int]:
    """(runs that showed the finding's event, runs of its test) in mode ``m``: the suite's runs of
    its kind and the runs alone together. A ThreadSanitizer finding counts the TSan runs of the
    mode (``count`` of them reported it, all in its modes)."""
    if f.evidence == "tsan":
        n = sum(1 for p in phases if p.kind == "tsan" and p.gil == m)
        return (f.count if f.modes == (m,) else 0), n
    kinds = _kinds(f)
    runs = [
        p
        for p in phases
        if p.kind in kinds
        and p.gil == m
        and (
            f.test_id in p.tests
            or any(c.test_id == f.test_id for c in p.crashes)
            or (not f.test_id and (p.tests or p.crashes))
        )
    ]
    if f.kind in ("ft-crash", "crash"):
        bad = [p for p in runs if any(c.test_id == f.test_id for c in p.crashes)]
    else:
        bad = [p for p in runs if p.tests.get(f.test_id) is not None and p.tests[f.test_id].outcome in BAD]
    k, n = _alone(f, m)
    return len(bad) + k, len(runs) + n


def one_off(f: Finding) -> str:
    """Why a crash or hang is no verdict ('' when its evidence holds, issue #58): it holds when it
    recurred, in another suite run (``count``) or in a run of its test alone (``confirmed``), or,
    for a crash, when its one observation carries a fatal-signal dump with a stack (faulthandler's
    ``Fatal Python error`` block: its signal and a frame). One timeout under load (sqlalchemy
    2.1.9's ``test_memusage``), or one xdist worker death with no signal and no stack (click
    8.5.1), is a one-off: shown with its counts, never the verdict."""
    alone = {m: _alone(f, m) for m in (0, 1)}
    if f.evidence == "tsan" or f.count + sum(k for k, _ in alone.values()) >= 2:
        return ""
    if f.kind in ("crash", "ft-crash") and f.signal is not None and f.stack_top:
        return ""
    said = ", ".join(f"{k}/{n} {mode_words(m)}" for m, (k, n) in alone.items() if n)
    modes = " or ".join(mode_words(m) for m in f.modes) or "in any mode"
    if not f.count:  # seen only in a run alone (``crashhang.crashed_alone``)
        seen = f"seen once, in a run alone ({said})"
    elif said:
        seen = f"seen once ({f.ratio or f.count} suite runs {modes}), not again alone ({said})"
    else:
        seen = f"seen once ({f.ratio or f.count} suite runs {modes}), never re-run alone (settings.confirm, its budget, or the job's)"
    dump = (
        f", and it left no fatal-signal dump with a stack (signal {f.signal}{', no frame' if not f.stack_top else ''})"
        if f.kind in ("crash", "ft-crash")
        else ""
    )
    return f"{seen}{dump}"


def _fresh(f: Finding) -> str:
    return f"{f.confirmed.get('gil0', '0/0')} with the GIL off, {f.confirmed.get('gil1', '0/0')} with it on"


def check(findings: Sequence[Finding], phases: Sequence[Phase], settings: Settings) -> list[Finding]:
    """The findings with every claim about the modes checked against the runs (module docstring)."""
    planned = sorted(set(settings.gil_modes) - skipped_modes(phases, settings))
    spent = any(f.kind == "budget-spent" for f in findings)
    findings = [*crashed_alone(findings, phases), *findings]  # a crash alone is a crash (issue #58)
    out: list[Finding] = []
    family: list[int] = []  # indexes in ``out`` of the "only without the GIL" claims to test
    pvalues: list[float] = []
    for f in findings:
        if f.kind in EVENT_KINDS and (lone := one_off(f)):
            out.append(replace(f, kind="unconfirmed", message=f"{f.kind} not claimed: {lone}; seen: {f.message}"[:900]))
            continue
        if f.kind not in CLAIMS:
            out.append(f)
            continue
        per = {m: counts(f, phases, m) for m in planned}
        missing = [m for m in planned if per[m][1] == 0]
        if missing:
            why = "the job's budget ran out before" if spent else "no run in that mode reached it"
            absent = " or ".join(mode_words(m) for m in missing)
            out.append(
                replace(
                    f,
                    kind="unconfirmed",
                    message=(
                        f"{f.kind} not claimed: no run of it {absent} ({why}), so nothing is said of the "
                        f"GIL's part; seen: {f.message}"
                    )[:600],
                )
            )
            continue
        if f.kind == "thread-unsafe" and f.evidence != "tsan":
            out.append(_rate_holds(f, phases, planned, settings))
            continue
        if f.kind in ("ft-race", "ft-crash") and 1 in per:
            if f.evidence == "tsan":  # a TSan report is no flakiness: its counts, as they are
                (k0, n0), (k1, n1) = per[0], per[1]
                f = replace(
                    f, message=f"{f.message}; reported in {k0}/{n0} runs with the GIL off, {k1}/{n1} with it on"
                )
            elif _alone(f, 0)[1] == 0 or _alone(f, 1)[1] == 0:
                out.append(
                    _not_held(
                        f,
                        "it was not re-run alone (settings.confirm, or its budget), and the "
                        "suite runs that nominated it are no evidence for it",
                    )
                )
                continue
            else:
                (k0, n0), (k1, n1) = _alone(f, 0), _alone(f, 1)
                family.append(len(out))
                pvalues.append(fisher_greater(k0, n0, k1, n1))
        out.append(f)
    held = holm(pvalues, ALPHA)
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    for rank, i in enumerate(order):
        at, f, p = family[i], out[family[i]], pvalues[i]
        level = holm_level(rank, len(pvalues))
        test = f"one-sided Fisher p = {p:.3g}, Holm level {level:.3g} over the job's {len(pvalues)} candidate(s)"
        if held[i] and f.kind == "ft-race":  # one sentence: the claim, its runs alone, what nominated it
            where = "in a plain run" if f.phase.startswith("plain-") else "in threads"
            out[at] = replace(
                f,
                message=(
                    f"{f.test_id} fails {where} with the GIL off only: holds on fresh runs alone, interleaved: "
                    f"{_fresh(f)} ({test}); nominated by {f.ratio} suite runs with the GIL off"
                ),
            )
        elif held[i]:
            out[at] = replace(f, message=f"{f.message}; holds on fresh runs alone, interleaved: {_fresh(f)} ({test})")
        else:
            out[at] = _not_held(f, f"fresh runs alone, interleaved: {_fresh(f)} ({test}): the difference does not hold")
    return out


def _not_held(f: Finding, why: str) -> Finding:
    """An "only without the GIL" claim the fresh runs do not hold: a race is ``unconfirmed``, a
    crash stays a ``crash`` (a signal is no flakiness) with its GIL-off-only part not claimed."""
    if f.kind == "ft-crash":
        return replace(
            f, kind="crash", message=(f"{f.message}; whether only without the GIL is not established: {why}")[:900]
        )
    return replace(f, kind="unconfirmed", message=f"{f.kind} not claimed: {why}; {f.message}"[:900])


def _rate_holds(f: Finding, phases: Sequence[Phase], planned: Sequence[int], settings: Settings) -> Finding:
    """A ``thread-unsafe`` finding whose runs alone show a rate at its floor, else ``unconfirmed``
    with its counts (module docstring)."""
    need, total = rate_need(phases, f.test_id, settings.confirm, planned)
    alone = [_alone(f, m) for m in planned]
    k, runs = sum(a[0] for a in alone), sum(a[1] for a in alone)
    rate, suite = floor(phases, f.test_id)
    bar = (
        f"{need} failures in up to {total} runs alone would show a rate of {rate:.0%}, the rate its "
        f"{suite} threaded suite runs are sure (95%) to show"
    )
    if runs == 0:
        return replace(
            f,
            kind="unconfirmed",
            message=(
                f"thread-unsafe not claimed: not re-run alone (settings.confirm, its budget, or past the "
                f"{MAX_UNSAFE} highest rates), and the suite runs that nominated it are no evidence for it; "
                f"seen: {f.message}"
            )[:900],
        )
    if k >= need:
        return replace(f, message=f"{f.message}; its rate holds: {k} failures alone, where {bar}"[:900])
    if k + (total - runs) >= need:  # stopped (a budget) while the runs left could still hold it: not rare
        return replace(
            f,
            kind="unconfirmed",
            message=(
                f"thread-unsafe not decided: its runs alone stopped after {runs} of up to {total} "
                f"(settings.confirm_budget, job_timeout) with {k} failed, alone {_fresh(f)}, where {bar}; "
                f"seen: {f.message}"
            )[:900],
        )
    return replace(
        f,
        kind="unconfirmed",
        message=(
            f"thread-unsafe not claimed: it fails in threads, but more rarely than this job can show every "
            f"time: alone {_fresh(f)}, where {bar}; the next run would likely pass it; seen: {f.message}"
        )[:900],
    )
