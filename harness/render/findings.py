"""A job's findings as a reader takes them (issue #44): grouped, the deciding one first, and
what its runs did and did not run, in words backed by the job's phases.

- ``groups``: findings of one kind, one test file and the same modes shown once with their count
  ("40 tests in tests/test_cached.py fail in threads in both modes"), the group holding the
  deciding finding first, then by severity;
- ``what_ran``: which GIL modes ran, how many runs of each, and why the GIL-on runs were left
  out or narrowed (``JobEntry.gil_on``): no page claims a GIL-on run that did not happen;
- ``recipe_narrowing``: the community recipe's ``-k``/``-m``/``--deselect``/``--ignore`` options
  the runs had, said as the recipe's: a recipe can leave out the very tests that fail (#46);
- ``laptop_recipe``: a finding's laptop recipe, or, for a finding with none (a build failure, a
  GIL re-enabled on import), one built from the job: a venv of the same free-threaded CPython
  and the install (and the import) that shows it.

Pure over the report's values; the site and report.md both use them.
"""

from __future__ import annotations

import shlex
from typing import Any

from ..core.model import INFO_KINDS, Finding, severity
from ..core.suiterecord import TestSetup
from ..results.report import JobEntry

MODES_TEXT = {(0,): "with the GIL off only", (1,): "with the GIL on only", (0, 1): "in both modes"}
KIND_TEXT = {  # what the tests of a group do, after "N tests in FILE"
    "thread-unsafe": "fail in threads",
    "ft-race": "fail in threads",
    "baseline-failure": "fail without threads",
    "crash": "crash",
    "ft-crash": "crash",
    "hang": "time out",
    "repeat-failure": "fail when repeated single-threaded, not in threads",
    "slow-in-threads": "are too slow to run in threads",
}


def deciding(p: JobEntry) -> Finding | None:
    """The finding that decided the verdict: the first of its kind (findings are most severe first)."""
    return next((f for f in p.findings if f.kind == p.verdict), None)


def _file(test_id: str) -> str:
    return test_id.split("::", 1)[0] if "::" in test_id else ""


def _re_run(f: Finding) -> bool:
    """Whether the finding's test was run again alone (confirmation): ``confirmed`` counts runs."""
    return any(n.isdigit() and int(n) > 0 for n in (v.partition("/")[2] for v in f.confirmed.values()))


UNCONFIRMED_MODES = {(0,): "with the GIL off", (1,): "with the GIL on", (0, 1): "in both modes"}


def unconfirmed_text(found: list[Finding], mode: str = "") -> str:
    """What a group of ``unconfirmed`` findings did, backed by their runs (issue #57): never "once"
    (a test may have failed 3 of 3 runs) and never "not again" unless it was run again alone."""
    again = [f for f in found if _re_run(f)]
    failed = " ".join(x for x in ("failed", mode, "in some runs") if x)
    if not again:
        return f"{failed} and were not re-run alone: unconfirmed"
    if len(again) < len(found):
        return f"{failed}; {len(again)} re-run alone, none confirmed: unconfirmed"
    return f"{failed} and, re-run alone, were not confirmed: unconfirmed"


def _sentence(kind: str, modes: tuple[int, ...], n: int, where: str, found: list[Finding]) -> str:
    if n == 1:
        return ""
    if kind == "unconfirmed":  # its mode is where it failed: "only" would claim a comparison
        what = unconfirmed_text(found, UNCONFIRMED_MODES.get(modes, ""))
        return f"{n} tests in {where} {what}" if where else f"{n} tests {what}"
    what = KIND_TEXT.get(kind, f"are {kind}")
    mode = MODES_TEXT.get(modes, "")
    return " ".join(x for x in (f"{n} tests in {where}" if where else f"{n} tests", what, mode) if x)


def groups(p: JobEntry) -> list[dict[str, Any]]:
    """The job's findings grouped by kind, test file and modes; the deciding finding's group first."""
    first = deciding(p)
    by_key: dict[tuple[str, str, tuple[int, ...]], list[Finding]] = {}
    for f in p.findings:
        where = _file(f.test_id)
        key = (f.kind, where, tuple(f.modes)) if where else (f.kind, f.test_id or f.module or f.message, tuple(f.modes))
        by_key.setdefault(key, []).append(f)
    out = []
    for (kind, where, modes), found in by_key.items():
        lead = first if first is not None and first in found else found[0]
        rest = [f for f in found if f is not lead]
        out.append(
            {
                "kind": kind,
                "count": len(found),
                "lead": lead,
                "rest": rest,
                "info": kind in INFO_KINDS,
                "deciding": lead is first,
                "sentence": _sentence(kind, modes, len(found), where if _file(lead.test_id) else "", found),
            }
        )
    out.sort(key=lambda g: (not g["deciding"], severity(str(g["kind"]))))
    return out


def _runs(p: JobEntry, gil: int) -> tuple[int, int]:
    """(plain runs, threaded runs) in one mode."""
    plain = sum(1 for ph in p.phases if ph.kind == "plain" and ph.gil == gil)
    threads = sum(1 for ph in p.phases if ph.kind == "threads" and ph.gil == gil)
    return plain, threads


def _count(plain: int, threads: int) -> str:
    bits = [
        f"{plain} plain run{'s' if plain != 1 else ''}" if plain else "",
        f"{threads} threaded run{'s' if threads != 1 else ''}" if threads else "",
    ]
    return " and ".join(b for b in bits if b)


