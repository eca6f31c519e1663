"""The ThreadSanitizer variant: environment and suppressions (its findings: harness.verdict.tsan).

How a job uses it (see the module docstring of ``harness._inner.tsan_marker``)::

    supp = write_suppressions(built.source_tarball, pkg.tsan_suppressions or None,
                              ws.root / "tsan.supp")
    install:  env |= install_env(<logs>/tsan/install, <supp as the backend sees it>)
    tsan run: env |= tsan_env(<logs>/tsan/<phase>, [<supp>]) | {"PYTHON_GIL": "0"}
              env["PYTHONPATH"] = marker_dir() (as the backend sees it); pytest ... -p tsan_marker
    parse:    Phase(tsan=tuple(parse_tsan_dir(<host logs>/tsan/<phase>)))
    verdict:  harness.verdict.decide reads the tsan phases (harness.verdict.tsan)
"""

from __future__ import annotations

import functools
import logging
import tarfile
from collections.abc import Sequence
from pathlib import Path

from .errors import BuildError
from .parse.tsan import LOG_PREFIX

log = logging.getLogger(__name__)

CPYTHON_SUPPRESSIONS = "Tools/tsan/suppressions_free_threading.txt"
MARKER_PLUGIN = "tsan_marker"  # module name for `pytest -p`
# Same flags the compiler needs for a package's C code when its build system ignores sysconfig.
SANITIZE_FLAGS = "-fsanitize=thread"

# Interpreter races seen in 3.13.5 that CPython's own file does not cover, each seen here
# under this harness (tests/data/tsan/README.md says where).  Keep it short and evidenced.
HARNESS_SUPPRESSIONS: tuple[str, ...] = ()


def _quote(value: str) -> str:
    """A TSAN_OPTIONS value; the flag parser splits on space, comma, colon and newline."""
    if any(c in value for c in " ,:\t\n'\""):
        if '"' in value:
            raise ValueError(f"TSAN_OPTIONS cannot carry a path with a double quote: {value!r}")
        return f'"{value}"'
    return value


def _options(opts: dict[str, str | int]) -> str:
    return " ".join(f"{k}={_quote(str(v))}" for k, v in opts.items())


def _suppression(suppressions: Sequence[str]) -> dict[str, str]:
    files = [s for s in suppressions if s]
    if len(files) > 1:
        raise ValueError("TSan reads one suppressions file; merge them with write_suppressions()")
    return {"suppressions": files[0]} if files else {}


def tsan_env(log_dir_in_backend: str, suppressions: Sequence[str]) -> dict[str, str]:
    """Environment of a TSan test run: report everything, never change the exit code,
    one log per process at ``<log_dir>/tsan.<pid>``."""
    opts: dict[str, str | int] = {
        "halt_on_error": 0,
        "exitcode": 0,  # pytest's own exit code stays the phase's; reports come from the logs
        "log_path": f"{log_dir_in_backend.rstrip('/')}/{LOG_PREFIX}",
        **_suppression(suppressions),
        "second_deadlock_stack": 1,
        "history_size": 4,  # fewer "[failed to restore the stack]" previous accesses
        "report_signal_unsafe": 0,  # Python's signal handlers are not the package's bug
    }
    return {"TSAN_OPTIONS": _options(opts)}


def install_env(log_dir_in_backend: str, suppressions: Sequence[str]) -> dict[str, str]:
    """Environment for install/probe under the TSan interpreter: pip must not fail on
    interpreter races (TSan's default exit code is 66), nothing on stderr, and C code a
    build system compiles without sysconfig's flags still gets -fsanitize=thread."""
    opts: dict[str, str | int] = {
        "halt_on_error": 0,
        "exitcode": 0,
        "log_path": f"{log_dir_in_backend.rstrip('/')}/{LOG_PREFIX}",
        **_suppression(suppressions),
    }
    return {
        "TSAN_OPTIONS": _options(opts),
        "CFLAGS": SANITIZE_FLAGS,
        "CXXFLAGS": SANITIZE_FLAGS,
        "LDFLAGS": SANITIZE_FLAGS,
    }


def marker_dir() -> Path:
    """The directory to put on PYTHONPATH so that ``pytest -p tsan_marker`` finds the plugin."""
    return Path(__file__).resolve().parent / "_inner"


@functools.lru_cache(maxsize=8)
def _cpython_suppressions(tarball: str, mtime: float) -> str:
    try:
        with tarfile.open(tarball) as tf:
            for member in tf:
                parts = member.name.split("/", 1)
                if len(parts) == 2 and parts[1] == CPYTHON_SUPPRESSIONS and member.isfile():
                    f = tf.extractfile(member)
                    return f.read().decode("utf-8", "replace") if f else ""
    except (OSError, tarfile.TarError) as e:
        raise BuildError(f"cannot read {CPYTHON_SUPPRESSIONS} from {tarball}: {e}") from None
    return ""


def write_suppressions(tarball: Path, extra: str | None, dest: Path) -> Path:
    """Merge CPython's suppressions (from the very source the interpreter was built from),
    the harness's few additions and the package's ``tsan_suppressions`` file into ``dest``."""
    cpython = _cpython_suppressions(str(tarball), tarball.stat().st_mtime)
    if not cpython:
        log.warning("%s has no %s: interpreter races will be reported", tarball.name,
                    CPYTHON_SUPPRESSIONS)
    parts = [f"# {CPYTHON_SUPPRESSIONS} from {tarball.name}\n", cpython.rstrip("\n") + "\n"]
    if HARNESS_SUPPRESSIONS:
        parts += ["\n# ft-harness additions\n", "\n".join(HARNESS_SUPPRESSIONS) + "\n"]
    if extra:
        try:
            text = Path(extra).read_text(encoding="utf-8")
        except OSError as e:
            raise BuildError(f"cannot read tsan_suppressions {extra}: {e}") from None
        parts += [f"\n# package tsan_suppressions: {extra}\n", text.rstrip("\n") + "\n"]
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text("".join(parts), encoding="utf-8")
    return dest
