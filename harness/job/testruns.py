"""The job's last stages (after harness.job.stages' suite setup, install and probe): the test
runs, per GIL mode plain and threaded (under TSan: tsan runs), then the confirmation of their
candidates, each test alone. ``job._steps`` chains them; the workspace is reached through
``ctx.fs`` only (harness.core.wsfs).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date

from .. import verdict
from ..core.gilonrecord import GilOn, targeted
from ..core.model import Phase, TestCommand
from ..core.suiterecord import TestSetup
from ..core.threadplan import ThreadPlan
from ..testsetup.suitesetup import SuiteSetup
from ..verdict import gilon
from ..verdict.confirm import Run, next_run
from . import budgetplan, jobfiles, suite, tsanenv
from .budgetplan import Plan
from .context import JobCtx, PhaseSpec, base_env, run_phase
from .source import Source
from .stages import Installed
from .watchdog import ONLY as ONLY_PLUGIN
from .watchdog import stall_seconds, watchdog_env

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class Suite:
    """The test phases' common parts: the command, where it runs, its environment."""

    command: TestCommand
    cwd: str  # the source tree, or site-packages
    source: str  # the source tree (TSan's source_dir)
    env: dict[str, str]  # without PYTHON_GIL
    watchdog: dict[str, str]  # the watchdog plugin's env ({} under TSan)
    idle: float  # silent this long: frozen (0: never asked)
    threads: tuple[str, ...]  # pytest-run-parallel's options
    record: TestSetup
    gil_on: GilOn | None = None  # what the GIL-on runs ran (run_tests; harness.verdict.gilon)
    plan: Plan | None = None  # the threaded runs planned to the budget (run_tests; harness.job.budgetplan)

    @property
    def thread_plan(self) -> ThreadPlan | None:
        return self.plan.record if self.plan else None


# ------------------------------------------------------------------ test runs


def suite_run(ctx: JobCtx, src: Source, setup: SuiteSetup, installed: Installed) -> Suite:
    """The test command, and where and with what env it runs: from site-packages when the
    install shipped the tests inside the package (jobfiles.site_packages), else the tree."""
    ws, s = ctx.ws, ctx.job.settings
    env = base_env(ctx.job)
    if "PATH" not in env:  # the venv first, as activating it would: a test that runs a
        # console script (numpy's test_configtool runs `numpy-config`) gets the installed one
        env["PATH"] = f"{ws.path('venv', 'bin')}:{ctx.backend.base_path}"
    wenv = {} if ctx.tsan else watchdog_env(ws, env, s.test_timeout)  # plain and threaded runs
    found = jobfiles.site_packages(ctx.fs, setup.installed.tests) if setup.installed else None
    run_from = setup.installed if found and setup.installed else setup.at_source
    at = ws.path(*found[0].split("/")) if found else src.path
    job = replace(ctx.job, package=replace(ctx.job.package, pytest_args=run_from.pytest_args))
    # the config file named by -c (none: an empty one), the source's even from site-packages
    config = f"{src.path}/{setup.config}" if setup.config else ""
    command = suite.command(job, ws, installed.python, run_from.tests, src=at, config=config, pins=setup.tools)
    return Suite(
        command=command,
        cwd=at,
        source=src.path,
        env=env,
        watchdog=wenv,
        idle=stall_seconds(s.test_timeout) if wenv else 0,  # silent past the watchdog: frozen
        threads=(f"--parallel-threads={s.threads}", f"--iterations={s.iterations}"),
        record=run_from.record,
    )


