"""Every deciding finding checked by its own recipe, outside everything the harness set up.

    python benchmarks/crosscheck.py OUT [OUT ...] [--runs 3] [--python PATH] [--json FILE]
    nox -s crosscheck -- OUT --runs 3

For each job of the output dirs (or shards) whose verdict is a finding about the package
(``ft-crash``, ``crash``, ``hang``, ``ft-race``, ``thread-unsafe``, ``gil-reenabled``), the
finding that decided it is taken from its result, and its laptop ``recipe`` (harness.job.laptoprecipe) is
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

Result files are untrusted input (a shard's artifact, a cache, ``run --reuse``: #46), so the
stored ``recipe`` text is never run: each recipe is rebuilt from the result's typed fields
(``harness.job.laptoprecipe.recipe``: the phase's command parts, the version, the test requirements,
every one shell-quoted), and where it runs is chosen here, never by the file:

* ``--backend docker`` (the default): every step in a container of the job's interpreter image
  (``ft-harness/interp:<key>-…``, or ``--image``) with the job's isolation -- a non-root user, no
  capabilities, no new privileges, pids/memory limits, a read-only root, the recipe's temp dir
  the one writable mount, the network only for the setup; nothing runs on the host.
* ``--backend local``: every recipe is printed first, and nothing runs without ``--yes``; the
  interpreter is ``--python`` (never a path taken from the result).
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
from pathlib import Path, PurePosixPath
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.cli.reproduce import PYTHON_NAME, recipe_python  # noqa: E402
from harness.core.errors import ConfigError  # noqa: E402
from harness.core.model import Finding, JobResult  # noqa: E402
from harness.core.wsfs import read_beneath  # noqa: E402
from harness.job.laptoprecipe import recipe as make_recipe  # noqa: E402
from harness.job.suite import TOOLS  # noqa: E402
from harness.results.load import load_results  # noqa: E402
from harness.util.textsafe import line as safe_line  # noqa: E402
from harness.util.textsafe import lines as safe_lines  # noqa: E402

CHECKED = ("ft-crash", "crash", "hang", "ft-race", "thread-unsafe", "gil-reenabled")
GIL_RE = re.compile(r"\bPYTHON_GIL=[01]\b")
TIMEOUT_RE = re.compile(r"^\+{5,} Timeout \+{5,}$|Timeout \(\d+(\.\d+)?s\) from pytest-timeout", re.M)
SETUP_TIMEOUT = 1800
MAX_CWD_BYTES = 4096  # PATH_MAX: the setup's "$PWD" and a newline


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


KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,120}")
NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
IN_CONTAINER = "/work"
UID = 1000


def rebuilt_recipe(res: JobResult, f: Finding) -> str:
    """The finding's laptop recipe made again from the result's typed fields (never its stored
    text): '' when its phase is not a pytest run the recipe can be rebuilt from."""
    if res.source == "local" or not NAME.fullmatch(res.package):
        return ""
    return make_recipe(
        f,
        res.phases,
        package=res.package,
        version=res.version,
        local_path="",
        interp=res.interpreter,
        tools=TOOLS,
        test_requires=res.test_setup.requires,
    )


class Runner:
    """Where a recipe's steps run: ``run(script, tmp, network, timeout) -> (exit code, output)``."""

    def __init__(self, *, backend: str, python: str = "", image: str = "", python_in_image: str = "") -> None:
        self.backend, self.python = backend, python
        self.image, self.python_in_image = image, python_in_image

    def for_result(self, res: JobResult) -> Runner:
        """This runner with the job's image and interpreter (docker), from checked fields only."""
        if self.backend != "docker" or (self.image and self.python_in_image):
            return self
        from harness.interpreters import images

        if not KEY.fullmatch(res.interpreter.key) or not PYTHON_NAME.fullmatch(res.interpreter.python_name or ""):
            raise ConfigError(f"{res.job_id}: its interpreter key or name is not one the harness writes")
        return Runner(
            backend="docker",
            image=self.image or images.interpreter_tag(res.interpreter.key),
            python_in_image=self.python_in_image or f"{images.PREFIX}/bin/{res.interpreter.python_name}",
        )

    def workdir(self, tmp: Path) -> str:
        return IN_CONTAINER if self.backend == "docker" else str(tmp)

    def run(self, script: str, tmp: Path, *, exe: str, network: bool, timeout: float) -> tuple[int | None, str]:
        if self.backend == "docker":
            return _docker(self.image, self.python_in_image, exe, script, tmp, network, timeout)
        return _run(script, tmp, _env(self.python, exe, tmp), timeout)


def _run(script: str, cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | None, str]:
    try:
        r = subprocess.run(
            ["sh", "-ec", script], cwd=cwd, env=env, capture_output=True, text=True, errors="replace", timeout=timeout
        )
        return r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        out = e.stdout or b""
        return None, out.decode(errors="replace") if isinstance(out, bytes) else out


