"""Result files -> JobResults: every file under the output dirs of a run (or its shards), read
with suspicion.

``load_results`` reads result files from one or more output directories and names every file it
could not use, with the reason, instead of merging it: not JSON, not a result, a wrong type in a
field the report shows, a FIFO, a link to a device or out of its results dir, a huge file
(issue #17).  The same job in two shards with different content is a ConfigError.
``harness.results.aggregate`` turns what it returns into the report.

``read_report`` is the one reader of a report.json (``report --previous``, ``diff``, ``reproduce``,
``plan --durations``), through ``load_json``: the JSON files named on the command line.
"""

from __future__ import annotations

import gc
import hashlib
import json
import logging
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError
from ..core.model import FINDING_KINDS, VERDICTS, JobResult
from ..util import safejson, typecheck
from ..util.pool import frozen_heap
from .feed import FEED_FILE, Feed
from .report import CompatReport

log = logging.getLogger(__name__)


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
    slim = [{k: v for k, v in p.items() if k != "tests"} if isinstance(p, dict) else p for p in phases]
    return {**data, "phases": slim}


MAX_RESULT_BYTES = 64 * 1024 * 1024  # a real result is a few hundred KB


class _Unusable(Exception):
    """A result file the report must skip (named with the reason, never followed blindly)."""


def read_raw(path: Path, cap: int = MAX_RESULT_BYTES) -> bytes:
    """A file's bytes: a regular file inside its own dir, of at most ``cap`` bytes.

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
    if st.st_size > cap:
        raise _Unusable(f"larger than {cap >> 20} MiB")
    # O_NONBLOCK: a FIFO swapped in since the stat does not hang the open; fstat checks again
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _Unusable("not a regular file")
        raw = f.read(cap + 1)
    if len(raw) > cap:
        raise _Unusable(f"larger than {cap >> 20} MiB")
    return raw


def _read_json(path: Path) -> Any:
    """A result file's JSON, read by ``read_raw``."""
    return safejson.loads(read_raw(path))


def _type_problem(res: JobResult) -> str:
    """What in a parsed result has the wrong type (hand-edited or hostile): every field checked
    against its annotation (harness.util.typecheck), the finding kinds against the harness's."""
    for f in res.findings:
        if f.kind not in FINDING_KINDS:
            return f"a finding of kind {str(f.kind)[:40]!r} is not one the harness writes"
    return typecheck.problem(res)


def _parse(path: Path, tests: bool, sha256: str = "") -> tuple[JobResult | None, str, str]:
    """(result, "", its sha256) or (None, why this file cannot be used, ""); ``sha256``: the
    digest its bytes must have (a manifest's entry), '' for any."""
    name = str(path)  # as the user gave the dir: "shard1/results/x.json"
    try:
        raw = read_raw(path)
        digest = hashlib.sha256(raw).hexdigest()
        if sha256 and digest != sha256:
            return None, f"{name}: refused: its sha256 is not the one its manifest lists", ""
        data = safejson.loads(raw)
    except UnicodeDecodeError:
        return None, f"{name}: not UTF-8 text", ""
    except safejson.NumberTooLong as e:
        return None, f"{name}: not a valid result (line {e.lineno}: {e.msg})", ""
    except json.JSONDecodeError as e:
        return None, f"{name}: not valid JSON (line {e.lineno})", ""
    except OSError as e:
        return None, f"{name}: cannot read ({e.strerror})", ""
    except _Unusable as e:
        return None, f"{name}: skipped: {e}", ""
    except RecursionError:
        return None, f"{name}: JSON nested too deeply", ""
    except RuntimeError as e:  # Python 3.11's symlink loop
        return None, f"{name}: cannot read ({e})", ""
    try:
        res = JobResult.from_dict(data if tests else _drop_tests(data))
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as e:
        return None, f"{name}: not a valid result ({str(e)[:200]})", ""
    if res.verdict not in VERDICTS:
        return None, f"{name}: unknown verdict {str(res.verdict)[:40]!r}", ""
    try:
        why = _type_problem(res)
    except RecursionError:
        why = "nested too deeply"
    if why:
        return None, f"{name}: not a valid result ({why[:300]})", ""
    if path.name != f"{res.job_id}.json":  # the harness names each file by its job id
        return None, f"{name}: refused: it holds job {res.job_id[:80]!r}, not the job its name says", ""
    return res, "", digest


