"""JobResults -> the typed report (``harness.results.report.CompatReport``) every renderer reads.

``build_report`` turns the results (``harness.results.load.load_results`` reads them from the output dirs
of a run or of its shards) into one deterministically ordered report, so a report merged from
three shards equals the unsharded one apart from timestamps; its ``to_dict()`` is report.json.

``packages`` keeps one entry per job (interpreter x package); ``interpreters``
(the columns, oldest version first) and ``table`` (one row per package, one cell
per interpreter, and what differs between them) are the per-package view every
renderer shows, and ``summary`` counts packages, each once under its most severe
verdict across the interpreters.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from ..core.model import VERDICTS, JobResult, Phase, severity
from ..util.pool import frozen_heap
from . import flaky
from .answer import ANSWERS, answer, worst
from .causes import build_causes
from .diff import diff_jobs
from .report import Cell, Column, CompatReport, JobEntry, JobInterpreter, Meta, PackageRow, PhaseRow, ProjectMeta


def _phase_outcome(p: Phase) -> str:
    if p.infra:
        return "infra"
    if p.timed_out:
        return "timed out"
    if p.oom_killed:
        return "oom"
    if p.signal is not None or p.crash:
        return "crashed"
    if p.exit_code == 0:
        return "ok"
    return "failed"


def _safe_log(path: str) -> str:
    """A log path relative to the output dir, or "" if it is not one we may link to."""
    if not path or "\\" in path or ":" in path or path.startswith("/"):
        return ""
    if ".." not in path and "//" not in path and "./" not in path and not path.endswith(("/", "/.")):
        return path if path != "." else ""  # already plain (nearly always): no split/join
    parts = [x for x in path.split("/") if x not in ("", ".")]
    if ".." in parts:
        return ""
    return "/".join(parts)


def _phase(p: Phase) -> PhaseRow:
    return PhaseRow(
        name=p.name,
        kind=p.kind,
        gil=p.gil,
        rep=p.rep,
        outcome=_phase_outcome(p),
        exit_code=p.exit_code,
        signal=p.signal,
        timed_out=p.timed_out,
        oom_killed=p.oom_killed,
        infra=p.infra,
        duration=round(p.duration, 3),
        counts={k: int(v) for k, v in sorted(p.counts.items())},
        command=tuple(p.command),
        env=dict(sorted(p.env.items())),
        log=_safe_log(p.log),
        junit=_safe_log(p.junit),
        gil_modules=tuple(p.gil_modules),
        failing_not_kept=p.failing_not_kept,
    )


def _job(r: JobResult) -> JobEntry:
    it = r.interpreter
    return JobEntry(
        job_id=r.job_id,
        key=r.key,
        name=r.package,
        version=r.version,
        requested=r.requested,
        source=r.source,
        interpreter=JobInterpreter(
            name=it.name,
            version=it.version,
            key=it.key,
            configure=tuple(it.configure),
            free_threaded=it.free_threaded,
            sanitizer=it.sanitizer,
            source=it.source,
            full_version=it.full_version,
        ),
        settings=dict(sorted(r.settings.items())),
        backend=r.backend,
        started=r.started,
        finished=r.finished,
        harness_version=r.harness_version,
        duration=round(sum(p.duration for p in r.phases), 3),
        verdict=r.verdict,
        qualifier=r.qualifier,
        findings=tuple(sorted(r.findings, key=lambda f: severity(f.kind))),
        phases=tuple(_phase(p) for p in r.phases),
        coverage=dict(r.coverage),
        wheel=r.wheel,
        metadata=ProjectMeta(raw=r.metadata),
        notes=r.notes,
        links=tuple(r.links),
        test_setup=r.test_setup if r.test_setup.recorded else None,
        sdist_sha256=r.sdist_sha256,
        reused_from=r.reused_from,
        rules_out=r.rules_out,
        gil_on=r.gil_on,
        gil_with_test_deps=r.gil_with_test_deps,
        thread_plan=r.thread_plan,
    )


def _version_key(version: str) -> tuple[int, Version | str]:
    try:
        return (0, Version(version))
    except InvalidVersion:
        return (1, version)


def _sort_key(p: JobEntry) -> tuple[Any, ...]:
    """By package name, then by interpreter in column order (oldest version first)."""
    it = p.interpreter
    return (p.name.lower(), _version_key(it.full_version or it.version), it.sanitizer or "", it.name, p.job_id)


def _label(c: Column, minor: bool = False) -> str:
    """``3.14t`` (``minor``) or ``3.14.7t``; ``+thread`` for a sanitizer build."""
    version = c.full_version or c.version
    if minor:
        try:
            v = Version(version)
            version = f"{v.major}.{v.minor}"
        except InvalidVersion:
            pass
    return f"{version}t" + (f"+{c.sanitizer}" if c.sanitizer else "")


def interpreter_columns(packages: Sequence[JobEntry]) -> list[Column]:
    """The interpreters of ``packages``, oldest version first, each with a short ``label``: the
    free-threaded minor version a reader knows (``3.14t``; ``3.14t+thread`` for a sanitizer
    build); the exact one (``3.13.5t``, ``3.13.15t``, ``3.13.5t+thread``) when two columns
    share a minor version;
    its name when two would still share one.  The exact version and the source stay in the
    column's fields (the headers' details)."""
    first: dict[str, JobInterpreter] = {}
    jobs: dict[str, int] = {}
    for p in packages:
        first.setdefault(p.interpreter.name, p.interpreter)
        jobs[p.interpreter.name] = jobs.get(p.interpreter.name, 0) + 1
    cols = [
        Column(
            name=it.name,
            version=it.version,
            full_version=it.full_version,
            source=it.source,
            configure=it.configure,
            sanitizer=it.sanitizer,
            jobs=jobs[it.name],
        )
        for it in first.values()
    ]
    cols.sort(key=lambda c: (_version_key(c.full_version or c.version), c.sanitizer or "", c.name))
    minors = [_label(replace(c, sanitizer=None), minor=True) for c in cols]  # 3.13t for 3.13.5
    labels = [_label(c, minor=minors.count(m) == 1) for c, m in zip(cols, minors, strict=True)]
    return [
        replace(c, label=c.name if labels.count(label) > 1 or not c.version else label)
        for c, label in zip(cols, labels, strict=True)
    ]


def across(cells: Mapping[str, Cell], columns: Sequence[Column], jobs: Mapping[str, JobEntry] | None = None) -> str:
    """What differs between a package's interpreters, in column order, or "" when nothing does:
    ``build-failure on 3.13.5t, compatible on 3.13.15t``; a difference of two verdicts the counts
    do not hold (``harness.results.flaky``) is said as flaky, with both counts.  A side never
    judged (answer ``not-judged``: infra-error, the budget spent, no tests, skipped) is no side
    of a difference (issue #57): "could not be compared: infra-error on 3.13.5t (not judged);
    thread-unsafe on 3.13.15t"."""
    unjudged = [c for c in columns if c.name in cells and cells[c.name].answer == "not-judged"]
    if unjudged and len({cells[c.name].verdict for c in columns if c.name in cells}) > 1:
        rest = {k: v for k, v in cells.items() if k not in {c.name for c in unjudged}}
        between = across(rest, columns, jobs) if len(rest) > 1 else ""
        lost = ", ".join(f"{cells[c.name].verdict} on {c.label}" for c in unjudged)
        if between:
            return f"{between}; not compared: {lost} (not judged)"
        others = ", ".join(f"{cells[c.name].verdict} on {c.label}" for c in columns if c.name in rest)
        return f"could not be compared: {lost} (not judged)" + (f"; {others}" if others else "")
    groups: dict[str, list[str]] = {}
    for c in columns:
        cell = cells.get(c.name)
        if cell is not None:
            groups.setdefault(cell.verdict, []).append(c.label)
    if len(groups) < 2:
        return ""
    said = ", ".join(f"{v} on {' and '.join(labels)}" for v, labels in groups.items())
    shown = [(c.label, jobs.get(cells[c.name].job_id)) for c in columns if c.name in cells] if jobs else []
    if len(groups) == 2 and len(shown) == 2 and shown[0][1] is not None and shown[1][1] is not None:
        (la, a), (lb, b) = shown
        assert a is not None and b is not None
        if (fl := flaky.check(a, b)) is not None:
            sev, oth = (la, lb) if severity(a.verdict) < severity(b.verdict) else (lb, la)
            return f"{fl.describe(sev, oth)}: {said}"
    return said


def package_table(packages: Sequence[JobEntry], columns: Sequence[Column]) -> list[PackageRow]:
    """One row per package name (in report order): a cell per interpreter it ran on, the most
    severe verdict of them (what ``summary`` counts) and ``across``."""
    rows: dict[str, dict[str, Cell]] = {}
    jobs = {p.job_id: p for p in packages}
    for p in packages:
        rows.setdefault(p.name, {}).setdefault(
            p.interpreter.name,
            Cell(
                verdict=p.verdict,
                qualifier=p.qualifier,
                version=p.version,
                job_id=p.job_id,
                change=p.change,
                answer=p.answer,
                caveat=p.caveat,
                cause=p.cause,
                checked=p.reach[0],
                tests=p.reach[1],
                wheel=p.wheel.available if p.wheel else "",
            ),
        )
    out = []
    for name, cells in rows.items():
        versions = sorted({c.version for c in cells.values()})
        out.append(
            PackageRow(
                name=name,
                version=versions[0] if len(versions) == 1 else "",  # "": differs per interpreter
                verdict=min((c.verdict for c in cells.values()), key=severity),
                cells={c.name: cells[c.name] for c in columns if c.name in cells},
                across=across(cells, columns, jobs),
                answer=worst([c.answer for c in cells.values()]),
            )
        )
    return out


def _instant(stamp: str) -> datetime:
    """An ISO 8601 time as an aware UTC datetime (naive ones taken as UTC); the epoch when it
    is not one, so a hand-edited word never wins a min or a max."""
    try:
        t = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return _EPOCH
    return t if t.tzinfo else t.replace(tzinfo=UTC)


_EPOCH = datetime.fromtimestamp(0, UTC)


def run_times(results: Sequence[JobResult]) -> tuple[str, str]:
    """(earliest ``started``, latest ``finished``) of ``results``, as they were written, compared
    as times (a shard writing ``Z`` and one writing ``+00:00`` still order right); "" when none."""
    starts = [r.started for r in results if _instant(r.started) != _EPOCH]
    ends = [r.finished for r in results if _instant(r.finished) != _EPOCH]
    return (min(starts, key=_instant) if starts else "", max(ends, key=_instant) if ends else "")


def build_report(
    results: Sequence[JobResult],
    *,
    meta: Mapping[str, Any],
    previous: CompatReport | None = None,
    expected_jobs: Sequence[str] | None = None,
) -> CompatReport:
    """The report for ``results``; its ``to_dict()`` is report.json (see
    harness/schema/report.schema.json).

    ``meta`` (harness_version, matrix_digest, ...) overrides what is derived
    from the results, except the run's ``started``/``finished``: those are when the tests ran
    (the earliest result's start, the latest one's end), also after a merge of shards or a
    re-render later; meta's are kept only when no result has a time (and meta's ``finished``,
    when later, is kept as ``generated``: when the report was written); ``previous`` (an older
    report) adds ``changes``; ``expected_jobs`` (the plan's job ids) lists the ones without a
    result.
    """
    with frozen_heap():  # the results are not garbage: do not walk them on every collection
        packages = sorted((_job(r) for r in results), key=_sort_key)
    columns = interpreter_columns(packages)
    started, finished = run_times(results)
    derived: dict[str, Any] = {
        "harness_version": ",".join(sorted({r.harness_version for r in results} - {""})),
        "matrix_digest": "",
        "started": started,
        "finished": finished,
        "backends": sorted({r.backend for r in results}),
        "interpreters": [c.name for c in columns],
        "jobs": len(packages),
    }
    derived.update(meta)
    if started:
        derived["started"] = started
    if finished:
        if _instant(str(meta.get("finished") or "")) > _instant(finished):
            derived["generated"] = meta["finished"]
        derived["finished"] = finished
    have = {p.job_id for p in packages}
    changes = None
    if previous is not None:
        changes = tuple(diff_jobs(previous.packages, packages))
        by_job = {c.job_id: c.kind for c in changes}
        packages = [replace(p, change=by_job[p.job_id]) if p.job_id in by_job else p for p in packages]
    order = {p.job_id: i for i, p in enumerate(packages)}
    causes = build_causes(sorted(results, key=lambda r: order.get(r.job_id, 0)), {c.name: c.label for c in columns})
    kinds: dict[str, list[str]] = {}
    for c in causes:
        for m in c.members:
            kinds.setdefault(m.job_id, []).append(c.kind)
    packages = [_answered(p, kinds.get(p.job_id, ())) for p in packages]
    table = package_table(packages, columns)
    summary = {v: 0 for v in VERDICTS}
    answers = {a: 0 for a in ANSWERS}
    for row in table:
        summary[row.verdict] += 1
        answers[row.answer] += 1
    return CompatReport(
        meta=Meta.from_dict(derived),
        summary=summary,
        interpreters=tuple(columns),
        packages=tuple(packages),
        table=tuple(table),
        missing=tuple(sorted(set(expected_jobs or ()) - have)),
        changes=changes,
        causes=causes,
        answers=answers,
    )


def _answered(p: JobEntry, cause_kinds: Sequence[str]) -> JobEntry:
    got = answer(p, cause_kinds)
    return replace(p, answer=got.answer, caveat=got.caveat, cause=got.cause)


def _plain_file(root: Path, rel: str) -> bool:
    """``root/rel`` is a regular file, not a link, in real directories under ``root``."""
    src = root / rel
    try:
        st = src.lstat()
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and str(Path(os.path.realpath(src.parent))) == str(src.parent)


def copy_logs(report: CompatReport, dirs: Sequence[Path], out: Path) -> int:
    """Copy the logs a report links to from the dirs they were written in into ``out``.

    Needed when ``report --out`` is not the run's own output dir (merged
    shards), so the site's copies of the logs can be made from ``out``.  A log is copied
    only as a regular file reached through real directories inside its dir (package code
    wrote in that workspace: a planted link to a host file is never followed).  Returns
    files copied.
    """
    out = Path(out).resolve()
    roots = []
    for d in dirs:
        d = Path(d).resolve()
        roots.append(d.parent if d.name == "results" and not (d / "results").is_dir() else d)
    copied = 0
    for pkg in report.packages:
        for rel in pkg.logs + [ph.junit for ph in pkg.phases if ph.junit]:
            dest = out / rel
            if dest.exists():
                continue
            for root in roots:
                src = root / rel
                if root != out and _plain_file(root, rel):
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(src, dest)
                    copied += 1
                    break
    return copied
