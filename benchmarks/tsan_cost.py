"""What the TSan variant costs: the threaded pytest run of each fixture package under the
TSan interpreter vs the same run under the plain free-threaded interpreter, side by side.

    python benchmarks/tsan_cost.py [--rounds 3] [--plain PY] [--tsan PY] [--json FILE]

Both interpreters come from the harness's own cache (built if missing) unless given.
Each round runs every package once on each interpreter, alternating which goes first,
so machine noise hits both sides alike; the figure is the ratio per round, its median
and its spread.

Install time is reported apart (it is paid once per job), as the job makes a venv, side by side:
``before`` is the ordinary way (``venv`` with ensurepip, then ``pip install`` of the harness's
tools and the 3 packages, all under the interpreter), ``after`` is the TSan job's way
(``harness.job.tsanenv.venv_sh``: pip and the tools copied from a layer built once per interpreter,
then the same ``pip install``, which builds the packages under TSan); ``layer`` is the one-off
cost of building that layer (the first TSan job of an interpreter build pays it).  Both TSan
sides compile with ``harness.job.tsanenv.build_flags_sh``, as the job does.  ``--install-only`` skips
the test runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.cli import progress  # noqa: E402
from harness.config import matrix  # noqa: E402
from harness.interpreters import interpreters  # noqa: E402
from harness.job import tsanenv as tsan  # noqa: E402
from harness.job.suite import TOOLS  # noqa: E402

DATA = ROOT / "tests" / "data" / "tsan" / "src"
FIXTURES = ROOT / "tests" / "fixtures" / "packages"
# (name, source tree, tests) -- the fixture packages of the TSan issue; H2's, else ours.
CANDIDATES = (
    ("race (C, unlocked counter)", ("ft_tsan_counter", DATA / "tsan_samples"), "tests/test_race.py"),
    ("clean (C, locked)", ("ft_clean", DATA / "tsan_clean"), "tests"),
    ("pure Python", ("ft_purepy", DATA / "tsan_purepy"), "tests"),
)
THREADS, ITERATIONS = 4, 3

MATRIX = """
interpreters:
  - {name: plain, version: 3.13.5, source: "debian:trixie"}
  - {name: tsan, version: 3.13.5, source: "debian:trixie", sanitizer: thread}
packages:
  - {name: six}