def docker_argv(image: str, python: str, exe: str, script: str, tmp: Path, network: bool, name: str) -> list[str]:
    """``docker run`` of one recipe step with the job's isolation (harness.backends.dockerconfig):
    ``tmp`` at /work is the only writable mount; the interpreter is linked as the recipe names it."""
    user = f"{UID}:{UID}" if os.geteuid() == 0 else f"{os.geteuid()}:{os.getegid()}"
    argv = [
        "docker",
        "run",
        "--rm",
        "--name",
        name,
        "--user",
        user,
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--pids-limit",
        "512",
        "--memory",
        "2g",
        "--memory-swap",
        "2g",
        "--read-only",
        "--tmpfs",
        "/tmp:rw,exec,nosuid,size=1g",
        "--init",
        "--log-driver",
        "json-file",
        "--log-opt",
        "max-size=10m",
        "--log-opt",
        "max-file=1",
        "-e",
        "HOME=/tmp",
        "-v",
        f"{tmp}:{IN_CONTAINER}",
        "-w",
        IN_CONTAINER,
    ]
    ca = Path("/etc/ssl/certs/ca-certificates.crt")
    if not network:
        argv += ["--network", "none"]
    elif ca.is_file():
        inside = "/etc/ssl/certs/ft-harness-host-ca.crt"
        argv += ["-v", f"{ca}:{inside}:ro", "-e", f"PIP_CERT={inside}", "-e", f"SSL_CERT_FILE={inside}"]
    link = f"mkdir -p /tmp/bin && ln -sf {shlex.quote(python)} /tmp/bin/{exe} && export PATH=/tmp/bin:$PATH"
    return [*argv, image, "sh", "-ec", f"{link}\n{script}"]


def _docker(
    image: str, python: str, exe: str, script: str, tmp: Path, network: bool, timeout: float
) -> tuple[int | None, str]:
    if os.geteuid() == 0:  # the container's user writes the temp dir (the only writable mount)
        os.chown(tmp, UID, UID)
    name = f"ft-crosscheck-{os.getpid()}-{time.monotonic_ns()}"
    try:
        r = subprocess.run(
            docker_argv(image, python, exe, script, tmp, network, name),
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
        )
        return r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
        out = e.stdout or b""
        return None, out.decode(errors="replace") if isinstance(out, bytes) else out


