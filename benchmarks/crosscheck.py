"""Every deciding finding checked by its own recipe, outside everything the harness set up.

    python benchmarks/crosscheck.py OUT [OUT ...] [--runs 3] [--python PATH] [--json FILE]
    nox -s crosscheck -- OUT --runs 3

For each job of the output dirs (or shards) whose verdict is a finding about the package
(``ft-crash``, ``crash``, ``hang``, ``ft-race``, ``thread-unsafe``, ``gil-reenabled``), the
finding that decided it is taken from its result, and its laptop ``recipe`` (harness.job.recipe) is
run as a reader would: in a fresh temp dir, a fresh venv of the free-threaded interpreter, the
release and the pinned test tools from the index, the sdist's tests. Its setup runs once; its
test line then runs ``--runs`` times with the GIL off and as many with it on. Each run is one
event: ``crashed`` (a signal, or ``Fatal Python error``), ``hung`` (pytest-timeout's dump, or
past the wall limit), ``failed``, ``passed``. The finding is *reproduced* when the runs show
its kind of event in its modes and not in the others:

=============== ===================================================================
ft-crash        crashed in a GIL-off run, in no GIL-on run
crash           crashed in runs of both modes
hang            hung in a run of one of its modes
ft-race         failed (or crashed) in a GIL-off run, passed in every GIL-on run
thread-unsafe   failed in a GIL-on run (the word: it fails with the GIL on, in both modes or only on)
gil-reenabled   ``import`` of its module in the default mode leaves the GIL on
=============== ===================================================================

Nothing of this runs on the default path of ``ft-harness run``: it costs a venv and an install
per package. It prints one line per package and, with ``--json``, writes them all.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.cli.reproduce import recipe_python  # noqa: E402
from harness.core.model import Finding, JobResult  # noqa: E402
from harness.results.load import load_results  # noqa: E402

CHECKED = ("ft-crash", "crash", "hang", "ft-race", "thread-unsafe", "gil-reenabled")
GIL_RE = re.compile(r"\bPYTHON_GIL=[01]\b")
TIMEOUT_RE = re.compile(r"^\+{5,} Timeout \+{5,}$|Timeout \(\d+(\.\d+)?s\) from pytest-timeout", re.M)
SETUP_TIMEOUT = 1800


def deciding(res: JobResult) -> Finding | None:
    """The finding that decided the verdict (the first of the verdict's kind)."""
    if res.verdict not in CHECKED:
        return None
    return next((f for f in res.findings if f.kind == res.verdict), None)


def event(rc: int | None, output: str) -> str:
    """One run's event: crashed, hung, failed or passed."""
    if rc is None or TIMEOUT_RE.search(output):
        return "hung"
    if rc < 0 or rc >= 128 or "Fatal Python error" in output:  # sh says a signal as 128 + N
        return "crashed"
    return "passed" if rc in (0, 5) else "failed"


def reproduced(kind: str, modes: tuple[int, ...], seen: dict[int, list[str]]) -> bool:
    """Whether the runs per GIL mode show the finding's kind of event (module docstring)."""
    off, on = seen.get(0, []), seen.get(1, [])
    if kind == "ft-crash":
        return "crashed" in off and "crashed" not in on
    if kind == "crash":
        return "crashed" in off and "crashed" in on
    if kind == "hang":
        return any("hung" in seen.get(m, []) for m in modes or (0, 1))
    if kind == "ft-race":
        return any(e in ("failed", "crashed") for e in off) and all(e == "passed" for e in on)
    if kind == "thread-unsafe":
        return "failed" in on
    return False


def _run(script: str, cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | None, str]:
    try:
        r = subprocess.run(["sh", "-ec", script], cwd=cwd, env=env, capture_output=True, text=True,
                           errors="replace", timeout=timeout)
        return r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        out = e.stdout or b""
        return None, out.decode(errors="replace") if isinstance(out, bytes) else out


def _env(python: str, exe: str, tmp: Path) -> dict[str, str]:
    """PATH with only the recipe's interpreter name added (a link in the temp dir), no variable of
    the harness's: the recipe runs as on a reader's laptop."""
    bindir = tmp / "bin"
    bindir.mkdir()
    (bindir / exe).symlink_to(python)
    keep = {k: v for k, v in os.environ.items()
            if k in ("HOME", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE", "PIP_INDEX_URL")}
    return {**keep, "PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin"}


def check_recipe(res: JobResult, f: Finding, python: str, runs: int, tmp: Path) -> dict[str, Any]:
    """Set up the recipe once in ``tmp``, then run its test line ``runs`` times per GIL mode."""
    # recipes written before 2026-12-05 downloaded the sdist with --no-binary :all:, which builds
    # every build dependency from source too (minutes a package): the package's sdist only
    text = f.recipe.replace("--no-binary :all:", f"--no-binary {shlex.quote(res.package)}")
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    exe = recipe_python(f.recipe)
    env = _env(python, exe, tmp)
    setup, test = lines[:-1], lines[-1]
    rc, out = _run("\n".join([*setup, f'echo "$PWD" > {shlex.quote(str(tmp / ".cwd"))}']), tmp, env,
                   SETUP_TIMEOUT)
    if rc != 0:
        return {"setup": "failed", "setup_tail": out[-1500:]}
    where = (tmp / ".cwd").read_text().strip()
    limit = 2 * float(res.settings.get("test_timeout", 120) or 120) + 60
    seen: dict[int, list[str]] = {0: [], 1: []}
    for _ in range(runs):
        for m in (0, 1):
            line = GIL_RE.sub(f"PYTHON_GIL={m}", test)
            script = f". {shlex.quote(str(tmp / 'ft' / 'bin' / 'activate'))} && cd {shlex.quote(where)} && {line}"
            rc, out = _run(script, tmp, env, limit)
            seen[m].append(event(rc, out))
    return {"setup": "ok", "seen": {f"gil{m}": v for m, v in seen.items()},
            "reproduced": reproduced(f.kind, f.modes, seen)}


def check_gil(res: JobResult, f: Finding, python: str, tmp: Path) -> dict[str, Any]:
    """A fresh venv, the release from the index (or the local source), its module imported in
    the default mode: is the GIL on afterwards, with the warning naming the module?"""
    env = _env(python, "python3t", tmp)
    spec = res.requested if res.source == "local" else f"{res.package}=={res.version}"
    code = (f"import importlib, sys; importlib.import_module({f.module!r}); "
            "print('GIL', sys._is_gil_enabled())")
    script = (f"python3t -m venv ft && . ft/bin/activate && python -m pip install -q {shlex.quote(spec)}"
              f" && python -W default -c {shlex.quote(code)}")
    rc, out = _run(script, tmp, env, SETUP_TIMEOUT)
    ok = rc == 0 and "GIL True" in out and f"module '{f.module.split('.')[0]}" in out
    return {"setup": "ok" if rc == 0 else "failed", "seen": {"import": out.strip().splitlines()[-1:]},
            "reproduced": ok}


def crosscheck(res: JobResult, f: Finding, python: str, runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ft-crosscheck-") as d:
        t0 = time.monotonic()
        if f.kind == "gil-reenabled":
            row = check_gil(res, f, python, Path(d))
        elif f.recipe:
            row = check_recipe(res, f, python, runs, Path(d))
        else:
            row = {"setup": "no recipe", "reproduced": False}
        row["seconds"] = round(time.monotonic() - t0, 1)
    return row


def _said(row: dict[str, Any]) -> str:
    seen = row.get("seen", {})
    if "import" in seen:
        return f"import: {' '.join(seen['import'])}"
    parts = []
    for mode, events in seen.items():
        counts = {e: events.count(e) for e in dict.fromkeys(events)}
        parts.append(f"{mode}: " + ", ".join(f"{e} {k}/{len(events)}" for e, k in counts.items()))
    return "; ".join(parts) or row.get("setup", "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="+", type=Path, help="output dirs of `ft-harness run` (or shards)")
    ap.add_argument("--runs", type=int, default=3, help="runs of the test line per GIL mode (3)")
    ap.add_argument("--python", help="the free-threaded interpreter (default: the one each job used)")
    ap.add_argument("--package", action="append", default=[], help="only these packages")
    ap.add_argument("--json", type=Path, help="write every row here")
    args = ap.parse_args(argv)
    results, problems = load_results(args.out)
    for p in problems:
        print(f"skipped: {p}", file=sys.stderr)
    rows = []
    for res in sorted(results, key=lambda r: (r.package, r.interpreter.name)):
        if args.package and res.package not in args.package:
            continue
        f = deciding(res)
        if f is None:
            continue
        python = args.python or res.interpreter.python
        row = {"package": res.package, "version": res.version, "interpreter": res.interpreter.name,
               "verdict": res.verdict, "test_id": f.test_id or f.module, "modes": list(f.modes),
               **crosscheck(res, f, python, args.runs)}
        rows.append(row)
        mark = "reproduced" if row["reproduced"] else "NOT reproduced"
        print(f"{res.package} {res.version} [{res.interpreter.name}] {res.verdict} "
              f"{row['test_id']}: {mark} ({_said(row)}; {row['seconds']} s)", flush=True)
    n = sum(r["reproduced"] for r in rows)
    print(f"crosscheck: {n}/{len(rows)} deciding findings reproduced by their recipe "
          f"({args.runs} runs per mode)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