def _cut(p: JobEntry, gil: int) -> str:
    """ " (the job's budget cut 1 of them before it finished)": runs of a mode the harness ended
    (issue #57); the budget named only for the run a ``budget-spent`` finding names."""
    ended = [ph.name for ph in p.phases if ph.kind in ("plain", "threads") and ph.gil == gil and ph.timed_out]
    budget = {f.phase for f in p.findings if f.kind == "budget-spent"}
    n, other = sum(1 for x in ended if x in budget), sum(1 for x in ended if x not in budget)
    bits = [f"the job's budget cut {n} of them before {'it' if n == 1 else 'they'} finished" if n else ""]
    bits.append(f"the harness ended {other} of them before {'it' if other == 1 else 'they'} finished" if other else "")
    said = "; ".join(b for b in bits if b)
    return f" ({said})" if said else ""


def what_ran(p: JobEntry) -> str:
    """In one or two sentences: the test runs per GIL mode, and why the GIL-on ones were left out
    or narrowed; "" when no test run happened (a build failure, no tests)."""
    off, on = _runs(p, 0), _runs(p, 1)
    if not any(off) and not any(on):
        return ""
    g = p.gil_on
    parts = []
    if any(off):
        parts.append(f"With the GIL off: {_count(*off)} of the suite{_cut(p, 0)}.")
    if any(on):
        if g is not None and g.ran == "tests":
            parts.append(
                f"With the GIL on: {_count(*on)} of only the {g.tests} test(s) that were "
                f"red with it off (settings.gil_on: targeted){_cut(p, 1)}: {g.why}."
            )
        else:
            parts.append(f"With the GIL on: {_count(*on)} of the suite{_cut(p, 1)}.")
    elif g is not None and g.ran == "none":
        parts.append(
            f"No run with the GIL on: {g.why} (settings.gil_on: targeted; gil_on: full runs the suite in both modes)."
        )
    elif any(off):
        parts.append(
            "No run with the GIL on"
            + (" (settings.gil_modes asks for one mode)." if p.settings.get("gil_modes") == [0] else ".")
        )
    if any(on) and any(off) and not p.findings and (g is None or g.ran == "suite"):
        parts.append("Every run behaved the same with the GIL on and off.")
    if p.rules_out:  # what a clean verdict's runs rule out (issue #47)
        parts.append(f"What these runs rule out: {p.rules_out}.")
    return " ".join(parts)


# the pytest options of a recipe (harness.testsetup.recipecmd.KEEP_VALUE) that leave tests out
NARROWING = ("-k", "-m", "--deselect", "--ignore", "--ignore-glob")


def recipe_narrowing(ts: TestSetup | None) -> str:
    """ "The recipe (laruche …) narrowed the tests: -k 'not test_proxy_functional'; the tests it
    leaves out did not run." -- the recipe's options that leave tests out, when the job ran with
    the recipe's pytest args (matrix.yaml's replace them); "" when it has none."""
    if ts is None or "recipe" not in ts.pytest_args_from:
        return ""
    args = [a for a in ts.recipe.get("pytest_args") or () if isinstance(a, str)]
    kept: list[str] = []
    it = iter(args)
    for a in it:
        if a.startswith("--") and "=" in a:  # kept as "--deselect=value"
            kept += [a] if a.partition("=")[0] in NARROWING else []
        elif a.startswith("-") and (value := next(it, None)) is not None:  # kept as "-k", "value"
            kept += [a, value] if a in NARROWING else []
    if not kept:
        return ""
    registry = str(ts.recipe.get("registry") or "a registry")
    return f"The recipe ({registry}) narrowed the tests: {shlex.join(kept)}; the tests it leaves out did not run."


def _exe(p: JobEntry) -> tuple[str, str]:
    it = p.interpreter
    minor = ".".join(it.version.split(".")[:2]) or "3"
    return f"python{minor}t", it.full_version or it.version


def laptop_recipe(p: JobEntry, f: Finding) -> str:
    """``f.recipe``, or for a finding without one (a build failure, a GIL re-enabled on import,
    a harness problem) the steps that show it on a laptop, built from the job: '' for an
    infra-error (the harness's own) or a local package with no path."""
    if f.recipe:
        return f.recipe
    if f.kind in ("infra-error", "budget-spent", "no-thread-coverage", "skipped"):
        return ""
    exe, version = _exe(p)
    if p.source == "pypi" and p.version:
        spec = shlex.quote(f"{p.name}=={p.version}")
    elif p.requested:
        spec = shlex.quote(p.requested)
    else:
        return ""
    lines = [
        f"# needs a free-threaded CPython {version} on PATH as {exe}",
        f"{exe} -m venv ft && . ft/bin/activate",
        f"python -m pip install -v {spec}",
    ]
    if f.kind == "gil-reenabled" and f.module:
        mod = f.module
        lines.append(
            # PYTHON_GIL unset: PYTHON_GIL=0 would keep the GIL off and hide the warning (#57)
            "env -u PYTHON_GIL python -W default -c "
            + shlex.quote(f"import {mod}, sys; print('GIL enabled:', sys._is_gil_enabled())")
        )
    elif f.test_id and f.kind != "build-failure":
        gil = "0" if 0 in f.modes or not f.modes else "1"
        lines.append(
            f"# then the sdist's tests, as the job ran them: PYTHON_GIL={gil} python -m pytest {shlex.quote(f.test_id)}"
        )
    return "\n".join(lines)