def run_tests(ctx: JobCtx, run: Suite) -> Suite:
    """Per GIL mode: the plain run, then ``repeat`` threaded runs (under TSan: tsan runs); one
    collect-only run after the first plain run. None starts once the job's budget is spent.
    With ``settings.gil_on: targeted`` the GIL-off runs go first and decide what the GIL-on
    runs run (harness.verdict.gilon): the suite, the tests red with the GIL off, or nothing."""
    s = ctx.job.settings
    is_targeted = targeted(s.gil_on, s.gil_modes, tsan=ctx.tsan)
    gil_on = None
    for mode in (0, 1) if is_targeted else s.gil_modes:
        if ctx.spent:
            log.info("%s: the job timeout is spent; no test phase starts now", ctx.job.job_id)
            break
        only: tuple[str, ...] = ()
        if is_targeted and mode == 1:
            gil_on, only = _gil_on(ctx)
            if gil_on.ran == "none":
                break
        _plain(ctx, run, mode, only)
        if mode == (0 if is_targeted else s.gil_modes[0]) and not ctx.spent:
            # what the threaded runs will really run in threads: -n auto hides it, so ask
            # pytest-run-parallel once, without workers; which tests it runs single-threaded is
            # decided at collection, the same in every GIL mode, so one run serves them all
            run_phase(
                ctx,
                PhaseSpec(
                    name="collect",
                    kind="collect",
                    command=replace(run.command, threads=run.threads, this_run=("--collect-only",)),
                    env={**run.env, "PYTHON_GIL": str(mode)},
                    cwd=run.cwd,
                    timeout=300,
                ),
            )
        if run.plan is None and not ctx.tsan:
            run = replace(run, plan=_plan(ctx, run, mode, is_targeted))
        runs = run.plan.runs if run.plan and not (is_targeted and mode == 1) else s.repeat
        for rep in range(1, runs + 1):
            if ctx.spent or (rep > 1 and run.plan and run.plan.record.how != "whole" and not _another(ctx, mode)):
                break
            _threaded(ctx, run, mode, rep, only)
    return replace(run, gil_on=gil_on or _whole(ctx, is_targeted))


def _another(ctx: JobCtx, mode: int) -> bool:
    """A planned job's next threaded run of ``mode`` fits the time left before the reserve, by
    the last one's measured time (the plan's estimate, made at another load, may be off): a
    run the budget would cut leaves the GIL-on runs no time at all."""
    last = next((p for p in reversed(ctx.phases) if p.kind == "threads" and p.gil == mode), None)
    left = ctx.deadline - ctx.reserve - time.monotonic()
    if last is None or last.duration * 1.1 <= left:
        return True
    log.info("%s: no more threaded runs: the last took %.0f s, %.0f s left", ctx.job.job_id, last.duration, left)
    return False


# the share of the time left the plan fills: its cost model is measured at the plain run's load,
# and a threaded run at a higher one took 1.4 × its estimate (ft_budgetrace, 2026-12-07)
PLAN_SHARE = 0.8
PLAN_FILE = "logs/thread-plan.txt"  # the threaded runs' plan (harness.job.budgetplan): iterations, test id


def _plan(ctx: JobCtx, run: Suite, mode: int, is_targeted: bool) -> Plan | None:
    """The threaded runs planned to the budget left (harness.job.budgetplan), from the plain run
    of ``mode`` just finished; None (the settings as they are) without its per-test times."""
    s = ctx.job.settings
    plain = next((p for p in reversed(ctx.phases) if p.name == f"plain-gil{mode}"), None)
    durations = {t: c.seconds for t, c in (plain.tests if plain else {}).items() if c.outcome != "skipped"}
    if plain is None or not durations or not plain.junit:
        return None
    collect = next((p.duration for p in ctx.phases if p.kind == "collect"), 0.0)
    work = sum(durations.values())
    cores = max(1.0, min(float(os.cpu_count() or 1), work / max(1.0, plain.duration - collect)))
    # the GIL-on plain run to come: the whole suite again, or (targeted) the tests red with the GIL off
    after = (0.1 if is_targeted else 1.0) * plain.duration if 1 in s.gil_modes and mode == 0 else 0.0
    budget = ctx.deadline - ctx.reserve - time.monotonic() - after  # the runs alone keep their reserve
    if not is_targeted and len(s.gil_modes) > 1 and mode == s.gil_modes[0]:
        budget /= len(s.gil_modes)  # the other mode's threaded runs are the whole suite too
    p = budgetplan.plan(
        durations,
        threads=s.threads,
        iterations=s.iterations,
        repeat=s.repeat,
        budget=max(0.0, budget * PLAN_SHARE),
        cores=cores,
        overhead=collect,
        seed=budgetplan.week_seed(date.today()),
    )
    log.info("%s: threaded runs: %s (%s)", ctx.job.job_id, p.record.how, p.record.why)
    if p.record.how == "whole":
        return p
    try:
        ctx.fs.write_new(PLAN_FILE, budgetplan.plan_lines(p).encode())
    except OSError as e:
        log.info("%s: %s could not be written (%s): the settings' runs", ctx.job.job_id, PLAN_FILE, e.strerror)
        return None
    return replace(p, record=replace(p.record, file=ctx.rel(ctx.ws.host_root / PLAN_FILE)))


