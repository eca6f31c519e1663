"""JobResult files -> the report.json document every renderer reads.

``load_results`` reads result files from one or more output directories (the
shards of a run, or one local run) and names every file it could not use;
``build_report`` turns the results into one plain, deterministically ordered
dict, so a report merged from three shards equals the unsharded one apart
from timestamps.

``packages`` keeps one entry per job (interpreter x package); ``interpreters``
(the columns, oldest version first) and ``table`` (one row per package, one cell
per interpreter, and what differs between them) are the per-package view every
renderer shows, and ``summary`` counts packages, each once under its most severe
verdict across the interpreters.
"""

from __future__ import annotations

import gc
import json
import logging
import math
import os
import shutil
import stat
from collections.abc import Sequence
from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from .errors import ConfigError
from .evidence import coverage_to_dict
from .model import FINDING_KINDS, VERDICTS, Finding, JobResult, Phase, severity
from .render.pool import frozen_heap

log = logging.getLogger(__name__)

# 2: ``interpreters`` (the columns) and ``table`` (a row per package, a cell per interpreter);
#    ``summary`` counts packages, not jobs; ``packages[].interpreter`` has source, full_version.
REPORT_SCHEMA = 2


def _result_files(d: Path) -> list[Path]:
    """The result files of an output dir (DIR/results/*.json), or of a results dir itself."""
    sub = d / "results"
    if sub.is_dir():
        return sorted(sub.glob("*.json"))
    return sorted(d.glob("*.json"))


