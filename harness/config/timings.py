"""Per-phase job times from measured runs: what ``plan``, shard sizing and the run's ETA expect.

A measured job becomes a ``Profile``: seconds per kind of phase (install, probe, collect, one plain
run per GIL mode, one threaded run per GIL mode, the confirmation re-runs), the settings it ran
under, and which share of its tests failed with the GIL off.  ``seconds(job, profile)`` sums the
phases the *job's* settings will run: ``repeat`` threaded runs per mode, a threaded run scaled by
``iterations x threads``, the confirmation scaled by ``confirm`` and capped by its budget, and with
``gil_on: targeted`` only the GIL-on runs the GIL-off failures call for (none when nothing failed;
the measured ones when the profile's own run was targeted).

Profiles come from a previous run (``plan --durations`` / ``run --durations``: its report.json or
result files), else from ``harness/data/durations.json``, the table of measured per-package
profiles shipped with the project (``tools/durations_table.py`` writes it from result dirs; its
``note`` says where and under what load they were measured), else from ``estimate.heuristic_profile``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from ..core import gilonrecord
from ..util import safejson
from .matrix import Settings

TABLE = Path(__file__).resolve().parents[1] / "data" / "durations.json"
SETTINGS_KEYS = (
    "threads",
    "iterations",
    "repeat",
    "test_timeout",
    "job_timeout",
    "confirm",
    "confirm_budget",
    "gil_modes",
    "gil_on",
)
BAD = ("failed", "error", "crashed", "timeout")  # a test's outcomes that are a failure
FULL = "full"  # gil_on when a measured profile's settings do not say


@dataclass(frozen=True, kw_only=True)
class Profile:
    """Seconds per kind of phase of one measured job, and the settings it ran under."""

    install: float = 0.0  # fetch, install, test deps (the steps before the tests)
    probe: float = 0.0
    collect: float = 0.0
    plain: Mapping[int, float] = field(default_factory=dict)  # GIL mode -> its plain run
    threads: Mapping[int, float] = field(default_factory=dict)  # GIL mode -> one threaded run (mean)
    confirm: float = 0.0  # the confirmation re-runs together
    confirm_off: float = 0.0  # those of tests that failed with the GIL off (kept by targeted runs)
    other: float = 0.0  # any other phase
    off_failed: float | None = 0.0  # share of the tests failed with the GIL off (None: all, unknown)
    settings: Mapping[str, Any] = field(default_factory=dict)  # SETTINGS_KEYS, as they ran
    measured: float = 0.0  # the phases together, as measured

    def scaled(self, factor: float) -> Profile:
        """The same phases ``factor`` times as long (the table's load adjustment)."""

        def f(v: float) -> float:
            return round(v * factor, 3)

        return replace(
            self,
            install=f(self.install),
            probe=f(self.probe),
            collect=f(self.collect),
            plain={m: f(v) for m, v in self.plain.items()},
            threads={m: f(v) for m, v in self.threads.items()},
            confirm=f(self.confirm),
            confirm_off=f(self.confirm_off),
            other=f(self.other),
            measured=f(self.measured),
        )

    def to_row(self) -> dict[str, Any]:
        return {
            "install": self.install,
            "probe": self.probe,
            "collect": self.collect,
            "plain": {str(k): v for k, v in sorted(self.plain.items())},
            "threads": {str(k): v for k, v in sorted(self.threads.items())},
            "confirm": self.confirm,
            "confirm_off": self.confirm_off,
            "other": self.other,
            "off_failed": self.off_failed,
        }

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Profile:
        """A table row (``{"seconds", "settings", "phases": to_row()}``); ValueError if unusable."""
        ph = row.get("phases")
        if not isinstance(ph, Mapping):
            raise ValueError("no phases")

        def num(v: Any) -> float:
            if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
                raise ValueError(f"not a duration: {v!r}")
            return float(v)

        def modes(v: Any) -> dict[int, float]:
            return {int(k): num(x) for k, x in (v or {}).items()}

        off = ph.get("off_failed", 0.0)
        return cls(
            install=num(ph.get("install", 0)),
            probe=num(ph.get("probe", 0)),
            collect=num(ph.get("collect", 0)),
            plain=modes(ph.get("plain")),
            threads=modes(ph.get("threads")),
            confirm=num(ph.get("confirm", 0)),
            confirm_off=num(ph.get("confirm_off", ph.get("confirm", 0))),
            other=num(ph.get("other", 0)),
            off_failed=None if off is None else min(1.0, num(off)),
            settings=dict(row.get("settings") or {}),
            measured=num(row.get("seconds", 0)),
        )


# ------------------------------------------------------------------ from a measured job


def _kind(name: str, kind: str) -> str:
    """The phase's kind for the estimate (older reports carry only the name)."""
    kind = kind or re.sub(r"\d+$", "", name.split("-")[0])
    if kind in ("fetch", "install", "setup", "test"):  # test-deps
        return "install"
    return "threads" if kind == "tsan" else kind


def _gil(name: str, gil: int | None) -> int | None:
    m = re.search(r"-gil(\d)", name)
    return gil if gil is not None else int(m.group(1)) if m else None


def _failed(ph: Any) -> bool:
    return bool(ph.timed_out or getattr(ph, "infra", "") or ph.exit_code not in (0, 5, None))


def _off_share(runs: list[Any]) -> tuple[float | None, set[str] | None]:
    """(share of the tests that failed in the GIL-off runs, their ids: None when the phases do
    not carry per-test outcomes, a report's rows)."""
    ids: set[str] = set()
    bad: set[str] = set()
    share = 0.0
    for ph in runs:
        tests = getattr(ph, "tests", None) or {}
        ids |= set(tests)
        bad |= {t for t, c in tests.items() if getattr(c, "outcome", "") in BAD}
        n = sum(v for v in (ph.counts or {}).values() if isinstance(v, int))
        k = sum(v for o, v in (ph.counts or {}).items() if o in BAD and isinstance(v, int))
        if _failed(ph) and not k:
            return None, bad if ids else None  # failed, no test to show for it: all of them
        share = max(share, k / n if n else 0.0)
    if ids:
        share = max(share, len(bad) / len(ids))
    return round(min(share, 1.0), 4), bad if ids else None


def _confirm_target(ph: Any) -> str:
    tests = getattr(ph, "tests", None) or {}
    if len(tests) == 1:
        return next(iter(tests))
    tc = getattr(ph, "test_command", None)
    paths = list(getattr(tc, "paths", ()) or ())
    return str(paths[0]) if len(paths) == 1 else ""


def from_phases(phases: Iterable[Any], settings: Mapping[str, Any] | None = None) -> Profile:
    """The profile of a measured job from its phases (a result's ``Phase`` or a report's
    ``PhaseRow``: name, kind, gil, duration, counts, exit code) and the settings it ran with."""
    settings = {k: v for k, v in (settings or {}).items() if k in SETTINGS_KEYS}
    modes = list(settings.get("gil_modes") or (0, 1))
    off_mode = modes[0] if modes else 0
    sums: dict[str, float] = {"install": 0.0, "probe": 0.0, "collect": 0.0, "other": 0.0}
    plain: dict[int, float] = {}
    runs: dict[int, list[float]] = {}
    confirms: list[Any] = []
    off_runs: list[Any] = []
    total = 0.0
    for ph in phases:
        d = float(ph.duration or 0.0)
        total += d
        kind, gil = _kind(ph.name, ph.kind), _gil(ph.name, ph.gil)
        if kind in ("plain", "threads") and gil is not None:
            if kind == "plain":
                plain[gil] = plain.get(gil, 0.0) + d
            else:
                runs.setdefault(gil, []).append(d)
            if gil == off_mode:
                off_runs.append(ph)
        elif kind == "confirm":
            confirms.append(ph)
        else:
            sums[kind if kind in sums else "other"] += d
    off, bad = _off_share(off_runs)
    confirm = sum(float(p.duration or 0.0) for p in confirms)
    targets = [_confirm_target(p) for p in confirms]
    if bad is not None and all(targets):  # the re-runs of tests that failed with the GIL off
        confirm_off = sum(float(p.duration or 0.0) for p, t in zip(confirms, targets, strict=True) if t in bad)
    else:
        confirm_off = confirm if off != 0 else 0.0
    r = 3
    return Profile(
        install=round(sums["install"], r),
        probe=round(sums["probe"], r),
        collect=round(sums["collect"], r),
        other=round(sums["other"], r),
        plain={m: round(v, r) for m, v in plain.items()},
        threads={m: round(sum(v) / len(v), r) for m, v in runs.items()},
        confirm=round(confirm, r),
        confirm_off=round(confirm_off, r),
        off_failed=off,
        settings=settings,
        measured=round(total, r),
    )


# ------------------------------------------------------------------ what a job will take


def _setting(then: Mapping[str, Any], key: str, default: Any) -> Any:
    v = then.get(key, default)
    return default if v is None or isinstance(v, bool) else v


def _threaded(s: Settings, then: Mapping[str, Any], plain: float, run: float) -> float:
    """One threaded run under ``s``: the part over a plain run grows with iterations x threads."""
    if run <= plain:
        return run
    was = max(1, int(_setting(then, "iterations", s.iterations)) * int(_setting(then, "threads", s.threads)))
    return plain + (run - plain) * (s.iterations * s.threads) / was


def _mode(s: Settings, p: Profile, mode: int, ref: int) -> float:
    """A GIL mode's plain run and ``repeat`` threaded runs over the whole suite."""
    plain = p.plain.get(mode, p.plain.get(ref, 0.0))
    run = p.threads.get(mode, p.threads.get(ref, 0.0))
    return plain + s.repeat * _threaded(s, p.settings, plain, run)


def targeted(s: Settings | Mapping[str, Any], tsan: bool = False) -> bool:
    """True when GIL-on runs follow the GIL-off ones (``gil_on: targeted``, both modes, no TSan;
    harness.verdict.gilon)."""
    get = s.get if isinstance(s, Mapping) else lambda k, d=None: getattr(s, k, d)
    return gilonrecord.targeted(get("gil_on", FULL), get("gil_modes", None) or (0, 1), tsan=tsan)


def suite_seconds(s: Settings, p: Profile, tsan: bool = False) -> float:
    """The test phases (collect, plain and threaded runs) the settings ``s`` run, by ``p``."""
    if not p.plain and not p.threads:
        return 0.0  # the measured job stopped before its tests (a build failure, no tests)
    was_targeted = targeted(p.settings)
    then_modes = [0, 1] if was_targeted else list(_setting(p.settings, "gil_modes", s.gil_modes)) or [0]
    ref = then_modes[0] if then_modes[0] in p.plain or then_modes[0] in p.threads else min({*p.plain, *p.threads})
    now_targeted = targeted(s, tsan)
    total = p.collect
    for i, mode in enumerate((0, 1) if now_targeted else s.gil_modes):
        if i == 0 or (not now_targeted and not was_targeted):
            total += _mode(s, p, mode if i else ref, ref)
        elif not now_targeted:  # full runs wanted, the measured ones were targeted: the suite's
            total += _mode(s, p, ref, ref)
        elif was_targeted:  # targeted both times: what it measured (nothing: none ran)
            if mode in p.plain or mode in p.threads:
                total += p.plain.get(mode, 0.0) + s.repeat * p.threads.get(mode, 0.0)
        elif p.off_failed != 0:  # the failed share of the suite again, each run a start-up
            share = 1.0 if p.off_failed is None else p.off_failed
            whole = _mode(s, p, mode, ref)
            total += min(whole, (1 + s.repeat) * max(p.collect, 1.0) + share * whole)
    return total


def confirm_seconds(s: Settings, p: Profile, tsan: bool = False) -> float:
    """The confirmation re-runs: measured, scaled by ``confirm`` and capped by its budget (with
    targeted GIL-on runs after full ones: only those of tests that failed with the GIL off)."""
    if not s.confirm or not p.confirm or tsan:
        return 0.0
    part = p.confirm_off if targeted(s) and not targeted(p.settings) else p.confirm
    was = max(1, int(_setting(p.settings, "confirm", s.confirm)))
    return min(part * s.confirm / was, float(s.confirm_budget))


def seconds(s: Settings, p: Profile, tsan: bool = False) -> float:
    """Expected seconds of a job run with settings ``s`` (``tsan``: on a ThreadSanitizer build),
    from the profile ``p`` of a measured one (steps before the tests within the install budget,
    the rest within the job's)."""
    before = min(p.install, 3.0 * s.install_timeout) + p.probe + p.other
    tests = min(suite_seconds(s, p, tsan) + confirm_seconds(s, p, tsan), float(s.job_timeout))
    return round(before + tests, 3)


# ------------------------------------------------------------------ the shipped table


def _factor(data: Mapping[str, Any]) -> float:
    """The table's ``scale.factor`` (1 when absent or not a sane number)."""
    scale = data.get("scale")
    f = scale.get("factor") if isinstance(scale, Mapping) else None
    if isinstance(f, int | float) and not isinstance(f, bool) and 0.1 <= f <= 10:
        return float(f)
    return 1.0


@lru_cache(maxsize=4)
def table(path: Path = TABLE) -> dict[str, Profile]:
    """name -> Profile of the shipped table, its rows times the table's ``scale.factor`` (where
    between the loads it was measured under its estimates sit: the table's ``scale.note``); {}
    when the file is missing or unreadable."""
    try:
        data = safejson.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    pkgs = data.get("packages") if isinstance(data, dict) else None
    if not isinstance(pkgs, dict):
        return {}
    factor = _factor(data)
    out: dict[str, Profile] = {}
    for k, v in pkgs.items():
        try:
            out[canonicalize_name(str(k))] = Profile.from_row(v).scaled(factor)
        except (ValueError, TypeError, AttributeError):
            continue  # a row without phases (an older table) or a broken one: not used
    return out


def measured(jobs: Sequence[Any], path: Path = TABLE) -> dict[str, Profile]:
    """job id -> the shipped table's profile, for the PyPI jobs it covers (not TSan builds: the
    table is of plain free-threaded interpreters)."""
    rows = table(path)
    out: dict[str, Profile] = {}
    for job in jobs:
        row = rows.get(canonicalize_name(job.package.name))
        if row is not None and not job.package.is_local and not job.interpreter.sanitizer:
            out[job.job_id] = row
    return out


def row_settings(s: Settings | Mapping[str, Any]) -> dict[str, Any]:
    """The settings a table row records."""
    src = s if isinstance(s, Mapping) else {k: getattr(s, k, None) for k in SETTINGS_KEYS}
    out = {k: src.get(k) for k in SETTINGS_KEYS}
    if isinstance(out.get("gil_modes"), tuple | list):
        out["gil_modes"] = list(out["gil_modes"] or ())
    return {k: v for k, v in out.items() if v is not None}
