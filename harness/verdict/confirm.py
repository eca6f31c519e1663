"""Confirmation: each candidate's test re-run alone, interleaved (GIL off, on, off, on...), until
its claim is decided or cannot be (issue #20; fresh evidence, issue #47).

The suite's runs *nominate* candidates: a test that crashed, hung or failed in some of them. They
are not evidence for what they nominated (a test picked because it failed 3 of 3 times with the GIL
off and 0 of 3 with it on is the luckiest of many: the winner's curse). So every claim about the
GIL's part is decided on the runs alone that come after (``verdict.modes``), and this module says
which tests get them, how many, and what they showed:

- which (``targets``): every ``ft-crash`` and ``ft-race`` candidate (the claims "only without the
  GIL", which the fresh runs test), every ``crash`` and ``hang``, and the ``thread-unsafe`` ones
  with the highest rates, at most ``MAX_UNSAFE`` (the rest are shown with their suite counts, "not
  re-run alone", never the verdict);
- in what order (``targets``, issue #58): one target at a time, strongest first, each given all
  its runs before the next, until each is decided or ``settings.confirm_budget`` is spent: the
  "only without the GIL" candidates first (the claims Holm's family decides, which need the most
  runs), the one whose suite runs make the strongest case first (``strength``: the one-sided Fisher
  p of its suite counts, GIL off against on), then the crashes, the hangs, the thread-unsafe ones.
  Dealt round-robin, every candidate's first pair before any second, a budget shared by eleven
  candidates stopped the strongest at 5/7 against 0/7 (p = 0.0105, above its Holm level): no
  claim; sequentially, the strongest reaches its ``confirm`` runs first;
- how many (``done``): up to ``settings.confirm`` runs per GIL mode each, within
  ``settings.confirm_budget`` (reserved from the start of the job's budget: ``reserve``),
  stopping a target as soon as its answer is clear: an "only without the GIL" candidate stops at
  its first event with the GIL on (then it happens in both modes), or when even failing every run
  left could no longer make the difference hold (``util.stats.least_failures``), or after half its
  runs with no event at all; a ``thread-unsafe`` one (and a race that failed alone with the GIL on
  too) once its rate is told (``rate_need``): as soon as its failures alone reach the count that
  shows a rate at its floor, or when they no longer can; a crash or hang at
  its first recurrence. Early stops only ever drop a claim, never make one, so they leave the
  error rate of the claims as it is;
- what they showed (``apply``): every finding gets ``confirmed`` = ``{"gil0": "k/N", ...}``, runs
  alone that showed the *same kind of event*, per mode: a crash by a crash (a signal or a fatal
  error), a hang by a timeout, a failure by the test failing. A run alone that ended otherwise is
  said as what it was, never counted as the finding recurring. A crash seen under pytest-xdist,
  whose controller reports only "worker crashed", gets the signal, the innermost Python frame and
  faulthandler's dump of all threads from the first run alone that crashed. An ``ft-race`` or
  ``ft-crash`` whose test fails (crashes) alone with the GIL on becomes ``thread-unsafe``
  (``crash``); one nominated by a *plain* run (it failed with the GIL off where the GIL-on plain
  run passed) becomes ``baseline-failure``. A race or hang seen once that never recurs alone
  becomes ``unconfirmed``: shown with its real rate, never the verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from math import ceil

from ..core.evidence import Crash
from ..core.jobspec import Settings
from ..core.model import Finding, Phase
from ..util.stats import bound_text, fisher_greater, least_failures, rules_out

CONFIRM_KINDS = ("ft-crash", "crash", "hang", "ft-race", "thread-unsafe")
ONLY_OFF = ("ft-crash", "ft-race")  # the claims "only without the GIL", tested on the fresh runs
MAX_UNSAFE = 3  # thread-unsafe candidates re-run alone: the highest rates
PAIRS = {"crash": 3, "hang": 2}  # at most this many runs per mode (and confirm)
RATE_RUNS = 8  # a failure's runs alone per mode at most, to tell its rate from its floor
PASSED = ("passed", "skipped")
GROUPS = ("ft-crash", "ft-race", "crash", "hang", "thread-unsafe")  # the order of the runs alone, by kind
RESERVE_SHARE = 1 / 3  # the runs alone's reserve: at most this share of the job's budget


def reserve(settings: Settings, *, tsan: bool = False) -> float:
    """The seconds at the end of the job's budget kept for the runs alone from the job's start
    (``JobCtx.reserve``): ``confirm_budget``, at most a third of ``job_timeout``; none when there are
    no runs alone (``confirm: 0``, ThreadSanitizer). The suite's runs stop early enough to leave
    it, so the runs alone happen however long the suite runs are."""
    if not settings.confirm or tsan:
        return 0.0
    return float(min(settings.confirm_budget, settings.job_timeout * RESERVE_SHARE))


def floor(phases: Sequence[Phase], test_id: str) -> tuple[float, int]:
    """(the per-run failure rate the threaded suite runs that ran ``test_id``, all modes, are sure
    (95%) to show, those runs) (``util.stats.rules_out``): a rarer failure passes them all in many
    runs of the same job, so it cannot decide the verdict the same way twice (issue #47)."""
    n = sum(1 for p in phases if p.kind == "threads" and test_id in p.tests)
    return rules_out(n), n


def rate_need(phases: Sequence[Phase], test_id: str, most: int, modes: Sequence[int]) -> tuple[int, int]:
    """(failures in its runs alone, all modes together, that show a rate at the floor; its runs
    alone at most): a ``thread-unsafe`` claim holds when its runs alone reach that count."""
    total = max(1, min(most, RATE_RUNS)) * max(1, len(modes))
    return max(1, ceil(floor(phases, test_id)[0] * total - 1e-9)), total


@dataclass(frozen=True, kw_only=True)
class Target:
    """One test to re-run alone, and the phase whose command (and thread options) it copies."""

    test_id: str
    kind: str
    phase: str


def strength(f: Finding, phases: Sequence[Phase]) -> float:
    """How strong a case the suite's runs make for ``f`` (lower: stronger): the one-sided Fisher
    p of its suite counts, the runs that showed it in its modes against the other mode's runs of
    its test, which never showed it (an "only without the GIL" candidate); its rate's complement
    for the others. No evidence for the claim (issue #47), only the order of the runs alone."""
    k, n = f.count, f.runs
    if f.kind not in ONLY_OFF or n <= 0:
        return 1.0 - (k / n if n else 0.0)
    kinds = ("threads",) if f.kind == "ft-race" and not f.phase.startswith("plain-") else ("plain", "threads")
    other = sum(
        1
        for p in phases
        if p.gil == 1 and p.kind in kinds and (f.test_id in p.tests or any(c.test_id == f.test_id for c in p.crashes))
    )
    return fisher_greater(k, n, 0, other or n)  # no GIL-on run of it yet: as many as the GIL-off ones


def targets(findings: Sequence[Finding], phases: Sequence[Phase]) -> list[Target]:
    """The tests to re-run alone, one per test, in the order they get their runs (module
    docstring): by ``GROUPS``, the strongest first within a group (``strength``; ties: an
    ``ft-crash`` before an ``ft-race``, then the order found); at most ``MAX_UNSAFE``
    thread-unsafe ones, the highest rates."""
    by_name = {p.name: p for p in phases}
    queues: dict[str, list[Finding]] = {k: [] for k in CONFIRM_KINDS}
    for f in findings:
        src = by_name.get(f.phase)
        if f.kind in queues and f.test_id and src is not None and src.test_command is not None:
            queues[f.kind].append(f)
    queues["thread-unsafe"] = sorted(queues["thread-unsafe"], key=lambda f: strength(f, phases))[:MAX_UNSAFE]
    ranked = [
        (GROUPS.index(f.kind) if f.kind not in ONLY_OFF else 0, strength(f, phases), GROUPS.index(f.kind), i, f)
        for i, f in enumerate(f for kind in CONFIRM_KINDS for f in queues[kind])
    ]
    out: list[Target] = []
    for *_, f in sorted(ranked, key=lambda r: r[:4]):
        if not any(t.test_id == f.test_id for t in out):
            out.append(Target(test_id=f.test_id, kind=f.kind, phase=f.phase))
    return out


def tally(test_id: str, kind: str, confirm: Sequence[Phase]) -> dict[int, tuple[int, int]]:
    """mode -> (runs alone of ``test_id`` that showed the kind's event, its runs alone)."""
    same = SAME_EVENT[kind]
    out: dict[int, tuple[int, int]] = {}
    for p in confirm:
        if p.kind != "confirm" or p.gil is None or p.test_command is None or p.test_command.paths != (test_id,):
            continue
        k, n = out.get(p.gil, (0, 0))
        out[p.gil] = (k + (event(p, test_id) == same), n + 1)
    return out


def done(target: Target, phases: Sequence[Phase], most: int, modes: Sequence[int]) -> bool:
    """Whether ``target`` needs no more runs alone: its answer is clear, or cannot change (see the
    module docstring). ``phases``: the job's so far; ``most``: settings.confirm, the runs per mode
    at most."""
    per = tally(target.test_id, target.kind, phases)
    n = min((per.get(m, (0, 0))[1] for m in modes), default=0)  # whole pairs run
    k0, _ = per.get(0, (0, 0))
    k1, _ = per.get(1, (0, 0))
    if target.kind in ONLY_OFF and 0 in modes and 1 in modes and not k1:
        if n >= most:
            return True
        need = least_failures(most)
        if need is not None and k0 + (most - n) < need:
            return True  # even failing every run left, the difference could not hold
        return k0 == 0 and n >= (most + 1) // 2
    if target.kind == "thread-unsafe" or (target.kind == "ft-race" and k1):  # (failed with the GIL on too)
        need, total = rate_need(phases, target.test_id, most, modes)
        k = sum(per.get(m, (0, 0))[0] for m in modes)
        ran = sum(per.get(m, (0, 0))[1] for m in modes)
        return k >= need or k + (total - ran) < need  # told, or can no longer be
    limit = min(most, PAIRS.get(target.kind, 5))
    return k0 + k1 > 0 or n >= limit


def next_run(chosen: Sequence[Target], phases: Sequence[Phase], most: int, modes: Sequence[int]) -> Run | None:
    """The next run alone, from the runs alone so far (None: every target is done): the first
    target in ``chosen``'s order not yet done (``done``, asked at each whole pair), its pair
    completed in ``modes``' order (GIL off, then on). One target's runs all come before the next
    target's: sequential, strongest first (module docstring)."""
    for i, target in enumerate(chosen, 1):
        ran = {m: sum(1 for p in phases if _alone_of(p, target.test_id) and p.gil == m) for m in modes}
        pair = min(ran.values(), default=0)
        if pair >= most:
            continue
        short = [m for m in modes if ran[m] == pair]
        if len(short) == len(modes) and done(target, phases, most, modes):
            continue  # asked between whole pairs: a pair once begun is completed
        return Run(index=i, target=target, mode=short[0], rep=pair + 1)
    return None


@dataclass(frozen=True, kw_only=True)
class Run:
    """One run alone to start: the ``index``-th target (its phase ``confirm<index>-gil<mode>-r<rep>``)."""

    index: int
    target: Target
    mode: int
    rep: int

    @property
    def name(self) -> str:
        return f"confirm{self.index}-gil{self.mode}-r{self.rep}"


def _alone_of(p: Phase, test_id: str) -> bool:
    return p.kind == "confirm" and p.test_command is not None and p.test_command.paths == (test_id,)


def event(p: Phase, test_id: str) -> str:
    """What a run alone showed of its test: crashed, hung, failed, passed, out of memory or no
    result. A run the memory limit killed (SIGKILL) is the machine's limit, never a crash."""
    tc = p.tests.get(test_id)
    if p.oom_killed:
        return "out of memory"
    if p.crash or (p.signal is not None and not p.infra):
        return "crashed"
    if p.hang or p.timed_out or (tc is not None and tc.outcome == "timeout"):
        return "hung"
    if tc is not None:
        return "passed" if tc.outcome in PASSED else "failed"
    if p.exit_code == 1:  # one test selected, pytest says a test failed
        return "failed"
    return "passed" if p.exit_code in (0, 5) else "no result"


SAME_EVENT = {"ft-crash": "crashed", "crash": "crashed", "hang": "hung", "ft-race": "failed", "thread-unsafe": "failed"}


def _dump(p: Phase) -> str:
    """faulthandler's dump of every thread (parse.crash), else the run's log tail."""
    return (p.crash.excerpt if p.crash else "") or p.excerpt


def mode_words(m: int) -> str:
    """'with the GIL off' / 'with the GIL on'."""
    return f"with the GIL {'off' if m == 0 else 'on'}"


def _otherwise(runs: Sequence[Phase], test_id: str, same: str) -> str:
    """The runs alone that ended in another event than the finding's, said per mode: 'failed
    without crashing 2/2 with the GIL off, 2/2 with the GIL on'."""
    words = {
        "crashed": "crashed",
        "hung": "timed out",
        "failed": "failed",
        "out of memory": "was killed by the memory limit",
        "no result": "gave no result",
    }
    parts = []
    for what in words:
        if what == same:
            continue
        per = []
        for m in sorted({p.gil for p in runs if p.gil is not None}):
            mine = [p for p in runs if p.gil == m]
            k = sum(1 for p in mine if event(p, test_id) == what)
            if k:
                per.append(f"{k}/{len(mine)} {mode_words(m)}")
        if per:
            tail = " without crashing" if same == "crashed" and what == "failed" else ""
            parts.append(f"{words[what]}{tail} {', '.join(per)}")
    return "; ".join(parts)


def _alone_runs(f: Finding, confirm: Sequence[Phase]) -> list[Phase]:
    return [p for p in confirm if p.test_command is not None and p.test_command.paths == (f.test_id,)]


def rate(f: Finding) -> str:
    """A finding's rate in the suite's runs that nominated it, and in its runs alone when it has
    some: "1/20 suite runs with the GIL off, 0/2 runs alone with the GIL off"."""
    where = " or ".join(mode_words(m) for m in f.modes)
    said = f"{f.count}/{f.runs} suite runs {where}".rstrip()
    alone = [(m, f.confirmed.get(f"gil{m}", "")) for m in f.modes]
    alone = [(m, c) for m, c in alone if c and not c.endswith("/0")]
    return ", ".join([said, *(f"{c} runs alone {mode_words(m)}" for m, c in alone)])


def _said(hit: dict[int, list[Phase]], n: dict[int, int]) -> str:
    return ", ".join(f"{len(hit[m])}/{n[m]} {mode_words(m)}" for m in sorted(n))


def _crash_details(g: Finding, f: Finding, hit: dict[int, list[Phase]], modes: Sequence[int]) -> Finding:
    crashed = [p for m in modes for p in hit[m] if p.crash or p.signal is not None]
    if not crashed:
        return g
    # the run whose dump says most: two threads crashing at once can garble one (parse.crash)
    alone = max(reversed(crashed), key=lambda p: (bool(p.crash and p.crash.stack_top), bool(p.crash and p.crash.fatal)))
    c = alone.crash or Crash()
    sig = c.signal or alone.signal
    return replace(
        g,
        signal=sig if sig is not None else f.signal,
        stack_top=c.stack_top or c.test_frame or f.stack_top,
        excerpt=_dump(alone) or f.excerpt,
        message=f"{f.message.replace('(signal None)', f'(signal {sig})')}; alone: {c.fatal or 'killed'}, signal {sig}",
    )


def _plain_nominated(f: Finding) -> bool:
    return f.phase.startswith("plain-")


def apply(findings: Sequence[Finding], phases: Sequence[Phase]) -> list[Finding]:
    """The findings with what the runs alone showed (see the module docstring)."""
    confirm = [p for p in phases if p.kind == "confirm"]
    out = []
    for f in findings:
        runs = _alone_runs(f, confirm) if f.kind in CONFIRM_KINDS and f.test_id else []
        if not runs:
            if f.kind in CONFIRM_KINDS and f.test_id and confirm:
                f = replace(f, message=f"{f.message}; not re-run alone")
            out.append(f)
            continue
        modes = sorted({p.gil for p in runs if p.gil is not None})
        same = SAME_EVENT[f.kind]
        hit = {m: [p for p in runs if p.gil == m and event(p, f.test_id) == same] for m in modes}
        n = {m: len([p for p in runs if p.gil == m]) for m in modes}
        said = _said(hit, n)
        total = sum(n.values())
        k = sum(len(v) for v in hit.values())
        g = replace(f, confirmed={f"gil{m}": f"{len(hit[m])}/{n[m]}" for m in modes})
        if f.kind in ("ft-crash", "crash"):
            g = _crash_details(g, f, hit, modes)
        elif f.kind == "hang":
            alone = next((p for m in modes for p in hit[m] if p.hang), None)
            if alone is not None and alone.hang and alone.hang.excerpt:
                g = replace(g, excerpt=alone.hang.excerpt, stack_top=alone.hang.stack_top or f.stack_top)
        if f.kind in ONLY_OFF and hit.get(1):  # alone, it fails (crashes) with the GIL on too
            if f.kind == "ft-crash":
                kind, what = "crash", "crashes with the GIL on too"
            elif _plain_nominated(f):
                kind, what = "baseline-failure", "fails in a plain run with the GIL on too: not thread-related"
            else:
                kind, what = (
                    "thread-unsafe",
                    "fails in threads with the GIL on too: not thread-safe regardless of the GIL",
                )
            g = replace(
                g,
                kind=kind,
                modes=(0, 1),
                message=(
                    f"{f.test_id} {what}: alone {said} (its suite runs had shown it with the GIL off only, {f.ratio})"
                ),
            )
        elif k == 0 and f.count <= 1 and same != "crashed":
            g = replace(
                g,
                kind="unconfirmed",
                message=f"{f.kind} seen once ({f.ratio} suite runs) and not again alone ({said}; "
                f"{bound_text(total, 'runs alone')}): {f.message}",
            )
        elif k == 0:
            g = replace(g, message=f"{g.message}; did not recur alone ({said}; {bound_text(total, 'runs alone')})")
        else:
            g = replace(g, message=f"{g.message}; alone: {said}")
        otherwise = _otherwise(runs, f.test_id, same)
        if otherwise:
            g = replace(g, message=f"{g.message}; alone it {otherwise}")
        out.append(g)
    return out