def read_one(path: Path, sha256: str = "") -> tuple[JobResult | None, str]:
    """One result file, per-test outcomes kept, read as ``load_results`` reads each (``run``'s
    resume, ``run --reuse``): (result, "") or (None, one line naming the file and why it cannot be
    used); ``sha256``: the digest a manifest lists for it (harness.results.manifest)."""
    res, why, _ = _parse(path, True, sha256)
    return res, why


def load_results(
    dirs: Sequence[Path], *, tests: bool = False, sources: dict[str, tuple[Path, str]] | None = None
) -> tuple[list[JobResult], list[str]]:
    """Read every result file under ``dirs``; return (results, problems).

    A file that is not valid JSON, or not a valid result, is named in
    ``problems`` and left out, never merged.  The same job id in two files
    with different content is a ConfigError naming both (shards must be
    disjoint); identical copies are merged silently.  Per-test outcomes
    (``Phase.tests``) are only kept with ``tests=True``: no report shows them,
    and at 10,000 jobs they are most of the loading time.  (Parsing in forked
    workers was tried: sending the results back costs more than it saves.)  ``sources``, when
    given, is filled with job id -> (the file read, its sha256) for each result returned.

    Only ``DIR/results/*.json`` (or ``DIR/*.json`` of a results dir) is read, at that depth: a
    file a package planted anywhere else in a shard's artifact (its logs) is never looked at, and
    one whose name is not its job id is refused (#46).
    """
    paths: list[Path] = []
    for d in dirs:
        d = Path(d)
        if not d.is_dir():
            raise ConfigError("not a directory (expected an output dir of `ft-harness run`)", file=str(d))
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
    for path, (res, problem, digest) in zip(paths, parsed, strict=True):
        if res is None:
            problems.append(problem)
            continue
        if res.job_id in seen:  # rare: re-read both rather than keep every file's dict
            other = seen[res.job_id]
            if _read_json(other) != _read_json(path):
                raise ConfigError(
                    f"job {res.job_id!r} also in {other} with different content (shards must be disjoint)",
                    file=str(path),
                )
            log.info("%s: same result as %s, merged", path, other)
            continue
        seen[res.job_id] = path
        results.append(res)
        if sources is not None:
            sources[res.job_id] = (path, digest)
    for skipped in problems:  # the CLI prints each once (reporting.write_report), made inert
        log.info("skipped %s", skipped)
    return results, problems


MAX_JSON = 256 << 20  # a report.json of thousands of packages is a few MiB


