"""What makes site/ stand alone: the files its pages link, copied in.

Only ``site/`` is published (GitHub Pages), so nothing a page links may live outside it:

- ``site/report.json``: the report, the same text as ``out/report.json``;
- ``site/packages/<name>.json``: one document per package (its row and every job's entry of
  report.json), and ``site/packages.json`` listing them: a JSON API at stable URLs;
- ``site/logs/<job>/<log>.txt``: each phase's log (and JUnit XML), cut to ``LOG_LIMIT`` bytes
  (head and tail kept), at most ``LOGS_BUDGET`` bytes in all, the most severe jobs first; a
  log over the budget is "not kept" on its page and stays in the run's output dir.

Logs are written as ``.txt`` (served as text/plain: a hostile JUnit file served as XML could
carry script).  The workspace they come from is package-controlled: a log is read only as a
regular file, never through a symlink (harness.util.safefiles.read_regular), in a real directory
inside the output dir.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..core.model import severity
from ..results.report import CompatReport, JobEntry
from ..util.safefiles import read_regular, write_text_atomic

LOG_LIMIT = 256 * 1024  # per log: the head and the tail of a longer one
LOGS_BUDGET = 64 * 1024 * 1024  # all logs of a site together
API_SCHEMA = 1  # site/packages.json and site/packages/<name>.json
_CUT = b"\n[... cut ...]\n"  # what read_regular puts where it cut


def swap_dir(site: Path, name: str, fill: Callable[[Path], Any]) -> Any:
    """Replace ``site/name`` whole by a directory ``fill(tmp)`` writes: a reader sees the old
    set of files or the new one.  Returns what ``fill`` returns."""
    site.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=site, prefix=f".{name}-"))
    trash = None
    try:
        os.chmod(tmp, 0o755)  # mkdtemp makes it 0700; the site is for everyone to read
        got = fill(tmp)
        final = site / name
        if final.exists():
            trash = Path(tempfile.mkdtemp(dir=site, prefix=f".{name}-old-"))
            os.replace(final, trash / name)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if trash is not None:
            shutil.rmtree(trash, ignore_errors=True)
    return got


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name).lstrip(".") or "x"


def package_file(name: str) -> str:
    """``packages/<name>.json``: the PEP 503 normalized name (``Foo_Bar`` -> ``foo-bar``)."""
    return "packages/" + _safe(re.sub(r"[-_.]+", "-", name).lower()) + ".json"


class _Dirs:
    """Which directories under ``out`` are real ones inside it (no symlink on the way)."""

    def __init__(self, out: Path):
        self.out = os.path.realpath(out)
        self.ok: dict[str, bool] = {}

    def real(self, rel_dir: str) -> bool:
        got = self.ok.get(rel_dir)
        if got is None:
            want = os.path.join(self.out, rel_dir) if rel_dir else self.out
            got = self.ok[rel_dir] = os.path.realpath(want) == want and os.path.isdir(want)
        return got


def _excerpt(data: bytes, limit: int, rel: str) -> bytes:
    """``data`` as read_regular gave it, its cut (if any) saying where the whole log is."""
    if len(data) <= limit:
        return data
    half = limit // 2
    note = (
        f"\n[... the middle of this log is cut: the site keeps {limit // 1024} KiB of each "
        f"log; the whole log is {rel} in the run's output]\n"
    ).encode()
    return data[:half] + note + data[half + len(_CUT) :]


def publish_logs(
    report: CompatReport, out: Path, site: Path, *, limit: int = LOG_LIMIT, budget: int = LOGS_BUDGET
) -> dict[str, str]:
    """Copy the logs and JUnit files the report links into ``site/logs/`` (replaced whole);
    returns {path under out/: path under site/} of every file kept."""

    def fill(tmp: Path) -> dict[str, str]:
        dirs = _Dirs(out)
        kept: dict[str, str] = {}
        left = budget
        for p in sorted(report.packages, key=lambda p: severity(p.verdict)):
            job_dir = _safe(p.job_id)
            used: set[str] = set()
            for ph in p.phases:
                for rel in (ph.log, ph.junit):
                    if not rel or rel in kept or left <= 0:
                        continue
                    if not dirs.real(rel.rpartition("/")[0]):
                        continue
                    data = read_regular(out / rel, limit)
                    if data is None:
                        continue
                    data = _excerpt(data, limit, rel).decode("utf-8", "replace").encode()
                    if len(data) > left:
                        left = 0  # the budget is spent: this log and the rest stay out
                        continue
                    name = base = _safe(rel.rpartition("/")[2]) + ".txt"
                    n = 2
                    while name in used:
                        name, n = f"{n}-{base}", n + 1
                    used.add(name)
                    (tmp / job_dir).mkdir(exist_ok=True)
                    (tmp / job_dir / name).write_bytes(data)  # UTF-8, bad bytes replaced
                    left -= len(data)
                    kept[rel] = f"logs/{job_dir}/{name}"
        return kept

    return swap_dir(site, "logs", fill)


_ENCODE = json.JSONEncoder(ensure_ascii=False).encode  # compact: json's C encoder (indent is
# the pure-Python one: 7 s for 3,000 packages instead of 0.5 s)


def _json(data: Any) -> str:
    return _ENCODE(data) + "\n"


def write_api(
    report: CompatReport,
    site: Path,
    rows: list[dict[str, Any]],
    logs: dict[str, str],
    encoded: Sequence[str] | None = None,
) -> list[Path]:
    """site/packages.json and site/packages/<name>.json (the directory replaced whole).

    ``encoded``: report.packages already as JSON text, one string each (report.json's lines):
    a package's jobs are spliced in, not encoded a second time."""
    pages = {r["p"].job_id: r["page"] for r in rows}
    jobs: dict[str, list[JobEntry]] = {}
    texts: dict[str, list[str]] = {}
    if encoded is None:
        encoded = [_ENCODE(p.to_dict()) for p in report.packages]
    for p, text in zip(report.packages, encoded, strict=True):
        jobs.setdefault(p.name, []).append(p)
        texts.setdefault(p.name, []).append(text)
    m = report.meta
    meta = {
        "harness_version": m.harness_version,
        "matrix_digest": m.matrix_digest,
        "started": m.started,
        "finished": m.finished,
    }
    index = []
    files: dict[str, str] = {}
    for row in report.table:
        f = package_file(row.name)
        n = 2
        while f in files.values():  # two names that normalize alike: rare, kept apart
            f, n = package_file(f"{row.name}-{n}"), n + 1
        files[row.name] = f
        first = next(iter(row.cells.values()), None)
        index.append(
            {
                "name": row.name,
                "version": row.version,
                "verdict": row.verdict,
                "answer": row.answer,
                "file": f,
                "page": pages.get(first.job_id, "") if first else "",
            }
        )

    def fill(tmp: Path) -> list[Path]:
        written = []
        for row in report.table:
            name = files[row.name].removeprefix("packages/")
            doc = {
                "schema": API_SCHEMA,
                "report_schema": report.schema,
                "report": meta,
                "name": row.name,
                "row": row.to_dict(),
                "site": {
                    p.job_id: {
                        "page": pages.get(p.job_id, ""),
                        "logs": {rel: logs[rel] for ph in p.phases for rel in (ph.log, ph.junit) if rel in logs},
                    }
                    for p in jobs.get(row.name, [])
                },
            }
            body = _ENCODE(doc)[:-1] + ', "jobs": [' + ", ".join(texts.get(row.name, [])) + "]}\n"
            (tmp / name).write_text(body, encoding="utf-8")
            written.append(site / "packages" / name)
        return written

    written = swap_dir(site, "packages", fill)
    write_text_atomic(
        site / "packages.json", _json({"schema": API_SCHEMA, "report": "report.json", "meta": meta, "packages": index})
    )
    return [site / "packages.json", *written]
