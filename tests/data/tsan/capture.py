"""Re-capture the TSan logs under tests/data/tsan/py/ with the real TSan interpreter.

    python3 tests/data/tsan/capture.py [WORKDIR]

Builds (or reuses) the harness's cached `sanitizer: thread` interpreter, makes a venv,
installs the sample packages the way the job does (harness.job.tsanenv.install_env, the compile flags
of harness.job.tsanenv.build_flags_sh: the interpreter's CFLAGS + -g), runs their tests the way the
job's tsan phase does (PYTHON_GIL=0, pytest-xdist, pytest-run-parallel, the marker
plugin, harness.job.tsanenv.tsan_env) and copies the per-process logs that hold reports.
Not run by the test suite; the unit tests read what it wrote.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from harness.cli import progress  # noqa: E402
from harness.config import matrix  # noqa: E402
from harness.interpreters import interpreters  # noqa: E402
from harness.job import tsanenv as tsan  # noqa: E402
from harness.job.suite import TOOLS  # noqa: E402
from harness.parse.tsan import tsan_logs  # noqa: E402

OUT = HERE / "py"
MATRIX = """
interpreters:
  - {name: cpython3.13t-tsan, version: 3.13.5, source: "debian:trixie", sanitizer: thread}
packages:
  - {name: six}
"""
# (output name, source tree, tests, extra pytest args)
RUNS = (
    ("race_counter", ROOT / "tests/fixtures/packages/ft_tsan_counter", "tests", []),
    ("uaf", HERE / "src/tsan_samples", "tests/test_uaf.py", []),
    ("lock_order", HERE / "src/tsan_samples", "tests/test_lock_order.py", []),
    ("race_samples", HERE / "src/tsan_samples", "tests/test_race.py", []),
)


def main() -> int:
    work = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="tsan-capture-"))
    built = interpreters.ensure_built(matrix.loads(MATRIX).interpreters[0], interpreters.cache_root(),
                                      heartbeat=progress.heartbeat)
    supp = tsan.write_suppressions(built.source_tarball, None, work / "tsan.supp")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "TSAN"))}
    base["PYTHONDONTWRITEBYTECODE"] = "1"
    OUT.mkdir(exist_ok=True)
    # 1. pip install without suppressions: the interpreter's own races (exitcode=0 keeps pip alive)
    nosupp = work / "logs-install-nosupp"
    nosupp.mkdir(parents=True, exist_ok=True)
    venv = work / "venv"
    subprocess.run([str(built.python), "-m", "venv", str(venv)], check=True,
                   env={**base, **tsan.install_env(str(nosupp), [])})
    py = venv / "bin" / "python"
    trees = sorted({str(t) for _, t, _, _ in RUNS})
    pip = shlex.join([str(py), "-m", "pip", "install", "-q", *TOOLS, *trees])
    subprocess.run(["sh", "-c", f"{tsan.build_flags_sh(str(built.python))} && {pip}"], check=True,
                   env={**base, **tsan.install_env(str(nosupp), [])})
    logs = [p for p in tsan_logs(nosupp) if "WARNING: ThreadSanitizer" in p.read_text()]
    if logs:
        shutil.copy(logs[0], OUT / "install_nosupp.log")
    # 2. the test runs
    for name, tree, tests, extra in RUNS:
        d = work / f"logs-{name}"
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        env = {**base, "PYTHON_GIL": "0", "PYTHONPATH": str(tsan.marker_dir()),
               **tsan.tsan_env(str(d), [str(supp)], source_dir=str(tree))}
        argv = [str(py), "-P", "-m", "pytest", "-p", "no:cacheprovider", "-p", tsan.MARKER_PLUGIN,
                "-n", "2", "--parallel-threads=4", "--iterations=2", "-v", *extra, tests]
        r = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True)
        print(f"{name}: pytest exit {r.returncode}; logs {[p.name for p in tsan_logs(d)]}")
        with_reports = [p for p in tsan_logs(d) if "WARNING: ThreadSanitizer" in p.read_text()]
        if with_reports:
            shutil.copy(with_reports[0], OUT / f"{name}.log")
    print(f"work dir: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
