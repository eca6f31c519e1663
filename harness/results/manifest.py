"""The manifest of the results a run or a report kept: job id -> sha256 of the file (#46).

``run --reuse DIR`` takes an earlier result only when ``DIR/manifest.json`` lists its job id
with the sha256 of ``DIR/results/<job id>.json``: a file anything else put there -- a package's
planted result, a file left from another run, a copy step's stray match -- is refused and
listed.  Who writes one:

* ``ft-harness run --out OUT``: ``OUT/manifest.json`` over ``OUT/results/``, at the end of the run
  (written by the harness, outside every job's workspace);
* ``ft-harness report ... --keep-results DIR``: the results the report merged (only planned jobs
  with ``--matrix``), copied byte for byte into ``DIR/results/`` with ``DIR/manifest.json``.  The
  workflow caches that dir for the next week's ``--reuse``, and saves it only on runs of the
  default branch.

The manifest is JSON ``{"schema": "ft-harness-manifest/1", "results": {job id: sha256}}``,
written atomically; read back with a size cap, every problem one line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from ..util import safejson
from ..util.safefiles import write_json_atomic

NAME = "manifest.json"
SCHEMA = "ft-harness-manifest/1"
MAX_BYTES = 16 << 20  # 100,000 jobs' entries are ~10 MiB
JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,200}")  # plan.Job.job_id: "<interp>--<package>"
SHA256 = re.compile(r"[0-9a-f]{64}")


class BadManifest(Exception):
    """A manifest that cannot be used (its one-line reason)."""


def write(d: Path, entries: Mapping[str, str]) -> Path:
    """Write ``d/manifest.json`` listing ``entries`` (job id -> sha256); return its path."""
    path = d / NAME
    write_json_atomic(path, {"schema": SCHEMA, "results": dict(sorted(entries.items()))})
    return path


def read(d: Path) -> dict[str, str]:
    """``d/manifest.json``'s entries; BadManifest (one line) when it is missing or not one."""
    from .load import _Unusable, read_raw

    path = d / NAME
    if not path.exists() and not path.is_symlink():
        raise BadManifest(
            f"{path}: no manifest (written by `ft-harness run` and by "
            "`ft-harness report --keep-results`); nothing is reused from this dir"
        )
    try:
        data = safejson.loads(read_raw(path, MAX_BYTES))
    except (OSError, _Unusable, UnicodeDecodeError, ValueError, RecursionError, RuntimeError) as e:
        raise BadManifest(f"{path}: cannot be read ({str(e)[:200]})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("results"), dict):
        raise BadManifest(f"{path}: not an ft-harness manifest (schema {SCHEMA})")
    out: dict[str, str] = {}
    for job_id, sha in data["results"].items():
        if not JOB_ID.fullmatch(job_id) or not isinstance(sha, str) or not SHA256.fullmatch(sha):
            raise BadManifest(f"{path}: entry {str(job_id)[:80]!r} is not a job id and a sha256")
        out[job_id] = sha
    return out


def keep(sources: Mapping[str, tuple[Path, str]], job_ids: list[str], dest: Path) -> list[str]:
    """Copy the result files of ``job_ids`` (``sources``: job id -> (file read, its sha256), as
    ``load_results`` filled it) into ``dest/results/`` byte for byte, unless they are there
    already, and list them in ``dest/manifest.json``; return the problems (one line each: a file
    that changed since it was read is left out)."""
    import hashlib

    from .load import read_raw

    entries: dict[str, str] = {}
    problems: list[str] = []
    (dest / "results").mkdir(parents=True, exist_ok=True)
    for job_id in job_ids:
        src, sha = sources[job_id]
        dst = dest / "results" / f"{job_id}.json"
        if not (dst.exists() and dst.resolve() == src.resolve()):
            raw = read_raw(src)
            if hashlib.sha256(raw).hexdigest() != sha:
                problems.append(f"{src}: changed since it was read; not kept")
                continue
            tmp = dst.with_name(f".{dst.name}.tmp")
            tmp.write_bytes(raw)
            tmp.replace(dst)
        entries[job_id] = sha
    write(dest, entries)
    return problems
