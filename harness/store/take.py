"""The wheel store's one verb (#56): ``take_or_build`` the wheels a job's plan needs.

A job (harness.job.wheelsteps: its ``Port``) asks once, before its install, and gets back what
the store gives the install (``StoreUse``) and what the store cost (its seconds and bytes, and
any store limit it reached). In order:

1. the venv, seeded from the store's tools layer (built now, in a step of its own, when the
   store lacks it: harness.store.toolslayer);
2. pip's dry run of the job's requirements, offered only the entries that pass the provenance
   check (harness.store.provenance: the job's index lists their sdist, by sha256);
3. each wheel the plan took from the store, checked again; each sdist of the plan checked
   against the index (a direct URL, another host, a file the index does not list: refused, a
   line of the plan's log, built by the job's own install) and built into the store when it is
   not there (``Port.run`` in a step where only a scratch dir is writable);
4. the package's own sdist, when another job had it built there.

Every entry is taken under its lock, looked up, touched (used now: the last to be evicted) and
logged in one place (``_take``). The store's time is its own: each of its steps runs to the
least of the store's limit for one build (``BUILD_TIMEOUT``), what is left of the job's
``store_seconds_per_job`` and of the run's ``store_seconds_per_run``; the seconds spent are
returned (``StoreUse.seconds``), and the job adds them to its deadline. What one job may add
is bounded by ``store_entries_per_job`` and ``store_bytes_per_job``; the store as a whole by
``store_bytes`` (harness.store.storecap). A limit reached is a line of the plan's log and of
the job's result (``StoreUse.limits``).
"""

from __future__ import annotations

import contextlib
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from ..core import limits
from ..core.pipinstalled import PipReport
from ..core.stored import StoredWheel
from . import provenance, storecap, toolslayer, wheelstore
from .provenance import Provenance
from .storecap import POLICY
from .tally import RunClock, StoreUse, Tally
from .wheelstore import BUILD_TIMEOUT, PLAN_REPORT, Sdist, from_store, static_requirements

# What a job takes from the store, all from here (tests/unit/test_layout.py: the entry point)
__all__ = [
    "BUILD_TIMEOUT",
    "NO_STORE",
    "PLAN",
    "PLAN_REPORT",
    "POLICY",
    "Port",
    "Ran",
    "RunClock",
    "Step",
    "StoreUse",
    "Want",
    "from_store",
    "static_requirements",
    "take_or_build",
    "vouched",
]

PLAN = "wheel-plan"  # the dry run's phase; the builds are "wheel-<name>-<version>"


# ------------------------------------------------------------------ what a job gives and gets


@dataclass(frozen=True, kw_only=True)
class Step:
    """One command of the store, as ``Port.run`` runs it."""

    name: str  # its log: logs/<name>.log
    command: list[str]
    timeout: float
    isolated: Path | None = None  # a build: only this host dir is writable; else the job's venv step


@dataclass(frozen=True, kw_only=True)
class Ran:
    ok: bool
    timed_out: bool = False
    why: str = ""  # what a failed build lacked, when its log says (", memory ..."), else ""


class Port(Protocol):
    """What the verb needs of the job that asks (harness.job.wheelsteps implements it)."""

    job_id: str
    store: Path  # the backend's store on the host
    seen: str  # the store as the backend sees it
    key: str  # the build environment's key (the interpreter image's tag on docker)
    interp_key: str  # the interpreter build's key (the tools layer's)
    index: str  # the job's index, without credentials
    python: str  # the interpreter as the backend sees it
    report: str  # where the dry run writes its --report, as the backend sees it (logs/wheel-plan.json)

    def page(self, project: str) -> Mapping[str, Any]: ...

    def run(self, step: Step) -> Ran: ...

    def plan(self) -> PipReport | None: ...

    def say(self, lines: Sequence[str]) -> None: ...

    def isolated_out(self, out: Path) -> str: ...


