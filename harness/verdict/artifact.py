"""Which artifact of the package under test is tested: its extension, or a pure fallback (#35).

A compiled project may publish a pure-Python wheel beside its compiled ones (``py3-none-any``:
propcache, yarl, multidict, frozenlist). With no wheel for the free-threaded interpreter on the
index, pip installs that one: the extension is never built, and the suite's tests of it fail on
``No module named 'propcache._helpers_c'`` (propcache 0.5.4 and yarl 1.25.1 were published as
``baseline-failure`` so). So, after the install:

- pip's ``--report``, parsed onto the install phase (``Phase.pip_report``), says which file it
  installed for the package;
- the sdist, read before the install ran package code (``harness.core.wsfs``), says whether the
  project is compiled (``harness.testsetup.compiled.compiled_evidence``: a ``.pyx``/``.c``/``.cpp``/``.rs`` source outside
  its tests and docs, a ``Cargo.toml``, a setup.py with ``ext_modules``/``Extension(``, a
  ``[tool.setuptools] ext-modules`` table);
- both: the install phase gets a ``pure-fallback`` setup problem naming the wheel and the
  evidence, and with ``settings.fallback_wheel: build`` (the default) the package alone is
  built from its sdist in the ``install-sdist`` phase (``--no-binary``, ``--no-deps``: its
  dependencies stay as installed), so its extension is what the runs test. ``keep`` tests the
  fallback, as a plain ``pip install`` gives it.

The verdict (``harness.verdict.fallback``) reads the problem from the install phase: a test that
fails on a missing module of the package's own is then a setup fact with that cause, never a
``baseline-failure``. The result's wheel column says what was tested (``Wheel.fallback``).
"""

from __future__ import annotations

from collections.abc import Sequence

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from ..core.model import Phase, SetupProblem
from ..core.pipinstalled import PipReport

KIND = "pure-fallback"  # SetupProblem.kind on the install phase
REBUILD = "install-sdist"  # the phase that builds the package from its sdist
REBUILD_REPORT = f"{REBUILD}-report.json"  # its pip --report, in logs/, beside its log (harness.parse.pipreport)


def is_pure_wheel(filename: str) -> bool:
    """A wheel whose every tag is ``none-any`` (``propcache-0.5.4-py3-none-any.whl``)."""
    try:
        tags = parse_wheel_filename(filename)[3]
    except InvalidWheelFilename:
        return False
    return bool(tags) and all(t.abi == "none" and t.platform == "any" for t in tags)


def fallback_wheel(report: PipReport | None, name: str) -> str:
    """The pure wheel pip installed for ``name`` per its ``--report`` (the install phase's), or ""."""
    item = report.item(name) if report is not None else None
    installed = item.file if item is not None else ""
    return installed if is_pure_wheel(installed) else ""


def problem(wheel: str, evidence: str, mode: str) -> SetupProblem:
    """The install phase's record of a pure fallback wheel of a compiled project."""
    if mode == "keep":
        fix = "fallback_wheel: build (the default) builds the package from its sdist"
    else:
        fix = f"built from its sdist (phase {REBUILD}); fallback_wheel: keep tests the fallback wheel"
    return SetupProblem(
        kind=KIND,
        name=wheel,
        where=evidence,
        excerpt=(
            f"pip installed {wheel}, the pure-Python fallback wheel of a compiled project "
            f"({evidence}): its compiled modules are not in it"
        ),
        fix=fix,
    )


def fallback_of(phases: Sequence[Phase]) -> SetupProblem | None:
    """The install phase's ``pure-fallback`` problem, if pip chose such a wheel."""
    return next((s for p in phases if p.kind == "install" for s in p.setup if s.kind == KIND), None)


def rebuilt(phases: Sequence[Phase]) -> bool:
    """The package was built from its sdist after pip chose its fallback wheel."""
    return any(p.name == REBUILD and p.ok for p in phases)


def tested_report(phases: Sequence[Phase]) -> PipReport | None:
    """pip's report of what is tested: the rebuild's when the package was built over its
    fallback wheel, else the install's (None: no such phase, or pip wrote none)."""
    name = REBUILD if rebuilt(phases) else "install"
    return next((p.pip_report for p in phases if p.name == name), None)
