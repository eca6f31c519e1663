"""ft-harness command line: argparse, HarnessError -> one line and an exit code, progress output.

Exit codes: 0 the harness worked (whatever the packages did), 1 a gate failed
(--fail-on, diff regression), 2 bad input, 3 interpreter build failed,
4 infrastructure (docker, disk), 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

from . import __version__
from .errors import ConfigError, HarnessError, RegressionError
from .model import VERDICTS

log = logging.getLogger("harness")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


# ----------------------------------------------------------------------------- progress


class PlainReporter:
    """Plain lines (CI, pipes): one per step, GitHub ::group:: folds when on Actions."""

    def __init__(self) -> None:
        self.total = 0
        self.done_n = 0
        self.t0 = time.monotonic()
        self.gha = os.environ.get("GITHUB_ACTIONS") == "true"

    def _say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.t0:7.1f}s] {text}", flush=True)

    def start(self, total: int, skipped: int) -> None:
        self.total, self.done_n = total, skipped
        self._say(f"{total} jobs: {skipped} already done, {total - skipped} to run")

    def step(self, job_id: str, step: str) -> None:
        self._say(f"[{self.done_n}/{self.total}] {job_id}: {step}")

    def done(self, result, elapsed: float) -> None:  # noqa: ANN001
        self.done_n += 1
        extra = f" ({result.qualifier})" if result.qualifier else ""
        self._say(f"[{self.done_n}/{self.total}] {result.job_id}: {result.verdict}{extra} in {elapsed:.0f}s")

    def finish(self) -> None:
        pass


class RichReporter(PlainReporter):
    """A live status line per running job in a terminal."""

    def __init__(self) -> None:
        super().__init__()
        from rich.console import Console
        from rich.live import Live
        from rich.table import Table

        self._Table = Table
        self.console = Console(stderr=True)
        self.running: dict[str, tuple[str, float]] = {}
        self.live = Live(console=self.console, refresh_per_second=4, transient=True)

    def _render(self):  # noqa: ANN202
        t = self._Table.grid(padding=(0, 2))
        t.add_row(f"[bold]{self.done_n}/{self.total} done[/]", f"{time.monotonic() - self.t0:.0f}s")
        for job_id, (step, since) in sorted(self.running.items()):
            t.add_row(f"  {job_id}", f"{step} ({time.monotonic() - since:.0f}s)")
        return t

    def start(self, total: int, skipped: int) -> None:
        self.total, self.done_n = total, skipped
        self.console.print(f"{total} jobs: {skipped} already done, {total - skipped} to run")
        self.live.start()

    def step(self, job_id: str, step: str) -> None:
        self.running[job_id] = (step, time.monotonic())
        self.live.update(self._render())

    def done(self, result, elapsed: float) -> None:  # noqa: ANN001
        self.done_n += 1
        self.running.pop(result.job_id, None)
        extra = f" ({result.qualifier})" if result.qualifier else ""
        self.live.console.print(f"[{self.done_n}/{self.total}] {result.job_id}: [bold]{result.verdict}[/]{extra} in {elapsed:.0f}s")
        self.live.update(self._render())

    def finish(self) -> None:
        self.live.stop()


def _reporter():  # noqa: ANN202
    if IN_CI or not sys.stderr.isatty():
        return PlainReporter()
    return RichReporter()


# ----------------------------------------------------------------------------- commands


def _choose_backend(name: str) -> str:
    if name != "auto":
        return name
    try:
        from .backends.docker import docker_available
    except ImportError:
        return "local"
    ok, why = docker_available()
    if ok:
        return "docker"
    print(f"ft-harness: no docker engine answers ({why}); using --backend local", file=sys.stderr)
    return "local"


def _prepare(spec, jobs, backend_name: str, cache: Path, run_id: str, workers: int):  # noqa: ANN001, ANN202
    """Build or reuse every interpreter the jobs need; return (backend, {name: Prepared})."""
    from . import interpreters
    from .runner import Prepared

    needed = {j.interpreter.name: j.interpreter for j in jobs}
    prepared = {}
    if backend_name == "local":
        from .backends.local import LocalBackend

        tsan = any(i.sanitizer for i in needed.values())
        backend = LocalBackend(mem_limit=None if tsan else 4 << 30, pip_cache=cache / "pip")
        for name, interp in needed.items():
            built = interpreters.ensure_built(interp, cache)
            print(f"interpreter {name}: {'cache hit' if built.cache_hit else 'built'} ({built.info.key})",
                  flush=True)
            prepared[name] = Prepared(info=built.info, python=str(built.python), cache_hit=built.cache_hit,
                                      source_tarball=str(built.source_tarball))
        return backend, prepared
    import docker

    from . import images
    from .backends.docker import DockerBackend

    client = docker.from_env()
    images_by_name = {}
    for name, interp in needed.items():
        ref = images.ensure_interpreter_image(client, interp, cache)
        print(f"image {ref.tag}: {'reused' if ref.reused else 'built'}", flush=True)
        images_by_name[name] = ref
        info = interpreters.InterpreterInfo(
            name=interp.name, version=interp.version, key=ref.key, configure=interp.configure_flags,
            free_threaded=True, sanitizer=interp.sanitizer, python=ref.python)
        prepared[name] = Prepared(info=info, python=ref.python, cache_hit=ref.reused,
                                  source_tarball=str(interpreters.fetch_source(interp, cache)))
    if len({r.tag for r in images_by_name.values()}) > 1:
        raise ConfigError("the docker backend runs one interpreter per run for now; use --interpreter NAME")
    ref = next(iter(images_by_name.values()))
    cpus = max(1.0, (os.cpu_count() or 2) / max(1, workers))
    return DockerBackend(image=ref.tag, run_id=run_id, cpus=cpus), prepared


def cmd_run(args: argparse.Namespace) -> int:
    from . import interpreters, matrix, plan

    spec = matrix.load(args.matrix)  # bad input fails here, before anything heavy is imported
    from .runner import run_plan

    jobs = plan.make_plan(spec)
    if args.shard:  # shard the whole plan first, so the split is the one `ft-harness plan` prints
        i, n = plan.parse_shard(args.shard)
        durations = plan.durations_from_report(Path(args.durations)) if args.durations else None
        jobs = plan.shard(jobs, i, n, durations)
    if args.interpreter:
        jobs = [j for j in jobs if j.interpreter.name in args.interpreter]
    if args.package:
        known = {p.name for p in spec.packages}
        unknown = set(args.package) - known
        if unknown:
            raise ConfigError(f"--package {sorted(unknown)[0]!r} is not in {args.matrix}")
        jobs = [j for j in jobs if j.package.name in args.package]
    out = Path(args.out)
    cache = interpreters.cache_root(args.cache)
    backend_name = _choose_backend(args.backend)
    run_id = f"{int(time.time())}-{os.getpid()}"
    backend, prepared = _prepare(spec, jobs, backend_name, cache, run_id, args.jobs)
    summary = run_plan(spec, jobs, out=out, backend=backend, prepared=prepared, workers=args.jobs,
                       force=args.force, reporter=_reporter())
    print(f"{len(summary.ran)} jobs ran, {len(summary.skipped)} reused from {out / 'results'}")
    meta = {"harness_version": __version__, "matrix": str(args.matrix), "matrix_digest": spec.digest,
            "started": summary.started, "finished": summary.finished, "backend": backend_name,
            "shard": args.shard or ""}
    report = _write_report([out], out, meta=meta, previous=None,
                           expected=[j.job_id for j in jobs])
    return _gate(report, args.fail_on)


def _write_report(dirs: list[Path], out: Path, *, meta: dict, previous: Path | None,
                  expected: list[str] | None, history: Path | None = None) -> dict:
    from . import aggregate, render

    results, problems = aggregate.load_results(dirs)
    for p in problems:
        print(f"ft-harness: skipped {p}", file=sys.stderr)
    prev = _load_json(previous) if previous else None
    report = aggregate.build_report(results, meta=meta, previous=prev, expected_jobs=expected)
    hist = _load_json(history) if history else None
    if any(Path(d).resolve() != out.resolve() for d in dirs):
        aggregate.copy_logs(report, dirs, out)  # merged shards: the site links to logs under out/
    written = render.write_all(report, out, history=hist)
    for p in written:
        if p.name in ("report.md", "report.json", "index.html", "junit.xml"):
            print(f"wrote {p}")
    summary = ", ".join(f"{n} {v}" for v, n in report.get("summary", {}).items() if n)
    print(f"summary: {summary or 'no packages'}")
    if report.get("missing"):
        print(f"missing results: {', '.join(report['missing'])}", file=sys.stderr)
    return report


def _load_json(path: Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError("no such file", file=str(path)) from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"not valid JSON: {e.msg}", file=str(path), line=e.lineno) from None


def _gate(report: dict, fail_on: str | None) -> int:
    if not fail_on:
        return 0
    wanted = {v.strip() for v in fail_on.split(",") if v.strip()}
    bad = wanted - set(VERDICTS)
    if bad:
        raise ConfigError(f"--fail-on: unknown verdict {sorted(bad)[0]!r} (one of {', '.join(VERDICTS)})")
    hit = [p for p in report.get("packages", []) if p.get("verdict") in wanted]
    if hit:
        names = ", ".join(f"{p['name']} ({p['verdict']})" for p in hit)
        raise RegressionError(f"--fail-on matched: {names}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    now = datetime.now(UTC).isoformat(timespec="seconds")
    meta = {"harness_version": __version__, "started": now, "finished": now, "backend": "",
            "sources": [str(d) for d in args.dirs]}
    out = Path(args.out) if args.out else Path(args.dirs[0])
    expected = None
    if args.matrix:
        from . import matrix, plan

        spec = matrix.load(args.matrix)
        expected = [j.job_id for j in plan.make_plan(spec)]
        meta["matrix"], meta["matrix_digest"] = str(args.matrix), spec.digest
    report = _write_report([Path(d) for d in args.dirs], out, meta=meta,
                           previous=Path(args.previous) if args.previous else None,
                           expected=expected, history=Path(args.history) if args.history else None)
    return _gate(report, args.fail_on)


def cmd_diff(args: argparse.Namespace) -> int:
    from . import diff

    old, new = _load_json(Path(args.old)), _load_json(Path(args.new))
    changes = diff.diff_reports(old, new)
    print(diff.format_changes(changes))
    return 1 if diff.has_regression(changes) else 0


def cmd_build(args: argparse.Namespace) -> int:
    from . import interpreters, matrix

    spec = matrix.load(args.matrix)
    cache = interpreters.cache_root(args.cache)
    for interp in spec.interpreters:
        if args.interpreter and interp.name not in args.interpreter:
            continue
        t0 = time.monotonic()
        built = interpreters.ensure_built(interp, cache)
        state = "cache hit" if built.cache_hit else f"built in {time.monotonic() - t0:.0f}s"
        print(f"{interp.name}: {state}: {built.python}")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from . import matrix, plan

    spec = matrix.load(args.matrix)
    jobs = plan.make_plan(spec)
    durations = plan.durations_from_report(Path(args.durations)) if args.durations else None
    print(plan.render_plan(jobs, fmt=args.format, shards=args.shards, durations=durations))
    return 0


def cmd_image(args: argparse.Namespace) -> int:
    import docker

    from . import images, interpreters, matrix

    spec = matrix.load(args.matrix)
    cache = interpreters.cache_root(args.cache)
    client = _docker_client(docker)
    base = images.ensure_base(client, cache)
    print(f"base image {base.tag}: {'reused' if base.reused else 'built'}")
    for interp in spec.interpreters:
        ref = images.ensure_interpreter_image(client, interp, cache)
        print(f"interpreter image {ref.tag}: {'reused' if ref.reused else 'built'}")
    return 0


def cmd_clean(args: argparse.Namespace) -> int:
    import docker

    from . import images

    removed = images.clean(_docker_client(docker), None)
    print(f"removed {len(removed)} leftover containers/volumes" + (": " + ", ".join(removed) if removed else ""))
    return 0


def _docker_client(docker):  # noqa: ANN001, ANN202
    from .errors import InfraError

    try:
        client = docker.from_env()
        client.ping()
    except Exception as e:  # noqa: BLE001 - any failure to reach the daemon is the same to the user
        raise InfraError(f"docker daemon is not answering: {e}") from None
    return client


# ----------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ft-harness", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"ft-harness {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log every step")
    sub = p.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)  # so `ft-harness run -v` works too
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                        help="log every step")

    def matrix_arg(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--matrix", default="matrix.yaml", help="matrix file (default: matrix.yaml)")

    def cache_arg(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--cache", help="cache dir (default: $FT_HARNESS_CACHE or ~/.cache/ft-harness)")

    r = sub.add_parser("run", parents=[common], help="build/reuse interpreters, run every job, write results and the report")
    matrix_arg(r)
    cache_arg(r)
    r.add_argument("--out", default="out", help="output dir (default: out); a rerun resumes")
    r.add_argument("--backend", choices=("auto", "local", "docker"), default="auto",
                   help="where jobs run (default: docker when an engine answers, else local)")
    r.add_argument("--jobs", "-j", type=_pos_int, default=1, help="jobs at once (default: 1)")
    r.add_argument("--force", action="store_true", help="rerun jobs that already have a result")
    r.add_argument("--shard", help="run only shard I/N of the plan")
    r.add_argument("--durations", help="a previous report.json, to balance shards by duration")
    r.add_argument("--package", action="append", help="only this package (repeatable)")
    r.add_argument("--interpreter", action="append", help="only this interpreter (repeatable)")
    r.add_argument("--fail-on", help="comma-separated verdicts that make the exit code 1")
    r.set_defaults(func=cmd_run)

    b = sub.add_parser("build", parents=[common], help="build (or reuse) the matrix's free-threaded interpreters")
    matrix_arg(b)
    cache_arg(b)
    b.add_argument("--interpreter", action="append", help="only this interpreter (repeatable)")
    b.set_defaults(func=cmd_build)

    rp = sub.add_parser("report", parents=[common], help="merge result dirs into report.json, report.md, junit.xml, site/")
    rp.add_argument("dirs", nargs="+", help="output dirs of runs (or shards)")
    rp.add_argument("--out", help="where to write the report (default: the first dir)")
    rp.add_argument("--previous", help="an earlier report.json, to mark what changed")
    rp.add_argument("--history", help="an earlier site's history.json, to keep verdict history")
    rp.add_argument("--matrix", help="the matrix the dirs ran, so jobs missing from all of them are listed")
    rp.add_argument("--fail-on", help="comma-separated verdicts that make the exit code 1")
    rp.set_defaults(func=cmd_report)

    d = sub.add_parser("diff", parents=[common], help="compare two report.json files; exit 1 on a regression")
    d.add_argument("old")
    d.add_argument("new")
    d.set_defaults(func=cmd_diff)

    pl = sub.add_parser("plan", parents=[common], help="print the jobs, optionally split into shards")
    matrix_arg(pl)
    pl.add_argument("--format", choices=("json", "github"), default="json")
    pl.add_argument("--shards", type=_pos_int, default=1)
    pl.add_argument("--durations", help="a previous report.json, to balance shards by duration")
    pl.set_defaults(func=cmd_plan)

    im = sub.add_parser("image", parents=[common], help="build (or reuse) the docker base and interpreter images")
    matrix_arg(im)
    cache_arg(im)
    im.set_defaults(func=cmd_image)

    c = sub.add_parser("clean", parents=[common], help="remove containers and volumes left by earlier runs")
    c.set_defaults(func=cmd_clean)
    return p


def _pos_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return v


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except HarnessError as e:
        print(f"ft-harness: {e}" if not isinstance(e, ConfigError) else str(e), file=sys.stderr)
        return e.return_code
    except KeyboardInterrupt:
        print("ft-harness: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
