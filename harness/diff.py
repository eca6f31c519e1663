"""What changed between two report.json documents, and whether it is a regression.

Packages are matched by job id (interpreter + package).  A verdict in
``OK_VERDICTS`` (compatible, no-tests) is "ok"; every other verdict is a
problem.  ok -> problem is ``newly-broken``, problem -> ok is ``fixed``, any
other verdict change is ``verdict-changed``; a regression is a newly-broken
package or a verdict that became more severe (earlier in model.VERDICTS).

``infra-error`` is never the package's fault: a package that became one is listed apart
(kind ``infra-error``) and is never a regression, and one that was one has no verdict to
regress from.  A package in the old report and not in the new one is ``removed`` (listed,
so a lost shard shows).  A verdict word the harness does not know is bad input (exit 2).
The text is printed to a CI log: package text in it is made inert (harness.textsafe).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from . import textsafe
from .errors import ConfigError
from .model import VERDICTS, severity

CHANGE_KINDS = ("newly-broken", "fixed", "verdict-changed", "infra-error", "new-package", "removed")
NOT_THE_PACKAGE = "infra-error"
OK_VERDICTS = ("compatible", "no-tests")


@dataclass(frozen=True, kw_only=True)
class Change:
    kind: str  # one of CHANGE_KINDS
    job_id: str
    package: str
    interpreter: str = ""
    old: str | None = None  # verdict before (None for new-package)
    new: str | None = None  # verdict now (None for removed)
    old_version: str = ""
    new_version: str = ""

    @property
    def regression(self) -> bool:
        if self.kind == "newly-broken":
            return True
        if self.kind == "verdict-changed" and self.old and self.new and self.old != NOT_THE_PACKAGE:
            return severity(self.new) < severity(self.old)
        return False

    def describe(self) -> str:
        ver = ""
        if self.old_version and self.new_version and self.old_version != self.new_version:
            ver = f" ({self.old_version} -> {self.new_version})"
        elif self.new_version or self.old_version:
            ver = f" {self.new_version or self.old_version}"
        where = f" [{self.interpreter}]" if self.interpreter else ""
        if self.kind == "new-package":
            what = f"new, {self.new}"
        elif self.kind == "removed":
            what = f"removed, was {self.old}"
        else:
            what = f"{self.old} -> {self.new}"
        # the version and the name come from result files a package wrote: one inert line
        return textsafe.line(f"{self.kind}: {self.package}{ver}{where}: {what}")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["regression"] = self.regression
        return d


def _index(report: dict[str, Any], which: str) -> dict[str, dict[str, Any]]:
    if not isinstance(report, dict) or not isinstance(report.get("packages"), list):
        raise ConfigError(f"{which} report has no 'packages' list (is it a report.json?)")
    out: dict[str, dict[str, Any]] = {}
    for p in report["packages"]:
        if not isinstance(p, dict) or "job_id" not in p or "verdict" not in p:
            raise ConfigError(f"{which} report has a package without job_id/verdict")
        if not isinstance(p["job_id"], str):
            raise ConfigError(f"{which} report has a job_id that is not a string: {str(p['job_id'])[:80]!r}")
        if p["verdict"] not in VERDICTS:
            raise ConfigError(f"{which} report: {p['job_id'][:80]!r} has verdict "
                              f"{str(p['verdict'])[:40]!r}, not one of the harness's verdicts")
        interp = p.get("interpreter")
        bad = next((k for k in ("name", "version") if not isinstance(p.get(k, ""), str)), None)
        if bad is None and not (interp is None or (isinstance(interp, dict)
                                                   and isinstance(interp.get("name", ""), str))):
            bad = "interpreter"
        if bad:
            raise ConfigError(f"{which} report: {p['job_id'][:80]!r} has a {bad} of the wrong type "
                              f"({type(p[bad]).__name__}; is it a report.json?)")
        out[p["job_id"]] = p
    return out


def diff_reports(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """Every package whose verdict changed, appeared or disappeared, sorted by job id."""
    a, b = _index(old, "old"), _index(new, "new")
    changes: list[Change] = []
    for job_id in sorted(set(a) | set(b)):
        pa, pb = a.get(job_id), b.get(job_id)
        ref = pb or pa
        assert ref is not None
        common = {
            "job_id": job_id,
            "package": ref.get("name", job_id),
            "interpreter": (ref.get("interpreter") or {}).get("name", ""),
            "old_version": (pa or {}).get("version", ""),
            "new_version": (pb or {}).get("version", ""),
        }
        if pa is None:
            changes.append(Change(kind="new-package", new=pb["verdict"], **common))  # type: ignore[index]
            continue
        if pb is None:
            changes.append(Change(kind="removed", old=pa["verdict"], **common))
            continue
        vo, vn = pa["verdict"], pb["verdict"]
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
    order = sorted(changes, key=lambda c: (not c.regression, c.kind != "infra-error",
                                           c.kind != "removed", c.job_id))
    for c in order:
        mark = "!" if c.regression else " "
        lines.append(f"{mark} {c.describe()}")
    n_reg = sum(c.regression for c in changes)
    n_infra = sum(c.kind == "infra-error" for c in changes)
    n_gone = sum(c.kind == "removed" for c in changes)
    lines.append(f"{len(changes)} change(s), {n_reg} regression(s), {n_infra} infra-error(s) "
                 f"(never a regression), {n_gone} removed")
    return "\n".join(lines)
