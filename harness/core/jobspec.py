"""What one job is made of, as matrix.yaml gives it: the settings, an interpreter (and where
its source comes from), a package (and the tests it skips).

Frozen dataclasses, built by harness.config.matrix (which reads and checks matrix.yaml) and read
by every later stage: the plan, the verdict (Settings: the modes asked for), the interpreters'
builds and the job.  They live here, under every folder, so that a stage reading them does not
import the parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import ConfigError

JOB_ID_SEP = "--"  # "<interpreter>--<package>"


def id_part(name: str) -> str:
    """An interpreter's or a package's name as its job id has it (a file and directory name):
    each run of characters other than letters, digits, '_', '.' and '-' one '_', none at either
    end.  Two names with one ``id_part`` would share a job id, a workspace and a result:
    harness.config.matrix refuses them."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "x"


def job_id(interpreter: str, package: str) -> str:
    """The job id of a package on an interpreter (both by name).  One per pair while no
    interpreter's ``id_part`` holds ``JOB_ID_SEP`` and every package name starts with a letter or
    digit (PEP 508), as matrix.yaml's checks make sure."""
    return f"{id_part(interpreter)}{JOB_ID_SEP}{id_part(package)}"


@dataclass(frozen=True, kw_only=True)
class Settings:
    threads: int = 4
    iterations: int = 5
    repeat: int = 4  # a race failing half its runs passes all 4 one time in 16 (3: one in 8; issue #47)
    test_timeout: int = 120
    job_timeout: int = 1800
    install_timeout: int = 1200  # seconds for each of fetch, install, test deps (a long source build)
    gil_modes: tuple[int, ...] = (0, 1)
    min_parallel_fraction: float = 0.5
    confirm: int = 20  # runs alone, per GIL mode, of each candidate's test at most (verdict.confirm; 0: off)
    confirm_budget: int = 600  # seconds per job those re-runs may take together
    registry: str | None = "shipped"  # community recipes: the snapshot in harness/data, a path, None: off
    fallback_wheel: str = "build"  # a compiled project's pure wheel: build it from its sdist, or keep it
    wheel_store: bool = True  # wheels built from sdists, and the test tools, shared read-only between jobs (harness.store.wheelstore, .toolslayer)
    gil_on: str = "targeted"  # the GIL-on runs: only the tests the GIL-off runs left red, or the whole suite


@dataclass(frozen=True, kw_only=True)
class Source:
    """Where an interpreter's source comes from: exactly one kind."""

    kind: str  # "debian" | "url" | "tarball" | "python"
    suite: str = ""  # debian
    url: str = ""  # url
    sha256: str = ""  # url (required), tarball (optional)
    path: str = ""  # tarball, absolute; python: absolute path, or "" when found on PATH by name
    name: str = ""  # python: a command name looked up on PATH when the run starts (python3.14t)

    @property
    def builds(self) -> bool:
        """True when the harness builds the interpreter (False: an installed one is used)."""
        return self.kind != "python"

    def describe(self) -> str:
        if self.kind == "debian":
            return f"debian:{self.suite}"
        if self.kind == "url":
            return f"url:{self.url}"
        if self.kind == "python":
            return f"python:{self.path or self.name}"
        return f"tarball:{self.path}"


@dataclass(frozen=True, kw_only=True)
class Interpreter:
    name: str
    version: str  # "" only for source python: (the interpreter's own version is recorded)
    source: Source
    configure: tuple[str, ...] = ()
    sanitizer: str | None = None
    # (file, line, "interpreters[0]"): where the entry is, for errors found when the run starts
    # (a Debian suite that ships another version, an installed GIL build).  Not part of the
    # matrix digest or of any key: moving an entry changes nothing of a result.
    origin: tuple[str, int, str] = field(default=("", 0, ""), compare=False)

    def fail(self, msg: str) -> ConfigError:
        """A one-line error about this entry: ``matrix.yaml:14: interpreters[0].source ...``."""
        file, line, where = self.origin
        return ConfigError(f"{where or 'interpreter ' + repr(self.name)}{msg}", file=file or None, line=line or None)

    @property
    def configure_flags(self) -> tuple[str, ...]:
        flags = ["--disable-gil"]
        if self.sanitizer == "thread":
            flags.append("--with-thread-sanitizer")
        flags += [f for f in self.configure if f not in flags]
        return tuple(flags)


@dataclass(frozen=True, kw_only=True)
class Skip:
    test: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class Package:
    name: str
    version: str = ""  # PEP 440 specifier set for PyPI packages ("" = latest)
    path: str = ""  # absolute path of a local source tree
    tests: str = ""  # path of the test suite inside the source ("" = let pytest find)
    test_requires: tuple[str, ...] = ()
    pytest_args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    runner: str = "pytest"
    tox_env: str = ""
    skip: tuple[Skip, ...] = ()
    notes: str = ""
    links: tuple[str, ...] = ()
    tsan_suppressions: str = ""  # absolute path
    # why no version could be fixed for a selected project (select.expand); the job records it
    # as its outcome instead of fetching
    unresolved: str = ""

    @property
    def is_local(self) -> bool:
        return bool(self.path)