@dataclass(frozen=True, kw_only=True)
class Want:
    """What the job asks of the store."""

    venv_sh: str  # the shell that makes the venv the ordinary way
    venv: str  # the venv's dir, as the backend sees it
    seeder: str  # harness/_inner/venv_layer.py, as the backend sees it
    vpy: str  # the venv's python
    requirements: tuple[str, ...]
    skip: str  # the package under test: never built here (its install's log is the evidence)
    tools: tuple[str, ...] = ()  # the test tools' pins (wheels): the tools layer
    own_sha256: str = ""  # the package's sdist as the host fetched and checked it
    own_env: bool = False  # the package sets an env of its own: its own wheel is never taken
    own_version: str = ""  # the package's version (the store step's build of it)
    build_own: bool = False  # the store step (harness.job.prebuild): build the package's own sdist too (#58)
    install_timeout: float = 1200


NO_STORE = StoreUse()

RUN = RunClock()  # this process's run: the CLI runs one


# ------------------------------------------------------------------ the verb


def take_or_build(port: Port, want: Want, *, run: RunClock | None = None) -> StoreUse:
    """The venv, the plan, and the store's wheels for it: taken when the index vouches for
    them, built into the store when it lacks them (see the module's docstring). ``run``: the
    run's store clock (this process's, ``RUN``, by default)."""
    tally = Tally(run=run or RUN)
    layer, used_layer = _tools_layer(port, want, tally) if want.tools else ("", "")
    venv_sh = toolslayer.seed_sh(port.python, want.venv, want.seeder, layer) if layer else want.venv_sh
    if not [r for r in want.requirements if r not in want.tools]:  # the tools are wheels: no sdist to plan
        return _venv_only(port, want, venv_sh, tally, used_layer)
    report, ok = _dry_run(port, want, venv_sh, tally)
    if report is None and not ok and tally.limits:  # no time left for the store: the install makes the venv
        port.say([*tally.lines, "ft-harness: wheel store: not used; the install builds whatever it needs itself"])
        return tally.use(planned=False, tools_layer=used_layer)
    if not ok:
        port.say([*tally.lines, "ft-harness: no plan; the install builds whatever it needs itself"])
        return tally.use(planned=True, tools_layer=used_layer)
    links = []
    for w in wheelstore.from_store(report, port.seen, port.key):  # the plan took it from the store
        if w.name != canonicalize_name(want.skip) and _take(port, w.sdist_sha256, w.name, w.version, tally):
            links.append(_seen(port, w.sdist_sha256))
    for sd in wheelstore.to_build(report, skip=want.skip):
        if _one(port, sd, tally):
            links.append(_seen(port, sd.sha256))
    if want.build_own and want.own_sha256 and not want.own_env:
        # a compiled package's own sdist, built once before the jobs (#58): by the index's own
        # file (provenance.check), as any sdist of a plan; failed, the job's install builds it
        # and its log is the build's evidence as before
        name = str(canonicalize_name(want.skip))
        _one(port, wheelstore.Sdist(name=name, version=want.own_version, url="", sha256=want.own_sha256), tally)
    links += _own(port, want, tally)
    if not links:
        tally.lines.append("ft-harness: wheel store: the install builds no sdist")
    port.say(tally.lines)
    return tally.use(planned=True, tools_layer=used_layer, links=links)


def _seen(port: Port, sha256: str) -> str:
    return f"{port.seen}/{port.key}/{sha256}"