"""


def _packages() -> list[tuple[str, Path, str]]:
    out = []
    for label, (fixture, ours), tests_path in CANDIDATES:
        tree = FIXTURES / fixture if (FIXTURES / fixture / "tests").is_dir() else ours
        out.append((label, tree, tests_path if (tree / tests_path).exists() else "tests"))
    return out


SEEDER = ROOT / "harness" / "_inner" / "tsan_venv.py"


def _venv(
    python: Path,
    where: Path,
    trees: list[Path],
    env: dict[str, str],
    *,
    flags: bool = False,
    layers: Path | None = None,
) -> tuple[Path, float]:
    """Make a venv and install the tools and ``trees`` into it, as a job does; seconds taken.
    ``flags``: compile flags from the interpreter (a TSan job's); ``layers``: pip and the tools
    from a layer there (a TSan job's venv)."""
    vpy = where / "bin" / "python"
    venv = shlex.join([str(python), "-m", "venv", str(where)])
    if layers is not None:
        venv = tsan.venv_sh(str(python), str(where), str(SEEDER), str(layers), TOOLS)
    script = f"{venv} && {shlex.join([str(vpy), '-m', 'pip', 'install', '-q', *TOOLS, *map(str, trees)])}"
    if flags:
        script = f"{tsan.build_flags_sh(str(python))} && {script}"
    t = time.monotonic()
    subprocess.run(["sh", "-c", script], check=True, env=env)
    return vpy, time.monotonic() - t


def _layer(python: Path, layers: Path, env: dict[str, str]) -> float:
    """The one-off cost: build the layer of pip + tools (an empty venv seeded from nothing)."""
    t = time.monotonic()
    subprocess.run(
        ["sh", "-c", tsan.venv_sh(str(python), str(layers / "probe-venv"), str(SEEDER), str(layers), TOOLS)],
        check=True,
        env=env,
    )
    return time.monotonic() - t


def _install(
    plain: Path, tsan_py: Path, trees: list[Path], tmpd: Path, base: dict[str, str], inst_env: dict[str, str]
) -> dict[str, float]:
    out = {}
    _, out["plain"] = _venv(plain, tmpd / "plain", trees, base)
    # before: the ordinary venv, as TSan jobs made it (with the job's compile flags of now)
    _, out["tsan_before"] = _venv(tsan_py, tmpd / "tsan-before", trees, inst_env, flags=True)
    layers = tmpd / "layers"
    out["layer"] = _layer(tsan_py, layers, inst_env)
    _, out["tsan_after"] = _venv(tsan_py, tmpd / "tsan", trees, inst_env, flags=True, layers=layers)
    n = len(trees)
    print(f"install (venv + tools + {n} packages; the layer is built once per interpreter):")
    print(f"{'':24} {'seconds':>8} {'vs plain':>9}")
    for label, key in (
        ("plain interpreter", "plain"),
        ("TSan, before", "tsan_before"),
        ("TSan, after", "tsan_after"),
        ("TSan layer, once", "layer"),
    ):
        print(f"{label:24} {out[key]:8.1f} {out[key] / out['plain']:8.2f}x")
    print(
        f"TSan install cut by {out['tsan_before'] - out['tsan_after']:.1f} s per job "
        f"({out['tsan_after'] / out['tsan_before']:.2f}x of before)"
    )
    return out


def _clean_copy(tree: Path, dest: Path) -> Path:
    """A copy without build/ or *.so: setuptools would reuse an earlier plain build's objects."""
    out = dest / tree.name
    shutil.copytree(tree, out, ignore=shutil.ignore_patterns("build", "*.egg-info", "*.so"))
    return out


def _run(vpy: Path, tree: Path, tests_path: str, env: dict[str, str]) -> tuple[float, int]:
    argv = [
        str(vpy),
        "-P",
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-n",
        "auto",
        f"--parallel-threads={THREADS}",
        f"--iterations={ITERATIONS}",
        "-q",
        tests_path,
    ]
    if "TSAN_OPTIONS" in env:
        argv[5:5] = ["-p", tsan.MARKER_PLUGIN]
    t = time.monotonic()
    r = subprocess.run(argv, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t, r.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--plain", type=Path)
    ap.add_argument("--tsan", type=Path)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--install-only", action="store_true", help="measure the install only")
    a = ap.parse_args()
    spec = matrix.loads(MATRIX)
    cache = interpreters.cache_root()
    hb = progress.heartbeat  # a build says its steps and its time, as `ft-harness build` does
    plain = a.plain or interpreters.ensure_built(spec.interpreters[0], cache, heartbeat=hb).python
    built = interpreters.ensure_built(spec.interpreters[1], cache, heartbeat=hb)
    tsan_py = a.tsan or built.python
    pkgs = _packages()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "TSAN"))}
    base.update({"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    with tempfile.TemporaryDirectory(prefix="tsan-cost-") as tmp:
        tmpd = Path(tmp)
        supp = tsan.write_suppressions(built.source_tarball, None, tmpd / "tsan.supp")
        inst_env = {**base, **tsan.install_env(str(tmpd / "install-logs"), [str(supp)])}
        trees = [_clean_copy(p, tmpd / "src") for _, p, _ in pkgs]
        install = _install(plain, tsan_py, trees, tmpd, base, inst_env)
        if a.install_only:
            if a.json:
                a.json.write_text(json.dumps({"install": install}, indent=1))
            return 0
        vplain, vtsan = tmpd / "plain" / "bin" / "python", tmpd / "tsan" / "bin" / "python"
        rows: dict[str, dict[str, list[float]]] = {
            label: {"plain": [], "tsan": [], "ratio": []} for label, _, _ in pkgs
        }
        for rnd in range(a.rounds):
            for label, tree, tests_path in pkgs:
                run_env = {**base, "PYTHON_GIL": "0"}
                tsan_env = {
                    **run_env,
                    "PYTHONPATH": str(tsan.marker_dir()),
                    **tsan.tsan_env(str(tmpd / f"logs-{rnd}"), [str(supp)]),
                }
                sides = [("plain", vplain, run_env), ("tsan", vtsan, tsan_env)]
                if rnd % 2:
                    sides.reverse()
                got = {}
                for side, vpy, env in sides:
                    got[side], _ = _run(vpy, tree, tests_path, env)
                    rows[label][side].append(got[side])
                rows[label]["ratio"].append(got["tsan"] / got["plain"])
        print(
            f"threaded pytest run (-n auto --parallel-threads={THREADS} "
            f"--iterations={ITERATIONS}, PYTHON_GIL=0), {a.rounds} rounds:"
        )
        print(f"{'package':30} {'plain s':>8} {'tsan s':>8} {'ratio':>7} {'min-max':>13}")
        for label, r in rows.items():
            print(
                f"{label:30} {statistics.median(r['plain']):8.2f} "
                f"{statistics.median(r['tsan']):8.2f} {statistics.median(r['ratio']):6.2f}x "
                f"{min(r['ratio']):5.2f}-{max(r['ratio']):5.2f}x"
            )
        if a.json:
            a.json.write_text(json.dumps({"rounds": a.rounds, "install": install, "runs": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
