"""Confirmation: a red finding's test re-run alone, ``settings.confirm`` times per GIL mode.

Real suites are not deterministic under threads, so one flaky repetition must not decide a red
verdict for a whole package. After the suite's runs, the job re-runs the test of each
``ft-crash``, ``crash``, ``hang`` and ``ft-race`` finding (the most severe first, at most
``MAX_TARGETS`` tests, within ``settings.confirm_budget`` seconds) on its own: the same command
as the phase that found it (threads as in that phase), without pytest-xdist, in every GIL mode.
Those ``confirm`` phases decide nothing on their own; they change the findings:

- every finding gets ``confirmed`` = ``{"gil0": "k/N", ...}``: runs alone that showed the *same
  kind of event*, per mode — a crash by a crash (a signal or a fatal error), a hang by a timeout,
  a race by the test failing. A run alone that ended otherwise (a crash finding's test failing by
  assertion, say) is said in the message as what it was, never counted as the finding recurring;
- a crash seen under pytest-xdist, whose controller reports only "worker crashed", gets the
  signal, the innermost Python frame (faulthandler's first frame of the crashing thread) and
  faulthandler's dump of all threads from the first run alone that crashed;
- an ``ft-race`` or ``ft-crash`` whose test also fails (races) or crashes (crashes) alone with
  the GIL on becomes ``thread-unsafe`` or ``crash``: the suite's runs only missed it with the GIL
  on. How the GIL-on runs fail otherwise changes nothing: a crash seen only with the GIL off stays
  ``ft-crash``;
- a race or hang seen once in the suite's runs that never recurs alone becomes ``unconfirmed``:
  shown with its real rate (the suite's repetitions and the runs alone together, "in all 1/25
  runs with the GIL off"), never the verdict, and named in a compatible verdict's qualifier. A
  crash stays a crash though it did not recur alone: a signal is never a test's flakiness;
- one seen more than once that never recurs alone stays, and says it did not recur alone.

Which tests get runs alone (``targets``): the most severe finding of each kind first, then the
next of each kind, at most ``MAX_TARGETS``; within a kind the highest rate first. The job runs
them round-robin (every target's first run in each mode, then the second...), so the budget
reaches every finding that may decide the verdict. Whether a GIL-off-only difference holds is
decided afterwards over all the runs (``verdict.modes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..core.evidence import Crash
from ..core.model import Finding, Phase

CONFIRM_KINDS = ("ft-crash", "crash", "hang", "ft-race")
MAX_TARGETS = 4
PASSED = ("passed", "skipped")


@dataclass(frozen=True, kw_only=True)
class Target:
    """One test to re-run alone, and the phase whose command (and thread options) it copies."""

    test_id: str
    kind: str
    phase: str


def targets(findings: Sequence[Finding], phases: Sequence[Phase]) -> list[Target]:
    """The tests to confirm: red findings with a test id, one per test, the most severe finding
    of each kind first (highest rate first within a kind), then the next of each kind."""
    by_name = {p.name: p for p in phases}
    queues: dict[str, list[Finding]] = {k: [] for k in CONFIRM_KINDS}
    for f in findings:
        src = by_name.get(f.phase)
        if f.kind in queues and f.test_id and src is not None and src.test_command is not None:
            queues[f.kind].append(f)
    for q in queues.values():
        q.sort(key=lambda f: -(f.count / f.runs) if f.runs else 0.0)  # stable: ties keep their order
    out: list[Target] = []
    while len(out) < MAX_TARGETS and any(queues.values()):
        for kind in CONFIRM_KINDS:
            q = queues[kind]
            while q and any(t.test_id == q[0].test_id for t in out):
                q.pop(0)
            if q and len(out) < MAX_TARGETS:
                f = q.pop(0)
                out.append(Target(test_id=f.test_id, kind=f.kind, phase=f.phase))
    return out


def event(p: Phase, test_id: str) -> str:
    """What a run alone showed of its test: crashed, hung, failed, passed or no result."""
    tc = p.tests.get(test_id)
    if p.crash or (p.signal is not None and not p.infra):
        return "crashed"
    if p.hang or p.timed_out or (tc is not None and tc.outcome == "timeout"):
        return "hung"
    if tc is not None:
        return "passed" if tc.outcome in PASSED else "failed"
    if p.exit_code == 1:  # one test selected, pytest says a test failed
        return "failed"
    return "passed" if p.exit_code in (0, 5) else "no result"


SAME_EVENT = {"ft-crash": "crashed", "crash": "crashed", "hang": "hung", "ft-race": "failed"}


def _dump(p: Phase) -> str:
    """faulthandler's dump of every thread (parse.crash), else the run's log tail."""
    return (p.crash.excerpt if p.crash else "") or p.excerpt


def _otherwise(runs: Sequence[Phase], test_id: str, same: str) -> str:
    """The runs alone that ended in another event than the finding's, said per mode: 'failed
    without crashing 2/2 with the GIL off, 2/2 with the GIL on'."""
    words = {"crashed": "crashed", "hung": "timed out", "failed": "failed",
             "no result": "gave no result"}
    parts = []
    for what in ("crashed", "hung", "failed", "no result"):
        if what == same:
            continue
        per = []
        for m in sorted({p.gil for p in runs if p.gil is not None}):
            mine = [p for p in runs if p.gil == m]
            k = sum(1 for p in mine if event(p, test_id) == what)
            if k:
                per.append(f"{k}/{len(mine)} with the GIL {'off' if m == 0 else 'on'}")
        if per:
            tail = " without crashing" if same == "crashed" and what == "failed" else ""
            parts.append(f"{words[what]}{tail} {', '.join(per)}")
    return "; ".join(parts)


