"""The job's first stage: the package's source tree in the workspace, from a local path or from
its sdist (fetched by the host from the index, else by pip in the backend), and what the install
will ask pip for.
"""

from __future__ import annotations

import logging
import shlex
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidSdistFilename, canonicalize_name, parse_sdist_filename
from packaging.version import InvalidVersion

from .. import parse
from ..config import indexclient
from ..core.errors import InfraError
from ..core.model import Phase
from . import extract, fetch
from .context import JobCtx, PhaseSpec, run_phase

log = logging.getLogger(__name__)

LOCAL_RELEASE = "local"  # a local tree's release (Source.release): never a version's spelling

COPY_IGNORE = shutil.ignore_patterns(".git", ".nox", ".tox", "build", "dist", "*.egg-info", "__pycache__", "*.so")


@dataclass(frozen=True, kw_only=True)
class Source:
    """The package's source tree, made by the host before any package code ran."""

    src_host: Path  # on the host: read by the suite-setup stage only, before the install
    path: str  # the same tree as the backend sees it
    target: str  # what pip installs: the tree (local), or ``name==version`` / the spec
    version: str = ""  # from the sdist's file name ("" for a local tree)
    archive: Path | None = None  # the sdist (a compiled project's fallback rebuild installs it)
    sha256: str = ""  # the sdist's, checked against the index ("" when pip fetched it)
    # the release as the host knows it, the key of its pip cache (docker): LOCAL_RELEASE for a
    # local tree; the index's version when the host fetched the sdist; when pip fetched it, only
    # what the spec pins (the file's name is then a name package code could have written)
    release: str = ""
    index_files: tuple[str, ...] | None = (
        None  # the release's file names on the index page the fetch read (None: not read)
    )


@dataclass(frozen=True, kw_only=True)
class Unfetched:
    """No source tree: the sdist could not be fetched (the fetch phase says why)."""

    # what the index page the fetch read lists for the release the spec pins (None: not read, or no pin)
    index_files: tuple[str, ...] | None = None


def pinned_version(spec: str) -> str:
    """'2.1.1' for '==2.1.1' (the one release a spec allows), else ''."""
    try:
        specs = list(SpecifierSet(spec))
    except InvalidSpecifier:
        return ""
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        return specs[0].version
    return ""


def source(ctx: JobCtx) -> Source | Unfetched:
    """The source tree; Unfetched when the sdist could not be fetched (the fetch phase says why)."""
    if ctx.job.package.is_local:
        src_host = ctx.ws.host("src")
        extract.fresh_dir(src_host)
        shutil.copytree(ctx.job.package.path, src_host / "pkg", ignore=COPY_IGNORE, symlinks=True)
        return Source(
            src_host=src_host / "pkg",
            path=ctx.ws.path("src", "pkg"),
            target=ctx.ws.path("src", "pkg"),
            release=LOCAL_RELEASE,
        )
    return _from_sdist(ctx)


def _from_sdist(ctx: JobCtx) -> Source | Unfetched:
    job, ws = ctx.job, ctx.ws
    spec = f"{job.package.name}{job.package.version}"
    pip_download = [
        ws.python,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-binary",
        canonicalize_name(job.package.name),
        "--dest",
        ws.path("sdist"),
        spec,
    ]
    fetched, sha256, files = _fetch_on_host(ctx, pip_download)
    if fetched is None:  # the host cannot read the index: pip, in the backend (it may build)
        fetched = run_phase(
            ctx,
            PhaseSpec(
                name="fetch",
                kind="install",
                command=pip_download,
                env=ctx.env,
                cwd=ws.root,
                timeout=job.settings.install_timeout,
                network=True,
            ),
        )
    archives = extract.archives(ws.host("sdist"))  # regular files only: pip may have built
    if not fetched.ok or not archives:
        return Unfetched(index_files=files)
    try:
        version = str(parse_sdist_filename(archives[0].name)[1])
    except InvalidSdistFilename:
        version = ""
    try:  # into a src/ made now, whatever a package step left there (harness.job.extract)
        top, links_out = extract.extract(archives[0], ws.host("src"))
    except extract.UNSAFE as e:  # a broken or hostile archive; past a limit: LimitExceeded
        raise InfraError(f"{job.job_id}: cannot extract {archives[0].name}: {e}") from None
    if links_out:
        log.warning(
            "%s: %d link(s) out of the tree skipped in %s: %s",
            job.job_id,
            len(links_out),
            archives[0].name,
            ", ".join(links_out[:5]),
        )
    return Source(
        src_host=top,
        path=ws.path(*top.relative_to(ws.host_root).parts),
        target=f"{job.package.name}=={version}" if version else spec,
        version=version,
        archive=archives[0],
        sha256=sha256,
        release=version if sha256 else pinned_version(job.package.version),
        index_files=files if sha256 else None,
    )


def _fetch_on_host(ctx: JobCtx, shown: list[str]) -> tuple[Phase | None, str, tuple[str, ...] | None]:
    """The sdist from the index's JSON page, by the host, with no build (harness.job.fetch); the
    phase shows the equivalent ``pip download``, with the sdist's sha256, and the release's file
    names on the page (None: not read). None: the host cannot read the index."""
    pkg, ws = ctx.job.package, ctx.ws
    ctx.progress(ctx.job.job_id, "fetch")
    t0 = time.monotonic()
    sha256, files = "", None
    try:
        got = fetch.sdist(pkg.name, pkg.version, ws.host("sdist"))
        sha256, files = got.sha256, got.files
        code, text = (
            0,
            (f"{got.url}\nsaved {got.path.name}: {got.size} bytes, sha256 {got.sha256} (checked against the index)\n"),
        )
    except fetch.IndexUnavailable as e:
        log.info("%s: %s; fetching with pip in the backend", ctx.job.job_id, e)
        fetch.clear(ws.host("sdist"))
        return None, "", None
    except fetch.NoSdist as e:
        code, text = 1, f"ERROR: {e}\n"
        files = _pinned_files(e.page, pkg.version)
    with ctx.fs.create_text("logs/fetch.log") as f:
        f.write(
            f"$ {shlex.join(shown)}\n# fetched by the host from the index's JSON page (PEP 691), nothing built\n{text}"
        )
    phase = parse.parse_phase(
        Phase(
            name="fetch",
            kind="install",
            command=tuple(shown),
            env=dict(ctx.env),
            cwd=ws.root,
            exit_code=code,
            duration=round(time.monotonic() - t0, 3),
            log=ctx.rel(ws.host("logs", "fetch.log")),
        ),
        ctx.out,
    )
    ctx.phases.append(phase)
    return phase, sha256, files


def _pinned_files(page: dict[str, Any] | None, spec: str) -> tuple[str, ...] | None:
    """The file names the page lists for the release ``spec`` pins (the result still names that
    release when no sdist of it was fetched); None: no page, or no pin."""
    pin = pinned_version(spec)
    if page is None or not pin:
        return None
    try:
        return tuple(indexclient.release_files(page, pin))
    except InvalidVersion:  # an ``===`` pin of no PEP 440 version
        return None