def _whole(ctx: JobCtx, targeted: bool) -> GilOn | None:
    """The record of GIL-on runs that were not chosen by the GIL-off ones (None: none asked)."""
    s = ctx.job.settings
    if 1 not in s.gil_modes:
        return None
    if not any(p.gil == 1 and p.kind in ("plain", "threads", "tsan") for p in ctx.phases):
        return GilOn(ran="none", why="the job's budget was spent before any GIL-on run")
    why = (
        "ThreadSanitizer runs: the whole suite in every mode"
        if ctx.tsan
        else "settings.gil_on: full"
        if s.gil_on == "full"
        else "no GIL-off run asked: the whole suite"
        if not targeted
        else ""
    )
    return GilOn(ran="suite", why=why)


ONLY_FILE = "logs/gil-on-tests.txt"  # the GIL-on runs' test ids (gil_on: targeted), one a line


def _gil_on(ctx: JobCtx) -> tuple[GilOn, tuple[str, ...]]:
    """What the GIL-on runs run (verdict.gilon.select over the GIL-off runs), with the test ids
    written to ONLY_FILE for the plugin that keeps a run to them; the whole suite if that file
    cannot be written (package code left something in its place)."""
    sel = gilon.select(ctx.phases, ctx.job.settings)
    log.info("%s: GIL-on runs: %s (%s)", ctx.job.job_id, sel.ran, sel.why)
    if sel.ran != "tests":
        return GilOn(ran=sel.ran, why=sel.why), ()
    try:
        ctx.fs.write_new(ONLY_FILE, "".join(f"{t}\n" for t in sel.tests).encode())
    except OSError as e:
        why = f"{sel.why}; but {ONLY_FILE} could not be written ({e.strerror}), so the whole suite"
        return GilOn(ran="suite", why=why), ()
    return GilOn(ran="tests", tests=len(sel.tests), file=ctx.rel(ctx.ws.host_root / ONLY_FILE), why=sel.why), sel.tests


def frozen_tests(phases: Sequence[Phase]) -> tuple[str, ...]:
    """The tests a run froze on (its silence ended it, ``Hang.stalled``, and named them): every
    later run of the job leaves them out, so one such test costs the silence watch's interval
    once, not in every run; the runs alone of confirmation still run it, with their short limit."""
    out = [t.test_id for p in phases if p.hang and p.hang.stalled for t in p.hang.tests]
    out += [p.hang.running for p in phases if p.hang and p.hang.stalled and p.hang.running]
    return tuple(dict.fromkeys(t for t in out if t))


def _this_run(ctx: JobCtx, name: str, only: Sequence[str] = (), plan: Plan | None = None) -> tuple[str, ...]:
    """What only this run needs: workers, its JUnit file; the plugin that keeps it to ``only``
    and gives it the plan's iterations (a threaded run planned to the budget); the tests an
    earlier run froze on left out (``frozen_tests``)."""
    keep: tuple[str, ...] = ("--ft-harness-only=" + ctx.ws.path(*ONLY_FILE.split("/")),) if only else ()
    if plan is not None and plan.record.how != "whole":
        keep += ("--ft-harness-plan=" + ctx.ws.path(*PLAN_FILE.split("/")),)
        keep += ("--ft-harness-plan-only",) if plan.keep else ()
    plugin = ("-p", ONLY_PLUGIN) if keep else ()
    left_out = tuple(f"--deselect={t}" for t in frozen_tests(ctx.phases))
    return ("-n", "auto", f"--junitxml={ctx.ws.path('junit', f'{name}.xml')}", *plugin, *keep, *left_out)


def _tsan_env(ctx: JobCtx, run: Suite, name: str) -> dict[str, str]:
    return tsanenv.tsan_env(ctx.ws.path("logs", "tsan", name), list(ctx.supp), source_dir=run.source)


def _plain(ctx: JobCtx, run: Suite, mode: int, only: Sequence[str] = ()) -> None:
    name = f"plain-gil{mode}"
    env = {**run.env, "PYTHON_GIL": str(mode)}
    if ctx.tsan:
        env = {**env, **_tsan_env(ctx, run, name)}
    run_phase(
        ctx,
        PhaseSpec(
            name=name,
            kind="plain",
            command=replace(run.command, this_run=_this_run(ctx, name, only)),
            env={**env, **run.watchdog},
            cwd=run.cwd,
            timeout=ctx.job.settings.job_timeout,
            gil=mode,
            junit=f"junit/{name}.xml",
            tsan_dir=f"logs/tsan/{name}" if ctx.tsan else "",
            idle=run.idle,
            subset=len(only),
        ),
    )


