"""``ft-harness report`` and ``ft-harness diff``: result dirs merged into the report
(``write_report``, which ``run`` calls too, for its own --out), and ``--fail-on``'s gate.

Each command loads its input first and imports the heavy modules after, so bad input fails at once.
"""

from __future__ import annotations

import argparse
import errno
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..core.errors import ConfigError, InfraError, RegressionError
from ..core.model import VERDICTS, now_iso
from ..util import textsafe

if TYPE_CHECKING:
    from ..config.plan import Job
    from ..results.feed import Feed
    from ..results.report import CompatReport
    from ..results.reported import Reported

STORE_FILE = "store.json"  # what `ft-harness store` did before the jobs (harness.job.prebuild), in --out


def write_report(
    dirs: list[Path],
    out: Path,
    *,
    meta: dict[str, Any],
    previous: Path | None,
    expected: list[str] | None,
    history: Path | None = None,
    require_results: bool = False,
    step_summary: bool = True,
    site_url: str = "",
    planned: Sequence[Job] | None = None,
    keep: Path | None = None,
    feed_in: tuple[Reported | None, Feed | None] = (None, None),  # reported.yaml, the previous findings.json
) -> CompatReport:
    """Aggregate the result files of ``dirs`` and render every report into ``out``; with ``planned`` (the plan's
    jobs), only the results that belong to one of them; with ``keep``, the merged result files copied into
    ``keep/results/`` and listed in ``keep/manifest.json`` (what ``run --reuse`` accepts); findings.json: ``_feed``."""
    from .. import render
    from ..results import aggregate, manifest
    from ..results.load import load_json, load_results, read_report, stray_results

    sources: dict[str, tuple[Path, str]] = {}
    results, problems = load_results(dirs, sources=sources)
    for p in problems:
        print(f"ft-harness: skipped {textsafe.line(p)}", file=sys.stderr)  # names a file in a results dir
    merging = [d for d in dirs if Path(d).resolve() != out.resolve()]  # shards' artifacts
    for p in stray_results(merging):  # planted in a workspace's logs: never read, listed
        print(f"ft-harness: {textsafe.line(p)}", file=sys.stderr)
    if planned is not None:
        from ..config.plan import in_plan

        results, refused = in_plan(results, planned)
        for line in refused:  # listed, never merged: a shard's artifact is not trusted
            print(f"ft-harness: {textsafe.line(line)}", file=sys.stderr)
    if keep is not None:
        try:
            for line in manifest.keep(sources, [r.job_id for r in results], keep):
                print(f"ft-harness: {textsafe.line(line)}", file=sys.stderr)
        except OSError as e:
            raise InfraError(f"cannot keep the results in {keep}: {e.strerror or e}") from None
    if require_results and not results:
        where = ", ".join(str(d) for d in dirs)
        why = f"{len(problems)} result file(s) skipped as invalid" if problems else "no results/*.json"
        raise ConfigError(f"no valid result to report in {where} ({why})")
    prev = read_report(previous, "old") if previous else None
    from ..results import storecost  # the store's cost and reuse (#43)

    before = load_json(out / STORE_FILE) if (out / STORE_FILE).is_file() else None
    meta = {**meta, "store": storecost.summary(results, before if isinstance(before, dict) else None)}
    report = aggregate.build_report(results, meta=meta, previous=prev, expected_jobs=expected)
    hist = load_json(history) if history else None
    found = _feed(report, out, *feed_in)
    try:
        if any(Path(d).resolve() != out.resolve() for d in dirs):
            aggregate.copy_logs(report, dirs, out)  # merged shards: the site links to logs under out/
        written = render.write_all(report, out, history=hist, step_summary=step_summary, site_url=site_url, feed=found)
    except OSError as e:
        if e.errno in NO_SPACE:  # the disk, not the input: exit 4, one line
            raise InfraError(
                f"no space left to write the report in {out} ({e.strerror}); "
                "free some and run `ft-harness report` again"
            ) from None
        raise
    for path in written:
        if path.name in ("report.md", "report.json", "index.html", "junit.xml") or path == out / "findings.json":
            print(f"wrote {path}")
    summary = ", ".join(f"{n} {v}" for v, n in report.summary.items() if n)
    across = (
        (f" ({len(report.table)} packages on {len(report.interpreters)} interpreters, {len(report.packages)} jobs)")
        if report.several
        else ""
    )
    print(f"summary: {summary or 'no packages'}{across}")
    for row in report.table:
        if row.across:
            print(textsafe.line(f"  {row.name}: {row.across}"))  # from result files
    if report.missing:
        print(textsafe.line(f"missing results: {', '.join(report.missing)}"), file=sys.stderr)
    return report


