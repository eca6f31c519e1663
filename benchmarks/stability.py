"""Section "stability": how often the harness claims a difference that is not there, finds one
that is, and says the same thing twice (issue #47). Not a timed test: error rates, measured.

Each round runs, at the harness's default settings (``Settings()``: threads 4, iterations 5,
repeat 4, confirm 20, gil_on targeted), on the local backend:

- ``ft_nullflaky``: 40 tests that each fail in about 40% of threaded runs with the GIL on and off
  alike. Any ``ft-race`` (verdict or finding) is a false claim;
- ``ft_halfrace``: one test that fails in about half the GIL-off threaded runs, never with the
  GIL on. An ``ft-race`` verdict is a detection;
- optionally real packages (``--stability-real``), whose verdicts between rounds should agree.

Written: ``false_claim_rate`` (rounds of the null fixture with any ft-race), ``detection_rate``
(rounds of the planted one with an ft-race verdict), ``identical`` (per package, the fraction of
pairs of rounds with the same verdict), with every round's verdict and the runs alone it took.
``tally`` is unit-tested in tests/unit/benchmarks/test_bench_stability.py.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .common import fixture, results, run_cli, write_matrix

log = logging.getLogger(__name__)
NULL, PLANTED = "ft_nullflaky", "ft_halfrace"
JOBS = 2


def _round_facts(res: Mapping[str, Any]) -> dict[str, Any]:
    """What one job's result says for the section: its verdict, its ft-race findings, its runs alone."""
    findings = res.get("findings") or []
    confirm = [p for p in res.get("phases") or [] if p.get("kind") == "confirm"]
    return {
        "verdict": res.get("verdict", ""),
        "ft_race": [f.get("test_id", "") for f in findings if f.get("kind") == "ft-race"],
        "unconfirmed": sum(1 for f in findings if f.get("kind") == "unconfirmed"),
        "runs_alone": len(confirm),
        "confirm_seconds": round(sum(float(p.get("duration") or 0) for p in confirm), 1),
        "seconds": round(sum(float(p.get("duration") or 0) for p in res.get("phases") or []), 1),
    }