def _env(python: str, exe: str, tmp: Path) -> dict[str, str]:
    """PATH with only the recipe's interpreter name added (a link in the temp dir), no variable of
    the harness's: the recipe runs as on a reader's laptop."""
    bindir = tmp / "bin"
    bindir.mkdir()
    (bindir / exe).symlink_to(python)
    keep = {
        k: v
        for k, v in os.environ.items()
        if k in ("HOME", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE", "PIP_INDEX_URL")
    }
    return {**keep, "PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin"}


CWD_FILE = ".cwd"


def setup_cwd(tmp: Path, work: str) -> str | None:
    """Where the recipe's setup ended (the dir its test line runs in), as it wrote it to
    ``tmp/.cwd``.  The setup is package code, and ``tmp`` its writable dir: the file is read
    through no link (harness.core.wsfs.read_beneath), only as a regular file of at most
    ``MAX_CWD_BYTES``, and must name ``work`` or a dir below it (#56); None otherwise."""
    raw = read_beneath(tmp, CWD_FILE, MAX_CWD_BYTES + 1)
    if raw is None or len(raw) > MAX_CWD_BYTES:
        return None
    try:
        where = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None
    path = PurePosixPath(where)
    if "\n" in where or "\0" in where or ".." in path.parts or not path.is_absolute():
        return None
    roots = {PurePosixPath(work), PurePosixPath(os.path.realpath(work))}  # sh's $PWD is the real path
    return where if any(path == r or r in path.parents for r in roots) else None


def check_recipe(
    res: JobResult, text: str, kind: str, modes: tuple[int, ...], runner: Runner, runs: int, tmp: Path
) -> dict[str, Any]:
    """Set up the recipe once in ``tmp``, then run its test line ``runs`` times per GIL mode."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    exe = recipe_python(text)
    work = runner.workdir(tmp)
    setup, test = lines[:-1], lines[-1]
    rc, out = runner.run(
        "\n".join([*setup, f'echo "$PWD" > {shlex.quote(work + "/" + CWD_FILE)}']),
        tmp,
        exe=exe,
        network=True,
        timeout=SETUP_TIMEOUT,
    )
    if rc != 0:
        return {"setup": "failed", "setup_tail": out[-1500:], "reproduced": False}
    where = setup_cwd(tmp, work)
    if where is None:
        why = f"{CWD_FILE}: not a regular file of at most {MAX_CWD_BYTES} bytes naming a dir below {work}"
        return {"setup": "failed", "setup_tail": why, "reproduced": False}
    limit = 2 * float(res.settings.get("test_timeout", 120) or 120) + 60
    seen: dict[int, list[str]] = {0: [], 1: []}
    for _ in range(runs):
        for m in (0, 1):
            line = GIL_RE.sub(f"PYTHON_GIL={m}", test)
            script = f". {shlex.quote(work + '/ft/bin/activate')} && cd {shlex.quote(where)} && {line}"
            rc, out = runner.run(script, tmp, exe=exe, network=False, timeout=limit)
            seen[m].append(event(rc, out))
    return {"setup": "ok", "seen": {f"gil{m}": v for m, v in seen.items()}, "reproduced": reproduced(kind, modes, seen)}


def gil_script(res: JobResult, f: Finding) -> str:
    """A fresh venv, the release from the index, its module imported in the default mode (the
    module and the release from the result's fields, checked and quoted)."""
    if res.source == "local" or not NAME.fullmatch(res.package):
        return ""
    spec = f"{res.package}=={res.version}"
    code = f"import importlib, sys; importlib.import_module({f.module!r}); print('GIL', sys._is_gil_enabled())"
    return (
        f"python3t -m venv ft && . ft/bin/activate && python -m pip install -q {shlex.quote(spec)}"
        f" && python -W default -c {shlex.quote(code)}"
    )


def check_gil(script: str, f: Finding, runner: Runner, tmp: Path) -> dict[str, Any]:
    """Is the GIL on after the import, with the warning naming the module?"""
    rc, out = runner.run(script, tmp, exe="python3t", network=True, timeout=SETUP_TIMEOUT)
    ok = rc == 0 and "GIL True" in out and f"module '{f.module.split('.')[0]}" in out
    return {"setup": "ok" if rc == 0 else "failed", "seen": {"import": out.strip().splitlines()[-1:]}, "reproduced": ok}


def script_of(res: JobResult, f: Finding) -> str:
    """What crosscheck would run for this finding ('' when nothing can be rebuilt)."""
    return gil_script(res, f) if f.kind == "gil-reenabled" else rebuilt_recipe(res, f)


def crosscheck(res: JobResult, f: Finding, runner: Runner, runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ft-crosscheck-") as d:
        t0 = time.monotonic()
        text = script_of(res, f)
        if not text:
            row: dict[str, Any] = {"setup": "no recipe", "reproduced": False}
        elif f.kind == "gil-reenabled":
            row = check_gil(text, f, runner.for_result(res), Path(d))
        else:
            row = check_recipe(res, text, f.kind, f.modes, runner.for_result(res), runs, Path(d))
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
    ap.add_argument(
        "--backend",
        choices=("docker", "local"),
        default="docker",
        help="docker (default): each step in the job's image, isolated; local: on this "
        "machine, after showing every recipe, only with --yes",
    )
    ap.add_argument(
        "--python",
        help="local: the free-threaded interpreter (required); docker: its "
        "path inside the image (default: the image's own)",
    )
    ap.add_argument("--image", help="docker: the image to run in (default: each job's interpreter image)")
    ap.add_argument(
        "--yes", action="store_true", help="local: run the recipes shown (they come from result files: read them first)"
    )
    ap.add_argument("--package", action="append", default=[], help="only these packages")
    ap.add_argument("--json", type=Path, help="write every row here")
    args = ap.parse_args(argv)
    try:
        results, problems = load_results(args.out)
    except ConfigError as e:  # e.g. one job in two dirs with different content: one line, exit 2
        print(f"crosscheck: {safe_line(str(e))}", file=sys.stderr)
        return 2
    for p in problems:
        print(f"skipped: {safe_line(p)}", file=sys.stderr)
    todo = [
        (res, f)
        for res in sorted(results, key=lambda r: (r.package, r.interpreter.name))
        if (not args.package or res.package in args.package) and (f := deciding(res)) is not None
    ]
    if args.backend == "local":
        if not args.python:
            print("crosscheck: --backend local needs --python (the free-threaded interpreter)", file=sys.stderr)
            return 2
        for res, f in todo:  # shown first: they run as you, with your files and network
            print(safe_line(f"# {res.job_id} {f.kind}:"))
            print(safe_lines(script_of(res, f) or "# (no recipe)"))
        if not args.yes:
            print(
                "crosscheck: not run: on --backend local the recipes above run on this machine as "
                "you; read them and run again with --yes (or use --backend docker)",
                file=sys.stderr,
            )
            return 2
    runner = Runner(
        backend=args.backend,
        python=args.python or "",
        image=args.image or "",
        python_in_image=(args.python or "") if args.backend == "docker" else "",
    )
    rows = []
    for res, f in todo:
        row = {
            "package": res.package,
            "version": res.version,
            "interpreter": res.interpreter.name,
            "verdict": res.verdict,
            "test_id": f.test_id or f.module,
            "modes": list(f.modes),
        }
        try:
            row.update(crosscheck(res, f, runner, args.runs))
        except ConfigError as e:
            row.update(setup=f"not run: {e}", reproduced=False, seconds=0.0)
        rows.append(row)
        mark = "reproduced" if row["reproduced"] else "NOT reproduced"
        print(
            safe_line(
                f"{res.package} {res.version} [{res.interpreter.name}] {res.verdict} "
                f"{row['test_id']}: {mark} ({_said(row)}; {row['seconds']} s)"
            ),
            flush=True,
        )
    n = sum(r["reproduced"] for r in rows)
    print(f"crosscheck: {n}/{len(rows)} deciding findings reproduced by their recipe ({args.runs} runs per mode)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