def feed_inputs(reported: str | None, previous: str | None) -> tuple[Reported | None, Feed | None]:
    """``--reported FILE`` and the findings.json beside ``--previous``, read and checked before
    any work: a ConfigError (one line, exit 2) for either that is wrong."""
    from ..results import reported as reported_file
    from ..results.load import feed_beside, read_feed

    got = reported_file.load(Path(reported)) if reported else None
    beside = feed_beside(Path(previous)) if previous else None
    return got, (read_feed(beside) if beside else None)


def _feed(report: CompatReport, out: Path, reported: Reported | None, previous: Feed | None) -> Feed:
    """The report's findings feed, remembering ``previous`` (else the findings.json already in ``out``)
    and showing the links of ``reported`` (both read before any work: ``feed_inputs``); a warning line
    per id of reported.yaml it could not place, and for a findings.json in ``out`` it could not read
    (then the feed starts afresh)."""
    from ..results import feed
    from ..results import reported as reported_file
    from ..results.load import read_feed

    own = out / feed.FEED_FILE
    if previous is None and own.is_file():
        try:
            previous = read_feed(own)
        except ConfigError as e:
            print(f"ft-harness: warning: {textsafe.line(str(e))}; the feed starts afresh", file=sys.stderr)
    found, unplaced = feed.build(report, previous=previous, reported=reported.links if reported else None)
    for line in reported_file.warnings(reported, unplaced) if reported else ():
        print(f"ft-harness: {textsafe.line(line)}", file=sys.stderr)
    return found


NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # a full disk, a quota, a file-size limit


def gate(report: CompatReport, fail_on: str | None) -> int:
    """0, or RegressionError (exit 1) when a package's verdict is one of ``--fail-on``."""
    if not fail_on:
        return 0
    wanted = {v.strip() for v in fail_on.split(",") if v.strip()}
    bad = wanted - set(VERDICTS)
    if bad:
        raise ConfigError(f"--fail-on: unknown verdict {sorted(bad)[0]!r} (one of {', '.join(VERDICTS)})")
    hit = [p for p in report.packages if p.verdict in wanted]
    if hit:
        names = textsafe.line(", ".join(f"{p.name} ({p.verdict})" for p in hit))
        raise RegressionError(f"--fail-on matched: {names}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    reported, previous_feed = feed_inputs(args.reported, args.previous)
    now = now_iso()
    meta: dict[str, Any] = {
        "harness_version": __version__,
        "started": now,
        "finished": now,
        "backend": "",
        "sources": [str(d) for d in args.dirs],
    }
    out = Path(args.out) if args.out else Path(args.dirs[0])
    expected = planned = None
    if args.matrix:  # the plan: its jobs without a result are missing, results of no job of it refused
        from ..config import matrix, plan, select

        resolved = Path(args.resolved) if args.resolved else None
        spec = select.expand_spec(matrix.load(args.matrix), resolved)
        planned = plan.make_plan(spec)
        expected = [j.job_id for j in planned]
        meta["matrix"], meta["matrix_digest"] = str(args.matrix), spec.digest
    report = write_report(
        [Path(d) for d in args.dirs],
        out,
        meta=meta,
        previous=Path(args.previous) if args.previous else None,
        expected=expected,
        planned=planned,
        history=Path(args.history) if args.history else None,
        require_results=True,
        site_url=args.site_url or "",
        keep=Path(args.keep_results) if args.keep_results else None,
        feed_in=(reported, previous_feed),
    )
    return gate(report, args.fail_on)


def cmd_diff(args: argparse.Namespace) -> int:
    from ..results import diff
    from ..results.load import read_report

    old = read_report(Path(args.old), "old")
    new = read_report(Path(args.new), "new")
    changes = diff.diff_reports(old, new)
    print(diff.format_changes(changes))
    return 1 if diff.has_regression(changes) else 0
