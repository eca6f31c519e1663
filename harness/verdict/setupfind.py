"""Findings of the harness's setup steps and of tests that could not run (harness.verdict.rules,
verdict.failures): the test deps that did not install, another setup step that failed, and a
suite's tests whose fixture or import is missing (harness.parse.setup), each with its real cause
and fix."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from packaging.utils import canonicalize_name

from ..core.evidence import NOT_INSTALLED_KIND, SetupProblem
from ..core.model import Finding, Phase
from ..parse.buildenv import missing_piece
from ..parse.install import classify_install
from .reprocommands import reproduce


def deps_finding(phase: Phase) -> Finding:
    """The inferred test dependencies did not install: shown; the runs say what it cost."""
    _, _, line = classify_install(phase.excerpt, timed_out=phase.timed_out, infra=phase.infra)
    env = None if phase.timed_out or phase.infra else missing_piece(phase.excerpt)
    if env is not None:  # the build machine lacked something (#43): say what, and its Debian package
        line = env.message.removeprefix("build environment: ")
    missing = [s.name for s in phase.setup if s.kind == NOT_INSTALLED_KIND]
    if missing:  # installing them together failed, then each was tried alone (parse.testdeps)
        line = f"not installed: {', '.join(missing)} (the others are); {line}"
    return Finding(
        kind="setup-error",
        evidence="setup",
        excerpt=phase.excerpt[-1500:],
        message=f"setup: the inferred test dependencies did not install: {line}"[:400],
        reproduce=reproduce(phase, None),
        phase=phase.name,
    )


def setup_step_finding(phase: Phase) -> Finding:
    """Another setup step of the harness (the data links, harness.job.datalinks) failed."""
    last = next((ln for ln in reversed(phase.excerpt.splitlines()) if ln.strip()), "no output")
    return Finding(
        kind="setup-error",
        evidence="setup",
        excerpt=phase.excerpt[-1500:],
        message=f"setup: the {phase.name} step failed: {last}"[:400],
        reproduce=reproduce(phase, None),
        phase=phase.name,
    )


def not_installed_of(phases: Sequence[Phase]) -> frozenset[str]:
    """The test deps the job's test-deps step could not install (canonical names)."""
    return frozenset(
        canonicalize_name(s.name) for p in phases if p.kind == "setup" for s in p.setup if s.kind == NOT_INSTALLED_KIND
    )


def setup_finding(
    kind: str, phase: Phase, tests: list[str], what: str, not_installed: frozenset[str] = frozenset()
) -> Finding:
    """A setup failure (parse.setup): the real cause and its fix, never the package's fault.
    ``not_installed``: the test deps the test-deps step could not install (canonical names): a
    missing module that is one of them is said so, not given a ``test_requires`` fix."""
    problems = tuple(_declared(p, not_installed) for p in phase.setup)
    first = problems[0] if problems else None
    lines = [
        f"{p.excerpt}{f'  [{p.where}]' if p.where and p.where not in p.excerpt else ''}\n  fix: {p.fix}"
        for p in problems
    ]
    if tests:
        lines.append(
            f"tests that could not run: {', '.join(tests[:10])}"
            + (f" and {len(tests) - 10} more" if len(tests) > 10 else "")
        )
    cause = f"{first.excerpt}; fix: {first.fix}" if first else "a test's fixture or import is missing"
    return Finding(
        kind=kind,
        test_id=tests[0] if len(tests) == 1 else "",
        modes=(phase.gil,) if phase.gil is not None else (),
        count=len(tests),
        evidence="setup",
        excerpt="\n".join(lines) or phase.excerpt[-2000:],
        message=f"setup: {what}: {cause}"[:400],
        reproduce=reproduce(phase, None),
        phase=phase.name,
    )


def _declared(problem: SetupProblem, not_installed: frozenset[str]) -> SetupProblem:
    dist = canonicalize_name(problem.name.split(".")[0]) if problem.kind == "missing-module" else ""
    if dist not in not_installed:
        return problem
    return replace(
        problem,
        fix=f"{dist} is a test dependency the harness tried to install and could "
        "not (the test-deps step: it does not build or resolve for this interpreter)",
    )