def _alone_runs(f: Finding, confirm: Sequence[Phase]) -> list[Phase]:
    return [p for p in confirm if p.test_command is not None and p.test_command.paths == (f.test_id,)]


def rate(f: Finding) -> str:
    """A confirmed finding's rate over every run that could show it: the suite's repetitions in
    its modes (``count``/``runs``) plus its runs alone in those modes (``confirmed``)."""
    k, total = f.count, f.runs
    for m in f.modes:
        hit, _, n = f.confirmed.get(f"gil{m}", "0/0").partition("/")
        k, total = k + int(hit), total + int(n)
    where = " or ".join(f"with the GIL {'off' if m == 0 else 'on'}" for m in f.modes)
    return f"{k}/{total} runs {where}".rstrip()


def apply(findings: Sequence[Finding], phases: Sequence[Phase]) -> list[Finding]:
    """The findings with what the runs alone showed (see the module docstring)."""
    confirm = [p for p in phases if p.kind == "confirm"]
    if not confirm:
        return list(findings)
    out = []
    for f in findings:
        runs = _alone_runs(f, confirm) if f.kind in CONFIRM_KINDS and f.test_id else []
        if not runs:
            out.append(f)
            continue
        modes = sorted({p.gil for p in runs if p.gil is not None})
        same = SAME_EVENT[f.kind]
        hit = {m: [p for p in runs if p.gil == m and event(p, f.test_id) == same] for m in modes}
        n = {m: len([p for p in runs if p.gil == m]) for m in modes}
        confirmed = {f"gil{m}": f"{len(hit[m])}/{n[m]}" for m in modes}
        said = ", ".join(f"{len(hit[m])}/{n[m]} with the GIL {'off' if m == 0 else 'on'}" for m in modes)
        otherwise = _otherwise(runs, f.test_id, same)
        k = sum(len(v) for v in hit.values())
        g = replace(f, confirmed=confirmed)
        seen = rate(g)  # the suite's runs and the runs alone, in the modes it was found in
        if f.kind in ("ft-crash", "crash"):
            alone = next((p for m in modes for p in hit[m] if p.crash or p.signal is not None), None)
            if alone is not None:
                c = alone.crash or Crash()
                sig = c.signal or alone.signal
                top = c.stack_top or c.test_frame
                fatal = c.fatal or "killed"
                g = replace(g, signal=sig if sig is not None else f.signal, stack_top=top or f.stack_top,
                            excerpt=_dump(alone) or f.excerpt,
                            message=f"{f.message.replace('(signal None)', f'(signal {sig})')}"
                                    f"; alone: {fatal}, signal {sig}")
        elif f.kind == "hang":
            alone = next((p for m in modes for p in hit[m] if p.hang), None)
            if alone is not None and alone.hang and alone.hang.excerpt:
                g = replace(g, excerpt=alone.hang.excerpt, stack_top=alone.hang.stack_top or f.stack_top)
        if f.kind in ("ft-race", "ft-crash") and hit.get(1):  # alone, it fails with the GIL on too
            g = replace(g, kind="thread-unsafe" if f.kind == "ft-race" else "crash", modes=(0, 1),
                        message=f"{g.message}; alone it fails with the GIL on too "
                                f"({len(hit[1])}/{n[1]}): not only without the GIL")
        if k == 0 and f.count <= 1 and same != "crashed":
            g = replace(g, kind="unconfirmed",
                        message=f"{f.kind} seen once ({f.ratio}) and not again alone ({said}); "
                                f"in all {seen}: {g.message}")
        elif k == 0:
            g = replace(g, message=f"{g.message}; did not recur alone ({said}); in all {seen}")
        else:
            g = replace(g, message=f"{g.message}; recurred alone {said}; in all {seen}")
        if otherwise:
            g = replace(g, message=f"{g.message}; alone it {otherwise}")
        out.append(g)
    return out
