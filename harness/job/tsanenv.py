"""The ThreadSanitizer variant: environment and suppressions (its findings: harness.verdict.tsan).

How a job uses it (see the module docstring of ``harness._inner.tsan_marker``)::

    supp = write_suppressions(built.source_tarball, pkg.tsan_suppressions or None,
                              ws.root / "tsan.supp")
    install:  env |= install_env(<logs>/tsan/install, <supp as the backend sees it>)
              sh -c f"{build_flags_sh(<interpreter>)} && <venv, pip install ...>"
    tsan run: env |= tsan_env(<logs>/tsan/<phase>, [<supp>]) | {"PYTHON_GIL": "0"}
              env["PYTHONPATH"] = marker_dir() (as the backend sees it); pytest ... -p tsan_marker
    parse:    Phase(tsan=tuple(parse_tsan_dir(<host logs>/tsan/<phase>)))
    verdict:  harness.verdict.decide reads the tsan phases (harness.verdict.tsan)
"""

from __future__ import annotations

import functools
import logging
import shlex
import tarfile
from collections.abc import Sequence
from pathlib import Path

from ..core.errors import BuildError
from ..parse.tsan import LOG_PREFIX

log = logging.getLogger(__name__)

CPYTHON_SUPPRESSIONS = "Tools/tsan/suppressions_free_threading.txt"
MARKER_PLUGIN = "tsan_marker"  # module name for `pytest -p`
# Same flags the compiler needs for a package's C code when its build system ignores sysconfig.
SANITIZE_FLAGS = "-fsanitize=thread"
# Added to the interpreter's own CFLAGS for every compile of a TSan install: debug line info
# (TSan's symbolizer turns it into file:line in each frame) and the instrumentation.
DEBUG_FLAGS = f"-g {SANITIZE_FLAGS}"
# Run by the interpreter in the backend (-S: no site, ~0.1 s even under TSan).
_SYSCONFIG_CFLAGS = 'import sysconfig; print(sysconfig.get_config_var("CFLAGS") or "")'

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


def tsan_env(log_dir_in_backend: str, suppressions: Sequence[str], *, source_dir: str = "") -> dict[str, str]:
    """Environment of a TSan test run: report everything, never change the exit code,
    one log per process at ``<log_dir>/tsan.<pid>``.  ``source_dir``: the package's source tree
    as the backend sees it; frames of files pip compiled there read relative to it
    (``src/pkg/_core.c:11``)."""
    opts: dict[str, str | int] = {
        "halt_on_error": 0,
        "exitcode": 0,  # pytest's own exit code stays the phase's; reports come from the logs
        "log_path": f"{log_dir_in_backend.rstrip('/')}/{LOG_PREFIX}",
        **_suppression(suppressions),
        "second_deadlock_stack": 1,
        "history_size": 4,  # fewer "[failed to restore the stack]" previous accesses
        "report_signal_unsafe": 0,  # Python's signal handlers are not the package's bug
    }
    if source_dir:
        opts["strip_path_prefix"] = source_dir.rstrip("/") + "/"
    return {"TSAN_OPTIONS": _options(opts)}


def install_env(log_dir_in_backend: str, suppressions: Sequence[str]) -> dict[str, str]:
    """Environment for install/probe under the TSan interpreter: pip must not fail on
    interpreter races (TSan's default exit code is 66), nothing on stderr.  The compile flags
    are not here but in ``build_flags_sh``: they start from the interpreter's own CFLAGS."""
    opts: dict[str, str | int] = {
        "halt_on_error": 0,
        "exitcode": 0,
        "log_path": f"{log_dir_in_backend.rstrip('/')}/{LOG_PREFIX}",
        **_suppression(suppressions),
    }
    return {"TSAN_OPTIONS": _options(opts)}


def build_flags_sh(python: str) -> str:
    """Shell that exports the compile flags of a TSan install step (run before pip, ``&&``).

    ``CFLAGS`` must not be ``-fsanitize=thread`` alone: setuptools' compiler (its distutils since
    setuptools 75.7) *replaces* sysconfig's CFLAGS with ``$CFLAGS`` instead of appending
    to them, which dropped ``-g`` (so TSan frames had no file:line), ``-O3`` and ``-DNDEBUG``
    (asserts on in the TSan column only).  So CFLAGS/CXXFLAGS are the interpreter's own
    sysconfig CFLAGS, asked of ``python`` in the backend, plus ``DEBUG_FLAGS``, plus what the
    environment already had (a package's ``env:``); an older setuptools that appends gets the
    flags twice, which changes nothing.  Meson, CMake and other build systems that ignore
    sysconfig get the same flags through the same variables."""
    read = f"{shlex.quote(python)} -S -c {shlex.quote(_SYSCONFIG_CFLAGS)}"
    return (
        f'ft_cflags="$({read})" && '
        f'export CFLAGS="$ft_cflags {DEBUG_FLAGS}${{CFLAGS:+ $CFLAGS}}" '
        f'CXXFLAGS="$ft_cflags {DEBUG_FLAGS}${{CXXFLAGS:+ $CXXFLAGS}}" '
        f'LDFLAGS="{SANITIZE_FLAGS}${{LDFLAGS:+ $LDFLAGS}}"'
    )


def venv_sh(python: str, venv: str, seeder: str, layers: str, tools: Sequence[str]) -> str:
    """Shell that makes a TSan job's venv with pip and ``tools`` already in it.

    ``seeder`` is ``harness/_inner/venv_layer.py`` as the backend sees it: it copies pip and
    the tools from a layer kept in ``layers`` (built once per interpreter build, the ordinary
    way), so a job no longer pays for ensurepip and the tools' install under an instrumented
    interpreter.  Should that fail, the venv is made the ordinary way (``venv --clear``).
    ``tools`` must still be named to the job's pip: they are then already satisfied."""
    q = shlex.quote
    seed = shlex.join([python, seeder, venv, layers, *tools])
    return f"{{ {q(python)} -m venv --without-pip {q(venv)} && {seed}; }} || {q(python)} -m venv --clear {q(venv)}"


def marker_dir() -> Path:
    """The directory to put on PYTHONPATH so that ``pytest -p tsan_marker`` finds the plugin."""
    return Path(__file__).resolve().parent.parent / "_inner"


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
    """``suppressions`` written to ``dest``."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(suppressions(tarball, extra), encoding="utf-8")
    return dest


def suppressions(tarball: Path, extra: str | None) -> str:
    """CPython's suppressions (from the very source the interpreter was built from), the
    harness's few additions and the package's ``tsan_suppressions`` file, merged."""
    cpython = _cpython_suppressions(str(tarball), tarball.stat().st_mtime)
    if not cpython:
        log.warning("%s has no %s: interpreter races will be reported", tarball.name, CPYTHON_SUPPRESSIONS)
    parts = [f"# {CPYTHON_SUPPRESSIONS} from {tarball.name}\n", cpython.rstrip("\n") + "\n"]
    if HARNESS_SUPPRESSIONS:
        parts += ["\n# ft-harness additions\n", "\n".join(HARNESS_SUPPRESSIONS) + "\n"]
    if extra:
        try:
            text = Path(extra).read_text(encoding="utf-8")
        except OSError as e:
            raise BuildError(f"cannot read tsan_suppressions {extra}: {e}") from None
        parts += [f"\n# package tsan_suppressions: {extra}\n", text.rstrip("\n") + "\n"]
    return "".join(parts)