def tally(rounds: Sequence[Mapping[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """The section's figures from each round's facts per package (``_round_facts``)."""

    def frac(k: int, n: int) -> dict[str, Any]:
        return {"k": k, "n": n, "rate": round(k / n, 3) if n else None, "said": f"{k}/{n}"}

    null = [r[NULL] for r in rounds if NULL in r]
    planted = [r[PLANTED] for r in rounds if PLANTED in r]
    false = sum(1 for f in null if f["verdict"] == "ft-race" or f["ft_race"])
    found = sum(1 for f in planted if f["verdict"] == "ft-race")
    identical: dict[str, Any] = {}
    for name in sorted({n for r in rounds for n in r}):
        verdicts = [r[name]["verdict"] for r in rounds if name in r]
        pairs = list(itertools.combinations(verdicts, 2))
        identical[name] = frac(sum(1 for a, b in pairs if a == b), len(pairs))
    return {
        "false_claim_rate": frac(false, len(null)),
        "detection_rate": frac(found, len(planted)),
        "identical": identical,
    }


def measure(tmp: Path, rounds: int = 10, real: Sequence[dict[str, str]] = ()) -> dict[str, Any]:
    packages = [fixture(NULL), fixture(PLANTED), *real]
    per_round: list[dict[str, dict[str, Any]]] = []
    for i in range(rounds):
        m = write_matrix(tmp / f"stability-{i}.yaml", packages, settings={})  # the defaults
        out = tmp / f"out-stability-{i}"
        log.info("stability: round %d of %d", i + 1, rounds)
        run = run_cli(
            "run",
            "--matrix",
            str(m),
            "--out",
            str(out),
            "--backend",
            "local",
            "--force",
            "--jobs",
            str(JOBS),
            timeout=7200,
        )
        facts = {r["package"]: _round_facts(r) for r in results(out).values()}
        for f in facts.values():
            f["round_wall"] = run.wall
        per_round.append(facts)
        log.info("stability: round %d: %s", i + 1, {k: v["verdict"] for k, v in facts.items()})
    return {
        "rounds": rounds,
        "packages": [p["name"] for p in packages],
        "settings": "defaults",
        **tally(per_round),
        "per_round": per_round,
        "procedure": operating_table(1000),
        "on_a_budget": [budgeted([(0.75, 0.0)] + [(0.3, 0.3)] * 7, b) for b in (16, 24, 40, 80)],
    }


# ----------------------------------------------------------------------------- the procedure's numbers


def operating(
    cands: Sequence[tuple[float, float]], most: int = 20, repeat: int = 4, trials: int = 2000, seed: int = 47
) -> dict[str, Any]:
    """What the procedure gives on a job whose tests fail at (GIL off, GIL on) rates ``cands`` per
    threaded run, by simulation through the harness's own code. Each test has ``repeat`` GIL-off
    suite runs and, when one of them failed (``gil_on: targeted``), ``repeat`` GIL-on ones: failing
    only with the GIL off nominates it as "only with the GIL off", in both modes as thread-unsafe
    (the ``MAX_UNSAFE`` highest rates). ``verdict.confirm.done`` stops each candidate's interleaved
    runs alone; ``util.stats`` decides the job's family, ``verdict.confirm.rate_need`` a
    thread-unsafe rate. Returns the share of jobs that claim "only without the GIL" for the first
    test (the power when its rates differ) and for any test whose rates are equal (a false
    claim), the share whose verdict is thread-unsafe (a rate that holds), and the mean runs alone a
    nominated candidate took."""
    import random

    from harness.core.model import Phase, TestCase, TestCommand
    from harness.util.stats import fisher_greater, holm
    from harness.verdict.confirm import MAX_UNSAFE, Target, done, rate_need

    def phase(name: str, kind: str, m: int, tid: str, failed: bool) -> Phase:
        return Phase(
            name=name,
            kind=kind,
            gil=m,
            tests={tid: TestCase(outcome="failed" if failed else "passed")},
            test_command=TestCommand(head=("python",), paths=(tid,)),
        )

    rng = random.Random(seed)
    first = false = unsafe = runs = nominated = 0
    for _ in range(trials):
        ps: list[float] = []
        who: list[int] = []
        jobs: list[tuple[int, str, list[Phase], float]] = []  # (test, kind, its suite runs, suite rate)
        for c, (off, on) in enumerate(cands):
            tid = f"t{c}"
            suite = [phase(f"threads-gil0-r{r}", "threads", 0, tid, rng.random() < off) for r in range(repeat)]
            if not any(p.tests[tid].outcome == "failed" for p in suite):
                continue  # the suite's runs did not nominate it (nor run it with the GIL on)
            suite += [phase(f"threads-gil1-r{r}", "threads", 1, tid, rng.random() < on) for r in range(repeat)]
            bad = sum(p.tests[tid].outcome == "failed" for p in suite)
            on_bad = any(p.gil == 1 and p.tests[tid].outcome == "failed" for p in suite)
            jobs.append((c, "thread-unsafe" if on_bad else "ft-race", suite, bad / len(suite)))
        races = [j for j in jobs if j[1] == "ft-race"]
        both = sorted((j for j in jobs if j[1] == "thread-unsafe"), key=lambda j: -j[3])[:MAX_UNSAFE]
        held_unsafe = False
        for c, kind, suite, _ in races + both:
            nominated += 1
            tid = f"t{c}"
            off, on = cands[c]
            t = Target(test_id=tid, kind=kind, phase="threads-gil0-r1")
            phases = list(suite)
            while not done(t, phases, most, (0, 1)):
                for m, rate in ((0, off), (1, on)):
                    phases.append(phase(f"c{len(phases)}", "confirm", m, tid, rng.random() < rate))
            alone = phases[len(suite) :]
            runs += len(alone)
            k = {m: sum(1 for p in alone if p.gil == m and p.tests[tid].outcome == "failed") for m in (0, 1)}
            n = {m: sum(1 for p in alone if p.gil == m) for m in (0, 1)}
            if kind == "ft-race" and k[1] == 0:
                ps.append(fisher_greater(k[0], n[0], k[1], n[1]))
                who.append(c)
            elif k[0] + k[1] >= rate_need(phases, tid, most, (0, 1))[0]:
                held_unsafe = True  # fails in threads with the GIL on too, at a rate that holds
        held = holm(ps)
        first += any(h and c == 0 for h, c in zip(held, who, strict=True))
        false += any(h and cands[c][0] == cands[c][1] for h, c in zip(held, who, strict=True))
        unsafe += held_unsafe
    return {
        "tests": [list(c) for c in cands],
        "confirm": most,
        "repeat": repeat,
        "trials": trials,
        "claimed_first": round(first / trials, 4),
        "false_claim": round(false / trials, 4),
        "thread_unsafe": round(unsafe / trials, 4),
        "nominated_per_job": round(nominated / trials, 2),
        "runs_alone_per_candidate": round(runs / max(1, nominated), 1),
    }


def operating_table(trials: int = 2000) -> list[dict[str, Any]]:
    """The procedure's numbers at the defaults, for docs/explanation/evidence.md."""
    null = [(0.4, 0.4)] * 40  # ft_nullflaky
    cases = [
        null,
        [(0.4, 0.4)],
        [(0.125, 0.125)],
        [(0.125, 0.125)] * 10,
        [(0.05, 0.05)] * 40,
        [(0.1, 0.0)],
        [(0.3, 0.0)],
        [(0.5, 0.0)],
        [(0.5, 0.0), *null],
        [(0.9, 0.0)],
    ]
    return [
        *(operating(c, trials=trials) for c in cases),
        *(operating(c, trials=trials, repeat=3) for c in ([(0.4, 0.4)], [(0.125, 0.125)])),
    ]


def lines(d: Mapping[str, Any]) -> list[str]:
    """The section as markdown for benchmarks/results/latest.md."""
    out = [
        "## Stability (issue #47): false claims, detection, the same verdict twice",
        "",
        f"{d['rounds']} rounds at the defaults, local backend: `{NULL}` (null) {d['false_claim_rate']['said']} "
        f"rounds with an ft-race (false claims); `{PLANTED}` (planted race) {d['detection_rate']['said']} "
        "rounds ft-race (detection).",
        "",
        "| package | identical verdicts (pairs of rounds) |",
        "|---|---|",
    ]
    out += [f"| {name} | {v['said']} |" for name, v in d.get("identical", {}).items()]
    if d.get("procedure"):
        out += [
            "",
            "The procedure by simulation (docs/explanation/evidence.md): "
            + "; ".join(
                f"{len(r['tests'])} test(s) starting {r['tests'][0]}: claimed {r['claimed_first']:.1%}, "
                f"false {r['false_claim']:.1%}"
                for r in d["procedure"]
            ),
        ]
    if d.get("on_a_budget"):  # issue #58: the runs alone sequential, strongest first, vs round-robin
        out += [
            "",
            "Runs alone on a budget (a 75% GIL-off race first, 7 decoys at 30% in both modes): "
            + "; ".join(
                f"{r['budget']} runs: held {r['sequential']['first_held']:.0%} sequentially, "
                f"{r['round_robin']['first_held']:.0%} round-robin"
                for r in d["on_a_budget"]
            ),
        ]
    return out


# ----------------------------------------------------------------------------- the runs alone on a budget


def budgeted(
    cands: Sequence[tuple[float, float]], budget: int, *, most: int = 20, trials: int = 400, seed: int = 58
) -> dict[str, Any]:
    """Issue #58: "only without the GIL" candidates, each failing alone at (GIL off, GIL on) rates
    ``cands`` (the first the strongest, nominated first), with ``budget`` runs alone in all:
    the share of jobs whose first candidate holds, and whose any candidate with equal rates holds
    (a false claim), with the runs alone scheduled by the harness (``verdict.confirm.next_run``:
    sequential, strongest first) and, for comparison, round-robin (every candidate's pair, then
    the next round: the order before #58). ``verdict.confirm.done`` stops both; Holm's family
    is formed as ``verdict.modes`` forms it (the candidates with runs alone in both modes)."""
    import random

    from harness.core.model import Phase, TestCase, TestCommand
    from harness.util.stats import fisher_greater, holm
    from harness.verdict.confirm import Target, done, next_run

    chosen = [Target(test_id=f"t{i}", kind="ft-race", phase="threads-gil0-r1") for i in range(len(cands))]
    rng = random.Random(seed)

    def alone(t: Target, m: int) -> Phase:
        failed = rng.random() < cands[int(t.test_id[1:])][m]
        return Phase(
            name="confirm",
            kind="confirm",
            gil=m,
            tests={t.test_id: TestCase(outcome="failed" if failed else "passed")},
            test_command=TestCommand(head=("python",), paths=(t.test_id,)),
        )

    def sequential() -> list[Phase]:
        phases: list[Phase] = []
        while len(phases) < budget and (run := next_run(chosen, phases, most, (0, 1))) is not None:
            phases.append(alone(run.target, run.mode))
        return phases

    def round_robin() -> list[Phase]:
        phases: list[Phase] = []
        for _ in range(most):
            for t in chosen:
                if not done(t, phases, most, (0, 1)):
                    phases += [alone(t, m) for m in (0, 1)][: budget - len(phases)]
        return phases

    def held(phases: list[Phase]) -> tuple[bool, bool]:
        ps, who = [], []
        for t in chosen:
            mine = [p for p in phases if p.test_command is not None and p.test_command.paths == (t.test_id,)]
            k = {m: sum(1 for p in mine if p.gil == m and p.tests[t.test_id].outcome == "failed") for m in (0, 1)}
            n = {m: sum(1 for p in mine if p.gil == m) for m in (0, 1)}
            if n[0] and n[1] and not k[1]:
                ps.append(fisher_greater(k[0], n[0], 0, n[1]))
                who.append(int(t.test_id[1:]))
        hit = [c for h, c in zip(holm(ps), who, strict=True) if h]
        return 0 in hit, any(cands[c][0] == cands[c][1] for c in hit)

    out: dict[str, Any] = {"tests": [list(c) for c in cands], "budget": budget, "confirm": most, "trials": trials}
    for name, schedule in (("sequential", sequential), ("round_robin", round_robin)):
        got = [held(schedule()) for _ in range(trials)]
        out[name] = {"first_held": sum(g[0] for g in got) / trials, "false_claim": sum(g[1] for g in got) / trials}
    return out
