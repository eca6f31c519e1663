"""What a job's tests ran with, and where each part came from (issue #14): the one definition of
a result's ``test_setup``.  ``harness.testsetup.suitesetup`` builds it (from matrix.yaml, a
community recipe and ``harness.testsetup.infer``'s ``Inferred``), ``JobResult`` keeps it and
the report (``harness.results.report.JobEntry``) reads it.

Two JSON shapes, both as they were when this was a plain dict: a result file has the fields the
job decided (``to_dict``: none but ``recipe`` and ``sources`` for a job the recipe skipped before
its fetch, ``{}`` for one that stopped before its setup); report.json has every field
(``to_report_dict``).  ``from_dict`` reads either, and any older or hand-edited one: unknown
keys are ignored, a value of the wrong type reads as empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_DECIDED = ("tests", "tests_from", "requires", "requires_from", "pytest_args", "pytest_args_from")


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _strs(v: Any) -> tuple[str, ...]:
    return tuple(x for x in v if isinstance(x, str)) if isinstance(v, list | tuple) else ()


@dataclass(frozen=True, kw_only=True)
class TestSetup:
    """Where a job's tests path, test dependencies and pytest args came from, and what they are."""

    __test__ = False  # not a pytest test class

    tests: str = ""  # the tests' path (source tree, or site-packages); "" = the source root
    tests_from: str = ""  # "matrix.yaml" | "recipe" | "inferred"; "" = not decided
    requires: tuple[str, ...] = ()  # the test dependencies (PEP 508)
    requires_from: str = ""
    pytest_args: tuple[str, ...] = ()
    pytest_args_from: str = ""  # also "recipe + inferred"
    sources: tuple[str, ...] = ()  # the notes: "test deps from [dependency-groups] tests", ...
    # the community recipe's part (harness.testsetup.recipeapply.Applied.to_dict, with not_held):
    # registry, used, tests, requires, pytest_args, timeout, skip
    recipe: dict[str, Any] = field(default_factory=dict)

    @property
    def decided(self) -> bool:
        """The job read its tests path, test deps and pytest args (not: skipped, or stopped before)."""
        return any(getattr(self, k) for k in _DECIDED)

    @property
    def recorded(self) -> bool:
        return self != TestSetup()

    def to_dict(self) -> dict[str, Any]:
        """As a result file keeps it: the decided fields (none when not decided), the notes,
        the recipe's part when there is one."""
        d: dict[str, Any] = {}
        if not self.decided:  # the recipe skips the job on this Python: {recipe, sources}
            if self.recipe:
                d["recipe"] = dict(self.recipe)
            if self.sources:
                d["sources"] = list(self.sources)
            return d
        d = {k: list(v) if isinstance(v := getattr(self, k), tuple) else v for k in _DECIDED}
        d["sources"] = list(self.sources)
        if self.recipe:
            d["recipe"] = dict(self.recipe)
        return d

    def to_report_dict(self) -> dict[str, Any]:
        """As report.json has it: every field."""
        return {
            **{k: list(v) if isinstance(v := getattr(self, k), tuple) else v for k in _DECIDED},
            "sources": list(self.sources),
            "recipe": dict(self.recipe),
        }

    @classmethod
    def from_dict(cls, d: Any) -> TestSetup:
        """A result's or report.json's ``test_setup``; tolerant (see the module docstring)."""
        if not isinstance(d, Mapping):
            return cls()
        recipe = d.get("recipe")
        return cls(
            tests=_str(d.get("tests")),
            tests_from=_str(d.get("tests_from")),
            requires=_strs(d.get("requires")),
            requires_from=_str(d.get("requires_from")),
            pytest_args=_strs(d.get("pytest_args")),
            pytest_args_from=_str(d.get("pytest_args_from")),
            sources=_strs(d.get("sources")),
            recipe=dict(recipe) if isinstance(recipe, Mapping) else {},
        )
