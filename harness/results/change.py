"""A job whose verdict changed since the previous report (``report.changes``; harness.results.diff)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ..core.evidence import known
from ..core.model import severity
from ..util import textsafe

# flaky: a verdict change the counts do not hold (harness.results.flaky): never a regression (schema 10)
CHANGE_KINDS = ("newly-broken", "fixed", "verdict-changed", "infra-error", "new-package", "removed", "flaky")
NOT_THE_PACKAGE = "infra-error"


@dataclass(frozen=True, kw_only=True)
class Change:
    """A job whose verdict changed since the previous report, or that appeared or went."""

    kind: str  # one of CHANGE_KINDS
    job_id: str
    package: str
    interpreter: str = ""
    old: str | None = None  # verdict before (None for new-package)
    new: str | None = None  # verdict now (None for removed)
    old_version: str = ""
    new_version: str = ""
    detail: str = ""  # flaky: the deciding test's counts on both sides

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
            what = f"{self.old} -> {self.new}" + (f" ({self.detail})" if self.detail else "")
        # the version and the name come from result files a package wrote: one inert line
        return textsafe.line(f"{self.kind}: {self.package}{ver}{where}: {what}")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["regression"] = self.regression
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Change:
        """A change as report.json has it (``regression`` is derived, not read)."""
        return cls(**{"kind": "", "job_id": "", "package": "", **known(cls, d)})
