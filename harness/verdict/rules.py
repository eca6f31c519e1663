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
- gil-reenabled: the probe saw the GIL re-enabled on import (modules named). A module of the
  package outranks thread-unsafe (issue #57); another distribution's module (a dependency's)
  ranks just after it (``rank``).
- thread-unsafe: passes in plain runs, fails in threaded runs with the GIL on
  (in both modes, or only with it on).
- baseline-failure: fails in a plain run (with the GIL on; GIL-off-only plain
  failures too, marked with that mode).  Such tests are blamed for nothing else
  that a failure would show (ft-race, thread-unsafe); crashes and hangs still count. A test
  whose crash or hang holds its evidence is blamed for nothing else either; a one-off is not.
- no-tests: no test ran anywhere (only the probe counts); else compatible.

Then confirmation (``verdict.confirm``): the test of each ft-crash, crash, hang and ft-race
finding is re-run alone ``settings.confirm`` times per GIL mode; a race or hang seen once that
never recurs alone becomes ``unconfirmed``, and a crash gets its signal and stack from a run
alone. Last, every claim about the GIL modes is checked against all the runs
(``verdict.modes``): none from one mode's runs, and ``ft-race`` only where the counts hold it;
a crash or hang only where its evidence holds (it recurred, or a crash's one observation carries
a fatal-signal dump with a stack), else ``unconfirmed`` with its counts (issue #58).

``no-thread-coverage`` (0 tests ran in threads), ``unconfirmed``, ``slow-in-threads`` and
``repeat-failure`` (a test run single-threaded there failing only in the threaded runs) are shown
but never decide.

This module holds the install, broken-run and gil-reenabled rules and ``decide``, which assembles
the verdict; the crash, hang and budget rules are ``verdict.crashhang``, the rules of tests that
failed (baseline-failure, ft-race, thread-unsafe, repeat-failure) ``verdict.failures``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..core.evidence import ModeCoverage, Probe
from ..core.jobspec import Settings
from ..core.model import INFO_KINDS, Finding, Phase, severity
from ..parse import incomplete, probe_of
from ..parse.gil import warning_lines
from ..parse.hang import timed_out_inside_pytest
from ..parse.install import classify_install, index_lacks
from .buildenv import build_env_finding
from .clean import CLEAN, qualify, rules_out
from .confirm import apply as apply_confirmation
from .coverage import compute as compute_coverage
from .coverage import findings as coverage_findings
from .coverage import qualifier as coverage_qualifier
from .crashhang import RUN_KINDS, budget_findings, crash_findings, hang_findings
from .failures import failure_findings
from .modes import check as check_modes
from .modes import one_off
from .ranrun import mostly_errors, outside_config, refused_arguments
from .reprocommands import probe_command, reproduce
from .setupfind import deps_finding, not_installed_of, setup_finding, setup_step_finding
from .tsan import tsan_findings

__all__ = ["Decision", "decide", "rank"]

log = logging.getLogger(__name__)

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
    elif "No matching distribution found" in excerpt and (lacking := index_lacks(phase.excerpt)):
        message = lacking
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


def _broken_run(phase: Phase, missing: frozenset[str]) -> Finding | None:
    """A plain/threads phase that gave no usable result, through no fault of a test.
    ``missing``: the test deps that did not install (``setupfind.not_installed_of``)."""
    cut = incomplete(phase)
    if phase.infra:
        why = f"the backend failed: {phase.infra}"
    elif phase.oom_killed:
        why = "out of memory: the run went past the limit memory_bytes and was killed (FT_HARNESS_LIMIT_MEMORY_BYTES)"
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
        return setup_finding("infra-error", phase, [], f"{phase.name}: the suite could not run", missing)
    return Finding(
        kind="infra-error",
        modes=(phase.gil,) if phase.gil is not None else (),
        evidence="log",
        excerpt=phase.excerpt[-2000:] or "(empty log)",
        message=f"{phase.name}: {why}",
        reproduce=reproduce(phase, None),
        phase=phase.name,
    )


def _own_module(mod: str, own: Sequence[str]) -> bool:
    """Whether ``mod`` is one of the package's import packages or under one (no names: assume so)."""
    return not own or any(mod == o or mod.startswith(f"{o}.") for o in own)


def rank(f: Finding, own: Sequence[str]) -> tuple[int, int]:
    """A finding's place in the verdict: the order of ``model.VERDICTS`` (a module of the package
    that re-enables the GIL outranks a thread-unsafe suite: issue #57), except that a GIL
    re-enabled by another distribution's module (a dependency's) ranks where it did before, just
    after ``thread-unsafe``. ``own``: the package's import names (the probe's)."""
    if f.kind == "gil-reenabled" and f.module and not _own_module(f.module, own):
        return severity("thread-unsafe"), 1
    return severity(f.kind), 0


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
    missing = not_installed_of(phases)
    findings: list[Finding] = [
        *outside,
        *(f for p in runs if (f := _broken_run(p, missing)) is not None),
        *(f for p in runs if (f := mostly_errors(p)) is not None),
        *(f for p in phases if (f := refused_arguments(p, runs)) is not None),
    ]
    crashes = crash_findings(phases, ran_modes)
    hangs = hang_findings(phases, settings)
    # a test whose crash or hang holds (``modes.one_off``) is blamed for nothing else; a one-off's
    # failures still speak (click 8.5.1: one worker death without a dump, its assertions in both modes)
    blamed = {f.test_id for f in apply_confirmation(crashes + hangs, phases) if f.test_id and not one_off(f)}
    own = frozenset(probe.imported)
    failures, _baseline = failure_findings(phases, ran_modes, blamed, own, settings.gil_modes)
    findings += crashes + hangs + failures + _gil_findings(phases, probe) + tsan_findings(phases)
    findings += [
        deps_finding(p) if p.name == "test-deps" else setup_step_finding(p)
        for p in phases
        if p.kind == "setup" and not p.ok
    ]
    findings += budget_findings(phases, settings)
    cov = compute_coverage(phases)
    findings += coverage_findings(cov, phases)
    findings = apply_confirmation(findings, phases)
    if claims:
        findings = check_modes(findings, phases, settings)
    findings.sort(key=lambda f: (*rank(f, probe.imported), f.test_id))
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
