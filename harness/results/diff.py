"""What changed between two report.json documents, and whether it is a regression.

Packages are matched by job id (interpreter + package).  A verdict in
``OK_VERDICTS`` (compatible, no-tests, skipped) is "ok"; every other verdict is a
problem.  ok -> problem is ``newly-broken``, problem -> ok is ``fixed``, any
other verdict change is ``verdict-changed``; a regression is a newly-broken
package or a verdict that became more severe (earlier in model.VERDICTS).

A verdict change whose counts do not hold (``harness.results.flaky``: the deciding test's failures
on both sides, one-sided Fisher p > 0.05) is ``flaky``, with both counts, and never a regression:
between two runs of one matrix, a race one run merely missed is no fix and one it merely hit is no
regression (issue #47).

``infra-error`` is never the package's fault: a package that became one is listed apart
(kind ``infra-error``) and is never a regression, and one that was one has no verdict to
regress from.  A package in the old report and not in the new one is ``removed`` (listed,
so a lost shard shows).  The reports are typed (harness.results.report): a report.json given on the
command line (``diff``'s, ``report --previous``) is checked by ``harness.results.load.read_report`` as it
is read (a verdict word the harness does not know is bad input, exit 2).  A ``Change`` is a value of the report (harness.results.report).
The text is printed to a CI log: package text in it is made inert (harness.util.textsafe).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.model import severity
from . import flaky
from .report import NOT_THE_PACKAGE, Change, CompatReport, JobEntry

OK_VERDICTS = ("compatible", "no-tests", "skipped")


def diff_reports(old: CompatReport, new: CompatReport) -> list[Change]:
    """Every package whose verdict changed, appeared or disappeared, sorted by job id."""
    return diff_jobs(old.packages, new.packages)


def diff_jobs(old: Sequence[JobEntry], new: Sequence[JobEntry]) -> list[Change]:
    """``diff_reports`` on two reports' jobs (``harness.results.aggregate`` marks the changes on a report
    it is building)."""
    a, b = {p.job_id: p for p in old}, {p.job_id: p for p in new}
    changes: list[Change] = []
    for job_id in sorted(set(a) | set(b)):
        pa, pb = a.get(job_id), b.get(job_id)
        ref = pb or pa
        assert ref is not None
        common = {
            "job_id": job_id,
            "package": ref.name or job_id,
            "interpreter": ref.interpreter.name,
            "old_version": pa.version if pa else "",
            "new_version": pb.version if pb else "",
        }
        if pa is None:
            assert pb is not None
            changes.append(Change(kind="new-package", new=pb.verdict, **common))
            continue
        if pb is None:
            changes.append(Change(kind="removed", old=pa.verdict, **common))
            continue
        vo, vn = pa.verdict, pb.verdict
        if vo == vn:
            continue
        if vn == NOT_THE_PACKAGE:
            kind = "infra-error"
        elif vo in OK_VERDICTS and vn not in OK_VERDICTS and vo != NOT_THE_PACKAGE:
            kind = "newly-broken"
        elif vo not in OK_VERDICTS and vn in OK_VERDICTS:
            kind = "fixed"
        else:
            kind = "verdict-changed"
        if kind != "infra-error" and (fl := flaky.check(pa, pb)) is not None:
            sev, oth = ("old", "new") if severity(vo) < severity(vn) else ("new", "old")
            changes.append(Change(kind="flaky", old=vo, new=vn, detail=fl.describe(sev, oth), **common))
            continue
        changes.append(Change(kind=kind, old=vo, new=vn, **common))
    return changes


def has_regression(changes: list[Change]) -> bool:
    """True when a CI gate should fail: something broke or got more severe."""
    return any(c.regression for c in changes)


def format_changes(changes: list[Change]) -> str:
    """The changes as text, one line each, regressions marked; a line saying so if none."""
    if not changes:
        return "no changes"
    lines = []
    # regressions first, then what was not the package's doing, then the rest
    order = sorted(changes, key=lambda c: (not c.regression, c.kind != "infra-error", c.kind != "removed", c.job_id))
    for c in order:
        mark = "!" if c.regression else " "
        lines.append(f"{mark} {c.describe()}")
    n_reg = sum(c.regression for c in changes)
    n_infra = sum(c.kind == "infra-error" for c in changes)
    n_gone = sum(c.kind == "removed" for c in changes)
    lines.append(
        f"{len(changes)} change(s), {n_reg} regression(s), {n_infra} infra-error(s) "
        f"(never a regression), {n_gone} removed"
    )
    return "\n".join(lines)