def vouched(port: Port, sha256: str, name: str = "", version: str = "") -> tuple[str, str]:
    """(the wheel, "") of the entry ``sha256`` when the provenance check passes (its record is
    of this index and build environment, and the index lists its sdist now), else ("", why). An
    entry stored before records were kept gets its record now, when the index vouches for it."""
    wheel = wheelstore.stored(port.store, port.key, sha256)
    if not wheel:
        return "", "not in the store"
    entry = wheelstore.entry(port.store, port.key, sha256)
    record = provenance.read(entry)
    if record is None:
        try:
            parsed, ver, *_ = parse_wheel_filename(wheel)
        except InvalidWheelFilename:
            return "", f"{wheel} is not a wheel's name"
        name, version = str(parsed), str(ver)
    else:
        why = provenance.matches(record, index=port.index, build_env=port.key, sha256=sha256)
        if why:
            return "", why
        if (name and canonicalize_name(name) != record.project) or (version and version != record.version):
            return "", f"its record is of {record.project} {record.version}"
        name, version = record.project, record.version
    found, why = provenance.check(port.page, name, version, sha256)
    if found is None:
        return "", why
    if record is None:
        with contextlib.suppress(OSError):
            provenance.write(entry, _record(port, name, version, sha256, found, asked_by=f"{port.job_id} (adopted)"))
    return wheel, ""


def _record(port: Port, name: str, version: str, sha256: str, found: Mapping[str, Any], *, asked_by: str) -> Provenance:
    return Provenance(
        index=port.index,
        project=str(canonicalize_name(name)),
        version=version,
        sdist_sha256=sha256,
        filename=str(found["filename"]),
        url=str(found["url"]),
        build_env=port.key,
        asked_by=asked_by,
    )


@contextlib.contextmanager
def _locked(port: Port, sha256: str) -> Iterator[None]:
    """An entry's lock: a second job wanting the same sdist waits, then finds it stored."""
    with wheelstore.lock(port.store, port.key, sha256):
        yield


def _take(port: Port, sha256: str, name: str, version: str, tally: Tally) -> bool:
    """Take a stored entry, or say why not: under its lock, vouched for (provenance), touched
    (used now: the last to be evicted), logged. The one place an entry is taken."""
    with _locked(port, sha256):
        wheel, why = vouched(port, sha256, name, version)
        if not wheel:
            if why != "not in the store":
                tally.untrusted.append(f"{name} {version}: {why}")
                tally.lines.append(
                    f"ft-harness: wheel store: refused the stored {name} {version} (sdist sha256 {sha256}): {why}"
                )
            return False
        storecap.touch(wheelstore.entry(port.store, port.key, sha256))
    try:
        parsed, ver, *_ = parse_wheel_filename(wheel)
        name, version = str(parsed), str(ver)
    except InvalidWheelFilename:
        pass
    tally.found.append(StoredWheel(name=name, version=version, sdist_sha256=sha256, wheel=wheel))
    tally.lines.append(f"ft-harness: wheel store: reused {wheel} (sdist sha256 {sha256})")
    return True


def _one(port: Port, sd: Sdist, tally: Tally) -> bool:
    """One sdist of the plan: taken when stored, else built into the store when the index lists
    it (by its own URL) and this job's limits allow; False: the install builds it itself."""
    label = f"{sd.name} {sd.version}"
    if sd.direct:
        why = "asked for by URL, not from the index: built by this job's install, never stored"
    else:
        found, why = provenance.check(port.page, sd.name, sd.version, sd.sha256)
    if why:
        tally.untrusted.append(f"{label}: {why}")
        tally.lines.append(f"ft-harness: wheel store: refused {label} from {sd.url} (sha256 {sd.sha256}): {why}")
        return False
    assert found is not None
    if _take(port, sd.sha256, sd.name, sd.version, tally):
        return True
    record = _record(port, sd.name, sd.version, sd.sha256, found, asked_by=port.job_id)
    sd = Sdist(name=sd.name, version=sd.version, url=record.url, sha256=sd.sha256)  # the index's file
    gone = len(tally.evicted)
    with _locked(port, sd.sha256):
        waited = bool(wheelstore.stored(port.store, port.key, sd.sha256))  # another job built it meanwhile
        got, why = (None, "") if waited else _build(port, sd, record, tally)
    if waited:
        return _take(port, sd.sha256, sd.name, sd.version, tally)
    tally.lines += [
        f"ft-harness: wheel store: removed {e} to make room (store_bytes: the least recently used first)"
        for e in tally.evicted[gone:]
    ]
    if got is None:
        tally.lines.append(f"ft-harness: wheel store: {label} not stored: {why}")
        (tally.refused if why.startswith("limit store_") else tally.failed).append(f"{label}: {why}")
        return False
    tally.added += 1
    tally.built.append(got)
    tally.lines.append(f"ft-harness: wheel store: built {got.wheel} (sdist sha256 {sd.sha256}, listed by {port.index})")
    return True