def _threaded(ctx: JobCtx, run: Suite, mode: int, rep: int, only: Sequence[str] = ()) -> None:
    env, timeout = {**run.env, "PYTHON_GIL": str(mode)}, ctx.job.settings.job_timeout
    if ctx.tsan:  # the threaded run under ThreadSanitizer, markers per test
        name = f"tsan-gil{mode}-r{rep}"
        env = {**env, **_tsan_env(ctx, run, name), "PYTHONPATH": ctx.ws.path("inner")}
        cmd = replace(
            run.command, plugins=("-p", tsanenv.MARKER_PLUGIN), threads=run.threads, this_run=_this_run(ctx, name)
        )
        run_phase(
            ctx,
            PhaseSpec(
                name=name,
                kind="tsan",
                command=cmd,
                env=env,
                cwd=run.cwd,
                timeout=timeout,
                gil=mode,
                rep=rep,
                junit=f"junit/{name}.xml",
                tsan_dir=f"logs/tsan/{name}",
            ),
        )
        return
    name = f"threads-gil{mode}-r{rep}"
    cmd = replace(run.command, threads=run.threads, this_run=_this_run(ctx, name, only, run.plan))
    run_phase(
        ctx,
        PhaseSpec(
            name=name,
            kind="threads",
            command=cmd,
            env={**env, **run.watchdog},
            cwd=run.cwd,
            timeout=timeout,
            gil=mode,
            rep=rep,
            junit=f"junit/{name}.xml",
            idle=run.idle,
            subset=len(only),
        ),
    )


# ------------------------------------------------------------------ confirm


def confirm(ctx: JobCtx, run: Suite) -> None:
    """Re-run each candidate's test alone (verdict.confirm), one candidate at a time, strongest
    first (verdict.confirm_targets' order), each interleaved GIL off, on, off, on... until
    verdict.confirm.done says its answer is clear or can no longer change, then the next; within
    settings.confirm_budget and the job's budget, whose end was kept for them (JobCtx.reserve).
    Not under TSan."""
    s = ctx.job.settings
    if not s.confirm or ctx.tsan:
        return
    found = verdict.decide(ctx.phases, settings=s, claims=False).findings
    by_name = {p.name: p for p in ctx.phases}
    end = min(time.monotonic() + s.confirm_budget, ctx.deadline)  # never past the job timeout
    chosen = verdict.confirm_targets(found, ctx.phases)
    for _ in range(len(chosen) * s.confirm * len(s.gil_modes)):  # each run alone counted once
        run_ = next_run(chosen, ctx.phases, s.confirm, s.gil_modes)
        if run_ is None:
            return
        left = end - time.monotonic()
        if left < 5:
            log.info("%s: confirmation budget (%ss) spent", ctx.job.job_id, s.confirm_budget)
            return
        src = by_name[run_.target.phase]
        assert src.test_command is not None  # confirm_targets keeps only phases with one
        _alone(ctx, run, src.test_command, src.cwd, run_, left)


def _alone(ctx: JobCtx, run: Suite, command: TestCommand, cwd: str, alone: Run, left: float) -> None:
    """One run alone of a target's test: the nominating phase's command, with only that test."""
    name, mode = alone.name, alone.mode
    # alone, pytest-timeout's thread method dumps every thread and ends the process at
    # test_timeout, even in a wait no signal interrupts (its signal method cannot)
    cmd = replace(
        command,
        paths=(alone.target.test_id,),
        this_run=("--timeout-method=thread", f"--junitxml={ctx.ws.path('junit', f'{name}.xml')}"),
    )
    run_phase(
        ctx,
        PhaseSpec(
            name=name,
            kind="confirm",
            command=cmd,
            env={**run.env, "PYTHON_GIL": str(mode)},
            cwd=cwd,
            timeout=min(left, ctx.job.settings.test_timeout + 30),
            gil=mode,
            rep=alone.rep,
            junit=f"junit/{name}.xml",
            reserved=True,
        ),
    )