def _drop_tests(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without the per-test outcomes of its phases (the report never shows them)."""
    phases = data.get("phases")
    if not isinstance(phases, list):
        return data
    slim = [{k: v for k, v in p.items() if k != "tests"} if isinstance(p, dict) else p
            for p in phases]
    return {**data, "phases": slim}


MAX_RESULT_BYTES = 64 * 1024 * 1024  # a real result is a few hundred KB


class _Unusable(Exception):
    """A result file the report must skip (named with the reason, never followed blindly)."""


def _read_json(path: Path) -> Any:
    """A result file's JSON: a regular file inside its own results dir, of a sane size.

    A FIFO would hang the report, a link to /dev/zero exhaust its memory, a link out of the
    dir merge a file nobody put there: each is skipped with its reason (issue #17)."""
    st = path.lstat()
    if stat.S_ISLNK(st.st_mode):
        target = path.resolve()
        if target.parent != path.parent.resolve():
            raise _Unusable("a symlink that points outside its results dir")
        st = target.stat()
    if not stat.S_ISREG(st.st_mode):
        raise _Unusable("not a regular file")
    if st.st_size > MAX_RESULT_BYTES:
        raise _Unusable(f"larger than {MAX_RESULT_BYTES >> 20} MiB")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _type_problem(res: JobResult) -> str:
    """What in a parsed result has the wrong type for the report (hand-edited or hostile)."""
    for name in ("job_id", "package", "version", "verdict", "qualifier", "notes", "started", "finished"):
        if not isinstance(getattr(res, name), str):
            return f"{name} is not a string"
    for name in ("settings", "coverage", "metadata", "test_setup"):
        if not isinstance(getattr(res, name), dict):
            return f"{name} is not an object"
    if not all(isinstance(x, str) for x in res.links):
        return "links are not strings"
    for p in res.phases:
        if not isinstance(p.name, str) or not isinstance(p.duration, int | float) \
                or not math.isfinite(p.duration) or not isinstance(p.counts, dict):
            return f"phase {str(p.name)[:40]!r} has a bad name, duration or counts"
    for f in res.findings:
        if f.kind not in FINDING_KINDS or not isinstance(f.message, str) or not isinstance(f.excerpt, str):
            return f"a finding of kind {str(f.kind)[:40]!r} is not one the harness writes"
    return ""


def _parse(path: Path, tests: bool) -> tuple[JobResult | None, str]:
    """(result, "") or (None, why this file cannot be used)."""
    name = str(path)  # as the user gave the dir: "shard1/results/x.json"
    try:
        data = _read_json(path)
    except UnicodeDecodeError:
        return None, f"{name}: not UTF-8 text"
    except json.JSONDecodeError as e:
        return None, f"{name}: not valid JSON (line {e.lineno})"
    except OSError as e:
        return None, f"{name}: cannot read ({e.strerror})"
    except _Unusable as e:
        return None, f"{name}: skipped: {e}"
    except RecursionError:
        return None, f"{name}: JSON nested too deeply"
    try:
        res = JobResult.from_dict(data if tests else _drop_tests(data))
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as e:
        return None, f"{name}: not a valid result ({str(e)[:200]})"
    if res.verdict not in VERDICTS:
        return None, f"{name}: unknown verdict {str(res.verdict)[:40]!r}"
    why = _type_problem(res)
    if why:
        return None, f"{name}: not a valid result ({why})"
    return res, ""


def load_results(dirs: Sequence[Path], *,
                 tests: bool = False) -> tuple[list[JobResult], list[str]]:
    """Read every result file under ``dirs``; return (results, problems).

    A file that is not valid JSON, or not a valid result, is named in
    ``problems`` and left out, never merged.  The same job id in two files
    with different content is a ConfigError naming both (shards must be
    disjoint); identical copies are merged silently.  Per-test outcomes
    (``Phase.tests``) are only kept with ``tests=True``: no report shows them,
    and at 10,000 jobs they are most of the loading time.  (Parsing in forked
    workers was tried: sending the results back costs more than it saves.)
    """
    paths: list[Path] = []
    for d in dirs:
        d = Path(d)
        if not d.is_dir():
            raise ConfigError("not a directory (expected an output dir of `ft-harness run`)",
                              file=str(d))
        paths += _result_files(d)
    with frozen_heap():  # each file's objects are frozen as the next ones are parsed
        parsed = []
        for i, p in enumerate(paths):
            parsed.append(_parse(p, tests))
            if i % 1000 == 999:
                gc.freeze()
    problems: list[str] = []
    seen: dict[str, Path] = {}
    results: list[JobResult] = []
    for path, (res, problem) in zip(paths, parsed, strict=True):
        if res is None:
            problems.append(problem)
            continue
        if res.job_id in seen:  # rare: re-read both rather than keep every file's dict
            other = seen[res.job_id]
            if _read_json(other) != _read_json(path):
                raise ConfigError(
                    f"job {res.job_id!r} also in {other} with different content "
                    "(shards must be disjoint)",
                    file=str(path),
                )
            log.info("%s: same result as %s, merged", path, other)
            continue
        seen[res.job_id] = path
        results.append(res)
    for skipped in problems:  # the CLI prints each once (commands.write_report), made inert
        log.info("skipped %s", skipped)
    return results, problems


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
    if (".." not in path and "//" not in path and "./" not in path
            and not path.endswith(("/", "/."))):
        return path if path != "." else ""  # already plain (nearly always): no split/join
    parts = [x for x in path.split("/") if x not in ("", ".")]
    if ".." in parts:
        return ""
    return "/".join(parts)


def _phase(p: Phase) -> dict[str, Any]:
    return {
        "name": p.name,
        "kind": p.kind,
        "gil": p.gil,
        "rep": p.rep,
        "outcome": _phase_outcome(p),
        "exit_code": p.exit_code,
        "signal": p.signal,
        "timed_out": p.timed_out,
        "oom_killed": p.oom_killed,
        "infra": p.infra,
        "duration": round(p.duration, 3),
        "counts": {k: int(v) for k, v in sorted(p.counts.items())},
        "command": list(p.command),
        "env": dict(sorted(p.env.items())),
        "log": _safe_log(p.log),
        "junit": _safe_log(p.junit),
        "gil_modules": list(p.gil_modules),
    }


_FINDING_FIELDS = tuple(f.name for f in fields(Finding))


def _finding(f: Finding) -> dict[str, Any]:
    """Finding.to_dict without dataclasses.asdict's deep copy (reports can hold 10,000 jobs)."""
    d = {name: getattr(f, name) for name in _FINDING_FIELDS}
    d["modes"] = list(f.modes)
    d["ratio"] = f.ratio
    return d


def _package(r: JobResult) -> dict[str, Any]:
    findings = sorted(
        (_finding(f) for f in r.findings),
        key=lambda f: severity(f["kind"]),
    )
    phases = [_phase(p) for p in r.phases]
    it = r.interpreter
    verdict_label = f"{r.verdict} ({r.qualifier})" if r.qualifier else r.verdict
    return {
        "job_id": r.job_id,
        "key": r.key,
        "name": r.package,
        "version": r.version,
        "requested": r.requested,
        "source": r.source,
        "interpreter": {
            "name": it.name,
            "version": it.version,
            "key": it.key,
            "configure": list(it.configure),
            "free_threaded": it.free_threaded,
            "sanitizer": it.sanitizer,
            "source": it.source,
            "full_version": it.full_version,
        },
        "settings": dict(sorted(r.settings.items())),
        "backend": r.backend,
        "started": r.started,
        "finished": r.finished,
        "harness_version": r.harness_version,
        "duration": round(sum(p.duration for p in r.phases), 3),
        "verdict": r.verdict,
        "qualifier": r.qualifier,
        "verdict_label": verdict_label,
        "findings": findings,
        "phases": phases,
        "coverage": coverage_to_dict(r.coverage),
        "wheel": r.wheel.to_dict() if r.wheel else {},
        "metadata": r.metadata,
        "notes": r.notes,
        "links": list(r.links),
        "test_setup": dict(r.test_setup),
        "logs": [ph["log"] for ph in phases if ph["log"]],
    }


def _version_key(version: str) -> tuple[int, Version | str]:
    try:
        return (0, Version(version))
    except InvalidVersion:
        return (1, version)


def _sort_key(p: dict[str, Any]) -> tuple[Any, ...]:
    """By package name, then by interpreter in column order (oldest version first)."""
    it = p["interpreter"]
    return (p["name"].lower(), _version_key(it["full_version"] or it["version"]),
            it["sanitizer"] or "", it["name"], p["job_id"])


def interpreter_columns(packages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The interpreters of ``packages``, oldest version first, each with a short ``label``:
    ``3.13.5t`` (``3.13.5t+tsan`` for a sanitizer build), or its name when two would share one."""
    seen: dict[str, dict[str, Any]] = {}
    for p in packages:
        it = p["interpreter"]
        col = seen.setdefault(it["name"], {
            "name": it["name"], "version": it["version"],
            "full_version": it.get("full_version", ""), "source": it.get("source", ""),
            "configure": list(it["configure"]), "sanitizer": it["sanitizer"], "jobs": 0})
        col["jobs"] += 1
    cols = list(seen.values())  # packages are sorted by _sort_key: each name's first job is in order
    cols.sort(key=lambda c: (_version_key(c["full_version"] or c["version"]), c["sanitizer"] or "",
                             c["name"]))
    for c in cols:
        c["label"] = f"{c['full_version'] or c['version']}t" + (
            f"+{c['sanitizer']}" if c["sanitizer"] else "")
    labels = [c["label"] for c in cols]
    for c in cols:
        if labels.count(c["label"]) > 1 or not c["version"]:
            c["label"] = c["name"]
    return cols


def across(cells: dict[str, dict[str, Any]], columns: Sequence[dict[str, Any]]) -> str:
    """What differs between a package's interpreters, in column order, or "" when nothing does:
    ``build-failure on 3.13.5t, compatible on 3.13.15t``."""
    groups: dict[str, list[str]] = {}
    for c in columns:
        cell = cells.get(c["name"])
        if cell is not None:
            groups.setdefault(cell["verdict"], []).append(c["label"])
    if len(groups) < 2:
        return ""
    return ", ".join(f"{v} on {' and '.join(labels)}" for v, labels in groups.items())


def package_table(packages: Sequence[dict[str, Any]],
                  columns: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per package name (in report order): a cell per interpreter it ran on, the most
    severe verdict of them (what ``summary`` counts) and ``across``."""
    rows: dict[str, dict[str, Any]] = {}
    for p in packages:
        row = rows.setdefault(p["name"], {"name": p["name"], "cells": {}})
        cell = {"verdict": p["verdict"], "qualifier": p["qualifier"], "version": p["version"],
                "job_id": p["job_id"]}
        if p.get("change"):
            cell["change"] = p["change"]
        row["cells"].setdefault(p["interpreter"]["name"], cell)
    out = []
    for row in rows.values():
        cells = row["cells"]
        versions = sorted({c["version"] for c in cells.values()})
        out.append({
            "name": row["name"],
            "version": versions[0] if len(versions) == 1 else "",  # "": differs per interpreter
            "verdict": min((c["verdict"] for c in cells.values()), key=severity),
            "cells": {c["name"]: cells[c["name"]] for c in columns if c["name"] in cells},
            "across": across(cells, columns),
        })
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
    return (min(starts, key=_instant) if starts else "",
            max(ends, key=_instant) if ends else "")


def build_report(
    results: Sequence[JobResult],
    *,
    meta: dict[str, Any],
    previous: dict[str, Any] | None = None,
    expected_jobs: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The report.json document for ``results`` (see harness/schema/report.schema.json).

    ``meta`` (harness_version, matrix_digest, ...) overrides what is derived
    from the results, except the run's ``started``/``finished``: those are when the tests ran
    (the earliest result's start, the latest one's end), also after a merge of shards or a
    re-render later; meta's are kept only when no result has a time (and meta's ``finished``,
    when later, is kept as ``generated``: when the report was written); ``previous`` (an older report) adds ``changes``;
    ``expected_jobs`` (the plan's job ids) lists the ones without a result.
    """
    with frozen_heap():  # the results are not garbage: do not walk them on every collection
        packages = sorted((_package(r) for r in results), key=_sort_key)
    columns = interpreter_columns(packages)
    started, finished = run_times(results)
    derived: dict[str, Any] = {
        "harness_version": ",".join(sorted({r.harness_version for r in results} - {""})),
        "matrix_digest": "",
        "started": started,
        "finished": finished,
        "backends": sorted({r.backend for r in results}),
        "interpreters": [c["name"] for c in columns],
        "jobs": len(packages),
    }
    derived.update(meta)
    if started:
        derived["started"] = started
    if finished:
        if _instant(str(meta.get("finished") or "")) > _instant(finished):
            derived["generated"] = meta["finished"]
        derived["finished"] = finished
    have = {p["job_id"] for p in packages}
    report: dict[str, Any] = {
        "schema": REPORT_SCHEMA,
        "meta": derived,
        "summary": {},
        "interpreters": columns,
        "packages": packages,
        "table": [],
        "missing": sorted(set(expected_jobs or ()) - have),
    }
    if previous is not None:
        from .diff import diff_reports

        changes = diff_reports(previous, report)
        report["changes"] = [c.to_dict() for c in changes]
        by_job = {c.job_id: c.kind for c in changes}
        for p in packages:
            if p["job_id"] in by_job:
                p["change"] = by_job[p["job_id"]]
    report["table"] = package_table(packages, columns)
    summary = {v: 0 for v in VERDICTS}
    for row in report["table"]:
        summary[row["verdict"]] += 1
    report["summary"] = summary
    return report


def _plain_file(root: Path, rel: str) -> bool:
    """``root/rel`` is a regular file, not a link, in real directories under ``root``."""
    src = root / rel
    try:
        st = src.lstat()
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and str(Path(os.path.realpath(src.parent))) == str(src.parent)


def copy_logs(report: dict[str, Any], dirs: Sequence[Path], out: Path) -> int:
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
    for pkg in report["packages"]:
        for rel in pkg["logs"] + [ph["junit"] for ph in pkg["phases"] if ph["junit"]]:
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