def _build(port: Port, sd: Sdist, record: Provenance, tally: Tally) -> tuple[StoredWheel | None, str]:
    """One sdist built where only a fresh scratch dir is writable, its wheel published with its
    record (when the job's limits and the store's room allow)."""
    if tally.added >= limits.value("store_entries_per_job"):
        return None, tally.limit("store_entries_per_job", f"this job added {tally.added} entries to the store")
    timeout, why = tally.timeout()
    if why:
        return None, why
    out = wheelstore.scratch(port.store, port.key)
    try:
        name = "wheel-" + re.sub(r"[^A-Za-z0-9_.-]", "_", f"{sd.name}-{sd.version}")
        ran = port.run(
            Step(
                name=name,
                command=wheelstore.build_argv(port.python, sd, port.isolated_out(out)),
                timeout=timeout,
                isolated=out,
            )
        )
        if not ran.ok:
            past = tally.ran_past(name, timeout) if ran.timed_out else ran.why
            return None, f"its build failed (phase {name}{past}); the install builds it itself"
        room = tally.room(port.store)
        with storecap.locked(port.store):
            got, why = wheelstore.publish(out, port.store, port.key, sd, room, record)
        if got is not None:
            tally.bytes += _size(wheelstore.entry(port.store, port.key, sd.sha256))
        return got, why
    except OSError as e:
        return None, f"the store: {e}"
    finally:
        toolslayer.remove(out)


def _size(entry: Path) -> int:
    return storecap.tree_bytes(entry)


def _own(port: Port, want: Want, tally: Tally) -> list[str]:
    """The store's dir of the package's own sdist, when another job's plan had it built there
    (numpy for pandas): the same file, vouched for by the index like every entry, so the install
    takes it instead of building the package again inside the job's budget. Not when the package
    sets an ``env`` of its own (a stored build never has it)."""
    if not want.own_sha256 or want.own_env:
        return []
    with _locked(port, want.own_sha256):
        wheel, _ = vouched(port, want.own_sha256)
        if not wheel:
            return []
        storecap.touch(wheelstore.entry(port.store, port.key, want.own_sha256))
    name, version, *_ = parse_wheel_filename(wheel)
    tally.found.append(StoredWheel(name=str(name), version=str(version), sdist_sha256=want.own_sha256, wheel=wheel))
    tally.lines.append(
        f"ft-harness: wheel store: the package itself from {wheel} (its sdist, sha256 {want.own_sha256}, built "
        "there for another job); the install does not build it"
    )
    return [_seen(port, want.own_sha256)]


def _venv_only(port: Port, want: Want, venv_sh: str, tally: Tally, used_layer: str) -> StoreUse:
    """The wheel-plan phase when the requirements are the test tools alone (wheels): the venv
    made, nothing to plan (the package itself may be in the store: ``_own``)."""
    timeout, why = tally.timeout(want.install_timeout)
    if why:  # the install makes the venv itself
        port.say([*tally.lines, f"ft-harness: wheel store: not used: {why}"])
        return tally.use(planned=False)
    ran = port.run(Step(name=PLAN, command=["sh", "-c", venv_sh], timeout=timeout))
    own = _own(port, want, tally) if ran.ok else []
    what = "takes the package from the store" if own else "builds only the package"
    port.say(
        [
            *tally.lines,
            "ft-harness: wheel store: nothing to plan (no requirement but the "
            f"test tools, which are wheels); the install {what}",
        ]
    )
    return tally.use(planned=ran.ok, tools_layer=used_layer, links=own)


