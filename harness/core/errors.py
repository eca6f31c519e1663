"""Harness errors: typed, each with the exit code ``__main__`` maps it to.

A package's failure is never one of these: it is a status plus findings in a
JobResult.  These are for the harness's own problems only.
"""

from __future__ import annotations


class HarnessError(Exception):
    """Base of every error the CLI turns into one line and an exit code."""

    return_code = 1


class ConfigError(HarnessError):
    """Bad input: a matrix file, a CLI argument, a result file we cannot read."""

    return_code = 2

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None):
        self.file = file
        self.line = line
        self.bare = message
        if file is not None and line is not None:
            message = f"{file}:{line}: {message}"
        elif file is not None:
            message = f"{file}: {message}"
        super().__init__(message)


class RegressionError(HarnessError):
    """A report diff found a regression, or --fail-on matched (a gate, not a bug)."""

    return_code = 1


class BuildError(HarnessError):
    """The interpreter could not be fetched or built."""

    return_code = 3


class InfraError(HarnessError):
    """Broken infrastructure: docker down, disk full, no network for the harness itself."""

    return_code = 4


class SdistUnchecked(Exception):
    """The index could not say which sdist a release has now (unreachable, or no usable sdist):
    the base of harness.job.fetch's ``IndexUnavailable`` and ``NoSdist``, so that a reader of
    earlier results (harness.reuse) can catch them without importing the job.  Not a
    HarnessError: the CLI never sees one."""


class Interrupted(HarnessError):
    """SIGINT/SIGTERM: finished results are kept, in-flight jobs are dropped."""

    return_code = 130