def load_json(path: Path) -> Any:
    """A JSON file named on the command line (--previous, --history, diff's reports; in CI one
    restored from a cache): a FIFO, a device, a huge file or 200k-deep nesting is one line, exit 2."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ConfigError("no such file", file=str(path)) from None
    except OSError as e:
        raise ConfigError(f"cannot read it: {e.strerror}", file=str(path)) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise ConfigError("not a regular file (a directory, FIFO or device?)", file=str(path))
    with os.fdopen(fd, "rb") as f:
        if st.st_size > MAX_JSON:
            raise ConfigError(f"the file is {st.st_size} bytes; at most {MAX_JSON >> 20} MiB", file=str(path))
        raw = f.read(MAX_JSON + 1)
    try:
        return safejson.loads(raw)
    except UnicodeDecodeError as e:
        raise ConfigError(f"not UTF-8 (byte {e.start})", file=str(path)) from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"not valid JSON: {e.msg}", file=str(path), line=e.lineno) from None
    except RecursionError:
        raise ConfigError("not valid JSON: nested too deeply", file=str(path)) from None


def read_report(path: Path, which: str) -> CompatReport:
    """A report.json named on the command line, or the output dir that holds one: read by
    ``load_json`` and checked by ``check_report`` (``which``: "old", "new", "the", in its errors)."""
    path = Path(path)
    if path.is_dir() and (path / "report.json").is_file():
        path = path / "report.json"
    return check_report(load_json(path), which, file=str(path))


def check_report(data: Any, which: str, *, file: str | None = None) -> CompatReport:
    """A report.json document, checked for what its readers need: a ConfigError naming the
    first thing wrong with it (and ``file``, when given)."""

    def bad(why: str) -> ConfigError:
        return ConfigError(f"{which} report {why}", file=file)

    if not isinstance(data, dict) or not isinstance(data.get("packages"), list):
        raise bad("has no 'packages' list (is it a report.json?)")
    for p in data["packages"]:
        if not isinstance(p, dict) or "job_id" not in p or "verdict" not in p:
            raise bad("has a package without job_id/verdict")
        if not isinstance(p["job_id"], str):
            raise bad(f"has a job_id that is not a string: {str(p['job_id'])[:80]!r}")
        if p["verdict"] not in VERDICTS:
            raise ConfigError(
                f"{which} report: {p['job_id'][:80]!r} has verdict "
                f"{str(p['verdict'])[:40]!r}, not one of the harness's verdicts",
                file=file,
            )
        interp = p.get("interpreter")
        wrong = next((k for k in ("name", "version") if not isinstance(p.get(k, ""), str)), None)
        if wrong is None and not (
            interp is None or (isinstance(interp, dict) and isinstance(interp.get("name", ""), str))
        ):
            wrong = "interpreter"
        if wrong:
            raise ConfigError(
                f"{which} report: {p['job_id'][:80]!r} has a {wrong} of the wrong type "
                f"({type(p[wrong]).__name__}; is it a report.json?)",
                file=file,
            )
    return CompatReport.from_dict(data)


MAX_WALK = 200_000  # entries looked at per dir when listing stray files


def stray_results(dirs: Sequence[Path]) -> list[str]:
    """Files under ``dirs`` that look like results or manifests (``*.json`` under a ``results``
    dir, or ``manifest.json``) but are not where the harness writes them (``DIR/results/*.json``,
    ``DIR/manifest.json``): never read, listed so a planted file is seen (#46).  Symlinks are not
    followed; at most ``MAX_WALK`` entries per dir are looked at."""
    out: list[str] = []
    for d in dirs:
        d = Path(d)
        seen = 0
        for root, subdirs, files in os.walk(d, followlinks=False):
            seen += len(subdirs) + len(files)
            rel = Path(root).relative_to(d)
            for name in files:
                if not name.endswith(".json"):
                    continue
                fixed = (rel == Path("results")) or (rel == Path(".") and name == "manifest.json")
                if not fixed and (name == "manifest.json" or "results" in rel.parts):
                    out.append(
                        f"{Path(root) / name}: refused: not at DIR/results/*.json "
                        "(a file in a job's workspace or logs is never read as a result)"
                    )
            if seen > MAX_WALK:
                out.append(f"{d}: more than {MAX_WALK} entries; the rest not looked at")
                break
    return out


def read_feed(path: Path) -> Feed:
    """A findings.json (harness.results.feed) named on the command line, or beside the report.json
    that is: read by ``load_json`` and ``Feed.from_dict``, a ConfigError naming what is wrong."""
    try:
        return Feed.from_dict(load_json(path))
    except ValueError as e:
        raise ConfigError(f"not a findings.json the harness can read: {e}", file=str(path)) from None


def feed_beside(report: Path) -> Path | None:
    """The findings.json beside a report (``report --previous``'s file or dir), None when there is none."""
    report = Path(report)
    found = (report if report.is_dir() else report.parent) / FEED_FILE
    return found if found.is_file() else None