def offered(port: Port) -> list[str]:
    """The store dirs offered to the dry run: the complete entries the provenance check
    vouches for (a dependency stored before, numpy for pandas, is read from its wheel, not
    built again by pip to learn its metadata)."""
    return [_seen(port, sha) for sha in wheelstore.complete(port.store, port.key) if vouched(port, sha)[0]]


def _dry_run(port: Port, want: Want, venv_sh: str, tally: Tally) -> tuple[PipReport | None, bool]:
    """The wheel-plan phase: the venv, then pip's dry run of the requirements with its
    ``--report`` (the store's time: pip builds an sdist whose backend has no metadata hook,
    meson-python's numpy, to learn its requirements)."""
    timeout, why = tally.timeout()
    if why:
        tally.lines.append(f"ft-harness: wheel store: no dry run: {why}")
        return None, False
    links = [a for d in offered(port) for a in ("--find-links", d)]
    pip = [want.vpy, "-m", "pip", "install", "--dry-run", "--quiet", "--report", port.report, *links]
    ran = port.run(
        Step(name=PLAN, command=["sh", "-c", f"{venv_sh} && {shlex.join([*pip, *want.requirements])}"], timeout=timeout)
    )
    if ran.timed_out:
        tally.lines.append(f"ft-harness: wheel store: the dry run did not end{tally.ran_past(PLAN, timeout)}")
    return (port.plan(), True) if ran.ok else (None, False)


def _tools_layer(port: Port, want: Want, tally: Tally) -> tuple[str, str]:
    """(the store's layer of the tools as the backend sees it, or "" for none; "built <digest>" /
    "reused <digest>" / ""), built now in a step of its own when the store lacks it."""
    key, store = port.interp_key, port.store
    dig = toolslayer.digest(key, want.tools)
    seen = toolslayer.where(port.seen, key, dig)
    why = ""
    try:
        with toolslayer.locked(store, key, dig):  # a job building it: wait, then reuse
            if toolslayer.ready(store, key, dig):
                storecap.touch(toolslayer.where(store, key, dig))
                tally.lines.append(f"ft-harness: tools layer: reused {seen}")
                return seen, f"reused {dig}"
            timeout, why = tally.timeout(want.install_timeout)
            if not why:
                why = _build_layer(port, want, tally, dig, timeout)
    except OSError as e:
        why = f"the store: {e}"
    tally.lines += [
        f"ft-harness: wheel store: removed {e} to make room (store_bytes: the least recently used first)"
        for e in tally.evicted
    ]
    if why:
        if why.startswith("limit store_"):
            tally.refused.append(f"tools layer {dig}: {why}")
        tally.lines.append(f"ft-harness: tools layer: none ({why}); the venv is made the ordinary way")
        return "", ""
    tally.added += 1
    tally.lines.append(f"ft-harness: tools layer: built {seen}")
    return seen, f"built {dig}"


def _build_layer(port: Port, want: Want, tally: Tally, dig: str, timeout: float) -> str:
    key, store = port.interp_key, port.store
    out = toolslayer.scratch(store, key)
    try:
        ran = port.run(
            Step(
                name=toolslayer.PHASE,
                command=toolslayer.build_argv(port.python, port.isolated_out(out), want.tools),
                timeout=timeout,
                isolated=out,
            )
        )
        if not ran.ok:
            past = tally.ran_past(toolslayer.PHASE, timeout) if ran.timed_out else ""
            return f"its build failed (phase {toolslayer.PHASE}{past})"
        room = tally.room(store)
        with storecap.locked(store):
            why = toolslayer.publish(out, store, key, dig, lambda layer: room(storecap.tree_bytes(layer)))
        if not why:
            tally.bytes += storecap.tree_bytes(Path(toolslayer.where(store, key, dig)))
        return why
    finally:
        toolslayer.remove(out)
