"""Is there a free-threaded wheel for the tested release, and which one did we install?

Read from the release's files on the index's page, as the job's fetch read it
(``harness.job.source.Source.index_files``; the index's client: ``harness.config.indexclient``),
and from pip's install report (``harness.core.pipinstalled``), the
``packaging.utils``/``packaging.tags`` way.  A wheel counts as free-threaded
when one of its tags is one the interpreter accepts, as it said itself
(``packaging.tags.sys_tags()`` run by it, kept in InterpreterInfo.tag_pairs and
.platforms): ``cp313t``/``cp314t``/``cp315t`` and PEP 803's ``abi3t``
(``cp315-abi3t``, ``cp315-abi3.abi3t``) alike, and never a plain ``abi3``,
which free-threaded builds do not load.  A ``none`` ABI wheel (``none-any``)
is reported as ``pure`` (it runs on any build, GIL or not).

Results written before interpreters recorded their tags fall back to the tags
``packaging`` computes for that version on this machine.
"""

from __future__ import annotations

import platform
from collections.abc import Sequence

from packaging import tags as ptags
from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from ..core.evidence import Probe, Wheel
from ..core.model import InterpreterInfo
from ..core.pipinstalled import PipReport


def ft_abi(version: str) -> str:
    """The version-specific free-threaded ABI of CPython ``version``: ``3.14.0`` -> ``cp314t``."""
    major, minor = version.split(".")[:2]
    return f"cp{major}{minor}t"


def _version_pairs(version: str) -> tuple[str, ...]:
    """The interpreter-abi pairs a free-threaded CPython ``version`` accepts, computed by
    packaging here (for results that did not record the interpreter's own sys_tags())."""
    major, minor = (int(x) for x in version.split(".")[:2])
    pv = (major, minor)
    found = [
        *ptags.cpython_tags(pv, abis=[ft_abi(version)], platforms=["any"]),
        *ptags.compatible_tags(pv, f"cp{major}{minor}", platforms=["any"]),
    ]
    return tuple(dict.fromkeys(f"{t.interpreter}-{t.abi}" for t in found))


def classify_wheel(
    filename: str, version: str = "", machine: str | None = None, *, interp: InterpreterInfo | None = None
) -> str:
    """'free-threaded' | 'pure' | 'gil-only' | 'other-platform' for one wheel file name.

    With ``interp`` (and its recorded tags) the interpreter decides; else ``version`` does,
    with a linux + ``machine`` platform check."""
    try:
        _, _, _, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return "other-platform"
    if interp is not None and interp.tag_pairs:
        pairs, platforms = set(interp.tag_pairs), set(interp.platforms)

        def fits(platform_: str) -> bool:
            return platform_ in platforms
    else:
        version = version or (interp.version if interp else "")
        pairs = set(_version_pairs(version))
        machine = machine or platform.machine()

        def fits(platform_: str) -> bool:
            return machine in platform_ and "linux" in platform_

    kinds = set()
    for t in tags:
        if t.abi == "none" and t.platform == "any":
            kinds.add("pure")
        elif f"{t.interpreter}-{t.abi}" in pairs:
            if fits(t.platform):
                kinds.add("pure" if t.abi == "none" else "free-threaded")
            else:
                kinds.add("other-platform")
        else:
            kinds.add("gil-only")
    # a compressed tag set (cp315-abi3.abi3t-macosx…) is told by its free-threaded half
    for k in ("free-threaded", "pure", "other-platform", "gil-only"):
        if k in kinds:
            return k
    return "other-platform"


def availability(
    files: Sequence[str], version: str = "", machine: str | None = None, *, interp: InterpreterInfo | None = None
) -> str:
    """Summarise a release's files: 'free-threaded', 'pure', 'gil-only' (wheels, none for this
    interpreter on this platform) or 'sdist-only'."""
    kinds = {classify_wheel(f, version, machine, interp=interp) for f in files if f.endswith(".whl")}
    for k in ("free-threaded", "pure"):
        if k in kinds:
            return k
    return "gil-only" if kinds else "sdist-only"


def installed_from(report: PipReport | None, name: str) -> str:
    """The file pip installed for ``name`` per its --report ('' when unknown)."""
    item = report.item(name) if report is not None else None
    return item.file if item is not None else ""


def wheel_info(
    name: str,
    *,
    local: bool,
    version: str,
    install_report: PipReport | None,
    interp: InterpreterInfo,
    probe: Probe | None = None,
    installed_ok: bool = True,
    fallback: str = "",
    index_files: Sequence[str] | None = None,
    from_store: bool = False,
) -> Wheel:
    """The wheel column: what the index offers for this release (``index_files``: its file names
    on the page the fetch read, None when it read none) and what pip installed (``installed_ok``:
    the install phase succeeded; pip may write its report and then fail).
    ``install_report``: pip's --report of what is tested, as parsed onto its phase
    (``harness.verdict.artifact.tested_report``). ``from_store``: the wheel pip installed is
    the wheel store's, built from the package's sdist (harness.job.wheelsteps)."""
    installed = installed_from(install_report, name)
    if not installed_ok:
        how = "not installed"
    elif local:
        how = "local source"
    elif installed.endswith(".whl") and from_store:
        how = "built from sdist (wheel store)"
    elif installed.endswith(".whl"):
        how = f"wheel ({classify_wheel(installed, interp.version, interp=interp)})"
    elif installed:
        how = "built from sdist"
    else:
        how = "unknown"
    if not local and version:
        available = availability(index_files, interp.version, interp=interp) if index_files is not None else "unknown"
    else:
        available = "n/a"
    warning = ""
    if probe is not None and probe.modules and how == "wheel (free-threaded)":
        warning = "the free-threaded wheel re-enables the GIL: " + ", ".join(probe.modules)
    return Wheel(installed=how, installed_file=installed, available=available, warning=warning, fallback=fallback)
