"""Per-test outcomes across a job's phases -> findings -> one verdict (issue #4).

The table of outcomes is test id x phase (plain/threads x GIL mode x repetition).
Rules, in the order of model.VERDICTS (most severe first):

- build-failure / infra-error: the install phase failed (compiler error vs pip,
  network, disk, timeout); a later phase the backend could not run, or whose
  pytest died of a usage/internal error, is infra-error.
- ft-crash: a test crashed (signal) with the GIL off and never with it on;
  crash: it crashed with the GIL on (in both modes, or only with it on).
- hang: pytest-timeout fired (or the watchdog), or the job-level timeout killed the phase
  while a test ran past ``test_timeout`` or after pytest's summary; killed while the suite
  was still making progress it is ``budget-spent`` (shown; infra-error if nothing is red).
  A test that timed out only in threaded runs and whose plain time x threads x iterations is
  already past ``test_timeout`` is ``slow-in-threads`` (shown, never the verdict): one thread
  after another it could not have finished, so the timeout says nothing of a hang.
- ft-race: passes in every plain run, fails in some GIL-off threaded runs and
  in no GIL-on threaded run; ``k/R`` = failing GIL-off repetitions / all of them.
- thread-unsafe: passes in plain runs, fails in threaded runs with the GIL on
  (in both modes, or only with it on).
- gil-reenabled: the probe saw the GIL re-enabled on import (modules named).
- baseline-failure: fails in a plain run (with the GIL on; GIL-off-only plain
  failures too, marked with that mode).  Such tests are blamed for nothing else
  that a failure would show (ft-race, thread-unsafe); crashes and hangs still count.
- no-tests: no test ran anywhere (only the probe counts); else compatible.

Then confirmation (``verdict.confirm``): the test of each ft-crash, crash, hang and ft-race
finding is re-run alone ``settings.confirm`` times per GIL mode; a race or hang seen once that
never recurs alone becomes ``unconfirmed``, and a crash gets its signal and stack from a run
alone. Last, every claim about the GIL modes is checked against all the runs
(``verdict.modes``): none from one mode's runs, and ``ft-race`` only where the counts hold it.

``no-thread-coverage`` (0 tests ran in threads), ``unconfirmed``, ``slow-in-threads`` and
``repeat-failure`` (a test run single-threaded there failing only in the threaded runs) are shown
but never decide.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from packaging.utils import canonicalize_name

from ..core.evidence import NOT_INSTALLED_KIND, Crash, HungTest, ModeCoverage, Probe
from ..core.jobspec import Settings
from ..core.model import INFO_KINDS, Finding, Phase, severity
from ..parse import incomplete, probe_of
from ..parse import setup as parse_setup
from ..parse.gil import warning_lines
from ..parse.hang import timed_out_inside_pytest
from ..parse.install import classify_install
from . import fallback
from .buildenv import build_env_finding
from .clean import CLEAN, qualify, rules_out
from .confirm import apply as apply_confirmation
from .coverage import compute as compute_coverage
from .coverage import findings as coverage_findings
from .coverage import qualifier as coverage_qualifier
from .modes import check as check_modes
from .ranrun import mostly_errors, never_started, outside_config, refused_arguments
from .reprocommands import probe_command, reproduce
from .setupfind import deps_finding, setup_finding, setup_step_finding
from .tsan import tsan_findings

__all__ = ["Decision", "decide"]

log = logging.getLogger(__name__)

BAD = ("failed", "error")
RUN_KINDS = ("plain", "threads")
PYTEST_BROKE = (3, 4)  # internal error, usage error: pytest itself, not a test


@dataclass(frozen=True, kw_only=True)
class Decision:
    verdict: str
    qualifier: str = ""
    findings: tuple[Finding, ...] = ()
    coverage: dict[str, ModeCoverage] = field(default_factory=dict)
    rules_out: str = ""  # a clean verdict: the failure rate its runs rule out (util.stats.bound_text)


# ------------------------------------------------------------------ findings


def _install_findings(phase: Phase, settings: Settings) -> list[Finding]:
    if phase.ok:
        return []
    env = build_env_finding(phase)  # the build machine lacked something: not the package (#43)
    if env is not None:
        return [env]
    kind, evidence, excerpt = classify_install(phase.excerpt, timed_out=phase.timed_out, infra=phase.infra)
    if evidence == "timeout":  # most often a source build longer than the budget: say which knob
        message = (
            f"harness problem during install: the {phase.name} timed out after "
            f"{phase.duration:.0f} s (settings.install_timeout {settings.install_timeout} s, "
            f"job_timeout {settings.job_timeout} s); a long source build needs them raised"
        )
    elif kind == "build-failure" and evidence != "compiler":
        message = f"install failed: {excerpt}"
    elif kind == "build-failure":
        message = f"does not build for the free-threaded interpreter: {excerpt}"
    else:
        message = f"harness problem during install: {excerpt}"
    return [
        Finding(
            kind=kind,
            evidence=evidence,
            excerpt=excerpt if excerpt in phase.excerpt else f"{excerpt}\n{phase.excerpt[-1500:]}",
            message=message[:300],
            reproduce=reproduce(phase, None),
            phase=phase.name,
        )
    ]


def _broken_run(phase: Phase) -> Finding | None:
    """A plain/threads phase that gave no usable result, through no fault of a test."""
    cut = incomplete(phase)
    if phase.infra:
        why = f"the backend failed: {phase.infra}"
    elif phase.oom_killed:
        why = "out of memory: the run hit its memory limit and was killed"
    elif cut:
        why = f"its results are incomplete: {cut}"
    elif (
        phase.exit_code in PYTEST_BROKE
        and not phase.crash
        and not phase.timed_out
        and not timed_out_inside_pytest(phase.tests)
    ):
        what = "an internal error" if phase.exit_code == 3 else "a usage error"
        why = f"pytest stopped with {what} (exit code {phase.exit_code})"
    elif phase.tests or phase.crash or phase.hang:
        return None
    elif phase.exit_code == 2:
        why = "pytest was interrupted before running tests (exit code 2)"
    elif phase.exit_code not in (0, 5, None) or phase.signal:
        why = f"exit code {phase.exit_code}, and no test results could be read"
    else:
        return None
    if phase.setup and not phase.infra and not phase.oom_killed:
        return setup_finding("infra-error", phase, [], f"{phase.name}: the suite could not run")
    return Finding(
        kind="infra-error",
        modes=(phase.gil,) if phase.gil is not None else (),
        evidence="log",
        excerpt=phase.excerpt[-2000:] or "(empty log)",
        message=f"{phase.name}: {why}",
        reproduce=reproduce(phase, None),
        phase=phase.name,
    )


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


def _crash_findings(phases: Sequence[Phase], ran_modes: set[int]) -> list[Finding]:
    seen: dict[str, list[tuple[Phase, Crash]]] = {}
    for p in phases:
        if p.kind not in RUN_KINDS:
            continue
        for c in p.crashes:
            seen.setdefault(c.test_id, []).append((p, c))
    out = []
    for tid, hits in seen.items():
        modes = tuple(sorted({p.gil for p, _ in hits if p.gil is not None}))
        kind = "ft-crash" if modes == (0,) and 1 in ran_modes else "crash"
        relevant = [p for p in phases if p.kind in RUN_KINDS and p.gil in modes]
        first_p, first_c = hits[0]
        sig = first_c.signal
        where = f"{tid} " if tid else "the test process "
        mode_txt = "with the GIL off only" if kind == "ft-crash" else f"in modes {list(modes)}"
        out.append(
            Finding(
                kind=kind,
                test_id=tid,
                modes=modes,
                count=len(hits),
                runs=len(relevant),
                evidence="signal",
                excerpt=first_c.excerpt,
                signal=sig,
                stack_top=first_c.test_frame or first_c.stack_top,
                message=f"{where}crashed ({first_c.fatal or f'signal {sig}'}) {mode_txt}",
                reproduce=reproduce(first_p, tid or None),
                phase=first_p.name,
            )
        )
    return out


def _plain_seconds(phases: Sequence[Phase], tid: str) -> float:
    """The longest time ``tid`` took where it passed in a plain run (0: none known)."""
    return max(
        (
            p.tests[tid].seconds
            for p in phases
            if p.kind == "plain" and tid in p.tests and p.tests[tid].outcome == "passed"
        ),
        default=0.0,
    )


def _too_slow(phases: Sequence[Phase], tid: str, kinds: Sequence[str], settings: Settings) -> tuple[float, float]:
    """(its time alone, its serial cost: that x threads x iterations) for a test that timed out
    only in threaded runs, when the cost is at least test_timeout; else (0, 0)."""
    if not tid or list(kinds) != ["threads"]:
        return 0.0, 0.0
    alone = _plain_seconds(phases, tid)
    cost = alone * settings.threads * settings.iterations
    return (alone, cost) if cost >= settings.test_timeout else (0.0, 0.0)


def _hang_findings(phases: Sequence[Phase], settings: Settings) -> list[Finding]:
    seen: dict[str, list[tuple[Phase, HungTest]]] = {}
    for p in phases:
        if p.kind not in RUN_KINDS or not p.hang:
            continue
        for t in p.hang.tests:
            seen.setdefault(t.test_id, []).append((p, t))
        if p.hang.job_timeout and not p.hang.tests and not p.hang.spent:
            seen.setdefault(p.hang.running, []).append((p, HungTest(test_id=p.hang.running, excerpt=p.hang.why)))
    out = []
    for tid, hits in seen.items():
        modes = tuple(sorted({p.gil for p, _ in hits if p.gil is not None}))
        kinds = sorted({p.kind for p, _ in hits})
        first_p, first = hits[0]
        if not tid and not any(p.tests for p, _ in hits):  # silent before any test started
            out.append(never_started(first_p, first, modes))
            continue
        alone, cost = _too_slow(phases, tid, kinds, settings)
        if cost:
            out.append(
                Finding(
                    kind="slow-in-threads",
                    test_id=tid,
                    modes=modes,
                    count=len(hits),
                    evidence="timeout",
                    excerpt=first.excerpt,
                    phase=first_p.name,
                    reproduce=reproduce(first_p, tid),
                    message=(
                        f"{tid} timed out in threaded runs, modes {list(modes)}, but it takes "
                        f"{alone:.1f} s alone: {settings.threads} threads x "
                        f"{settings.iterations} iterations is {cost:.0f} s one after another, past "
                        f"test_timeout {settings.test_timeout} s; too slow to tell, not a hang. "
                        f"Raise `settings.test_timeout` past {cost:.0f} s to test it in threads"
                    ),
                )
            )
            continue
        out.append(
            Finding(
                kind="hang",
                test_id=tid,
                modes=modes,
                count=len(hits),
                runs=len([p for p in phases if p.kind in kinds and p.gil in modes]),
                evidence="timeout",
                excerpt=first.excerpt,
                stack_top=first.stack_top,
                message=f"{tid or 'a test'} timed out in {'/'.join(kinds)} runs, modes {list(modes)}"
                + (
                    "; the job's budget (job_timeout) ended that run while the test was still running past test_timeout"
                    if first_p.hang and first_p.hang.job_timeout
                    else ""
                ),
                reproduce=reproduce(first_p, tid or None),
                phase=first_p.name,
            )
        )
    return out


def _budget_findings(phases: Sequence[Phase], settings: Settings) -> list[Finding]:
    """The job's budget ran out mid-suite (``Hang.spent``), or cut the job before a planned
    threaded run could start (the last phase timed out with a mode's threaded runs missing:
    packaging 26.4's 64,207 tests took the budget before the first threaded run): the runs are
    not whole. Shown; the verdict (infra-error) only when nothing that ran is red."""
    cut = [(p, p.hang.why) for p in phases if p.hang and p.hang.spent]
    missing = [m for m in settings.gil_modes if not any(p.kind == "threads" and p.gil == m for p in phases)]
    last = next((p for p in phases if p.timed_out and p.kind in RUN_KINDS), None) or (
        next((p for p in phases if p.timed_out and p.kind == "collect"), None) if missing else None
    )
    if not cut and settings.repeat and last is not None:  # cut by the budget (whatever else it showed)
        modes = " or ".join(f"with the GIL {'off' if m == 0 else 'on'}" for m in missing)
        cut = [
            (
                last,
                f"{last.name} timed out after {last.duration:.0f} s"
                + (
                    f": no threaded run {modes} happened"
                    if missing
                    else ": the runs after it, and the runs alone that confirm findings, did not"
                ),
            )
        ]
    if not cut:
        return []
    p, why = cut[0]
    return [
        Finding(
            kind="budget-spent",
            evidence="timeout",
            excerpt=why,
            phase=p.name,
            message=(
                f"the job's budget (job_timeout {settings.job_timeout} s) ran out during {p.name} "
                "with the suite still running; later runs did not start. Raise `settings.job_timeout` "
                "in matrix.yaml or narrow the package's `tests`"
            ),
            reproduce=reproduce(p, None),
        )
    ]


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
    )


def _failure_findings(
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
        bad_by_mode = {m: [p for p in threads if p.gil == m and row.get(p.name) in BAD] for m in ran_modes}
        fail_modes = tuple(sorted(m for m, ps in bad_by_mode.items() if ps))
        if not fail_modes:
            continue
        modes: tuple[int, ...] = fail_modes
        if fail_modes == (0,):
            kind = "ft-race"
            why = "fails in threaded runs with the GIL off only; passes in plain runs"
        elif fail_modes == (1,) and 0 in ran_modes:
            kind = "thread-unsafe"
            why = (
                "fails in threaded runs with the GIL on, not in its GIL-off ones: not thread-safe regardless of the GIL"
            )
        else:
            kind = "thread-unsafe"
            why = "fails in threaded runs with the GIL on too: not thread-safe regardless of the GIL"
        hits = [p for m in modes for p in bad_by_mode[m]]
        runs = [p for p in threads if p.gil in modes and p.name in row]
        if tid in single:  # pytest-run-parallel never ran it in threads: not a thread finding
            kind, why = (
                "repeat-failure",
                (
                    f"fails in the threaded runs, which ran it single-threaded ({single[tid]}), and passes "
                    "in plain runs: its repetition there (--iterations on one fixture instance) or an "
                    "earlier test's state, not threads"
                ),
            )
        out.append(
            _junit_finding(
                kind,
                tid,
                modes,
                hits[0],
                len(hits),
                len(runs),
                f"{tid} {why} ({len(hits)}/{len(runs)} threaded runs "
                f"{'with the GIL off' if modes == (0,) else 'with the GIL on' if modes == (1,) else 'of both modes'})",
            )
        )
    ran = any(tc.outcome == "passed" for p in plain for tc in p.tests.values())
    if fb and fb_tests:  # its compiled modules were never installed: a setup fact (verdict.fallback)
        out.append(fallback.finding(fb, fb_tests, fb_mods, phases, ran=ran))
    if setup_tests:
        first = next(iter(setup_tests.values()))
        kind = "setup-error" if ran else "infra-error"  # shown; the verdict only if nothing ran
        missing = frozenset(
            canonicalize_name(s.name)
            for p in phases
            if p.kind == "setup"
            for s in p.setup
            if s.kind == NOT_INSTALLED_KIND
        )
        out.append(
            setup_finding(kind, first, sorted(setup_tests), f"{len(setup_tests)} test(s) could not run", missing)
        )
    return out, baseline


def _single_threaded(phases: Sequence[Phase]) -> dict[str, str]:
    """test id -> why pytest-run-parallel ran it single-threaded, from its trusted accounts (the
    collect-only run, or a threaded run without xdist)."""
    out: dict[str, str] = {}
    for p in phases:
        if p.parallel is not None and p.parallel.trusted:
            out.update(p.parallel.single)
    return out


def _junit_finding(
    kind: str, tid: str, modes: tuple[int, ...], first: Phase, count: int, runs: int, message: str
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
    )


def _own_module(mod: str, own: Sequence[str]) -> bool:
    """Whether ``mod`` is one of the package's import packages or under one (no names: assume so)."""
    return not own or any(mod == o or mod.startswith(f"{o}.") for o in own)


def _gil_findings(phases: Sequence[Phase], probe: Probe) -> list[Finding]:
    probe_phase = next((p for p in phases if p.kind == "probe"), None)
    modules: list[str] = list(probe_phase.gil_modules) if probe_phase else []
    modules += [mod for mod in dict.fromkeys(probe.modules) if mod not in modules]
    if not modules and not probe.gil_enabled:
        return []
    text = "\n".join([probe_phase.excerpt if probe_phase else "", *probe.warnings])
    cmd = probe_command(probe_phase, phases, modules[0] if modules else "")
    if not modules:
        return [
            Finding(
                kind="gil-reenabled",
                evidence="log",
                excerpt=f"sys._is_gil_enabled() is True after importing {list(probe.imported)}",
                message="GIL re-enabled on import (no module named in a warning)",
                reproduce=cmd,
                phase=probe_phase.name if probe_phase else "probe",
            )
        ]
    return [
        Finding(
            kind="gil-reenabled",
            module=mod,
            evidence="warning",
            excerpt="\n".join(warning_lines(text, mod)) or f"module '{mod}'",
            message=f"GIL re-enabled by `{mod}`"
            + (
                ""
                if _own_module(mod, probe.imported)
                else (
                    f", not a module of the package: another distribution's, which importing "
                    f"{', '.join(probe.imported)} loads (a dependency, or a test dependency installed beside it)"
                )
            ),
            reproduce=probe_command(probe_phase, phases, mod),
            phase=probe_phase.name if probe_phase else "probe",
        )
        for mod in modules
    ]


def decide(phases: Sequence[Phase], *, settings: Settings, claims: bool = True) -> Decision:
    """The verdict, its qualifier, every finding and the threaded-run coverage of one job.
    ``claims=False``: the findings as the runs show them, before their claims about the GIL
    modes are checked (``verdict.modes``): what confirmation picks its tests from.  Pure over
    the phases: the probe's part comes from the probe phase's ``Phase.probe``, so a result file
    is decided again from itself."""
    probe = probe_of(phases)
    for step in (p for p in phases if p.kind == "install"):  # fetch, then install (each may fail)
        found = _install_findings(step, settings)
        if found:
            return Decision(verdict=found[0].kind, findings=tuple(found))
    outside = [f for p in phases if p.kind in (*RUN_KINDS, "confirm") and (f := outside_config(p))]
    if outside:  # those runs' tests ran under another project's config: they decide nothing
        gone = {f.phase for f in outside}
        phases = [p for p in phases if p.name not in gone]
    runs = [p for p in phases if p.kind in RUN_KINDS]
    ran_modes = {p.gil for p in runs if p.gil is not None}
    findings: list[Finding] = [
        *outside,
        *(f for p in runs if (f := _broken_run(p)) is not None),
        *(f for p in runs if (f := mostly_errors(p)) is not None),
        *(f for p in phases if (f := refused_arguments(p, runs)) is not None),
    ]
    crashes = _crash_findings(phases, ran_modes)
    hangs = _hang_findings(phases, settings)
    blamed = {f.test_id for f in crashes + hangs if f.test_id}
    own = frozenset(probe.imported)
    failures, _baseline = _failure_findings(phases, ran_modes, blamed, own, settings.gil_modes)
    findings += crashes + hangs + failures + _gil_findings(phases, probe) + tsan_findings(phases)
    findings += [
        deps_finding(p) if p.name == "test-deps" else setup_step_finding(p)
        for p in phases
        if p.kind == "setup" and not p.ok
    ]
    findings += _budget_findings(phases, settings)
    cov = compute_coverage(phases)
    findings += coverage_findings(cov, phases)
    findings = apply_confirmation(findings, phases)
    if claims:
        findings = check_modes(findings, phases, settings)
    findings.sort(key=lambda f: (severity(f.kind), f.test_id))
    ran_any = any(tc.outcome != "skipped" for p in runs for tc in p.tests.values()) or any(p.crash for p in runs)
    deciding = [f for f in findings if f.kind not in INFO_KINDS]
    if deciding:
        verdict = deciding[0].kind
    elif any(f.kind == "budget-spent" for f in findings):
        verdict = "infra-error"  # nothing red in what ran, but the runs are not whole
    elif not ran_any:
        verdict = "no-tests"
    else:
        verdict = "compatible"
    qualifier = qualify(verdict, findings, phases, coverage_qualifier(cov, settings))
    return Decision(
        verdict=verdict,
        qualifier=qualifier,
        findings=tuple(findings),
        coverage=cov,
        rules_out=rules_out(phases, settings) if verdict in CLEAN else "",
    )
