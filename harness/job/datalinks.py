"""The sdist's data linked where the installed package looks for it (harness.testsetup.datadirs).

After the install, before the tests: for each directory the package's own code reads relative
to itself (dulwich's ``testdata/``), a link in the venv at the place the installed package
climbs to, pointing at the source tree's directory. Made by a command in the job's sandbox (a
``setup`` phase), never by the host after package code ran; a name the install already made
there is left alone.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Sequence
from dataclasses import replace

from ..core.suiterecord import TestSetup
from ..testsetup.suitesetup import DataDir
from . import jobfiles
from .context import JobCtx, PhaseSpec, run_phase
from .source import Source

PHASE = "data-links"


def at(sp: str, d: DataDir) -> str:
    """Where the link goes, below the workspace."""
    return posixpath.normpath(posixpath.join(sp, *[".."] * d.up, d.name))


def link(ctx: JobCtx, src: Source, dirs: Sequence[DataDir], record: TestSetup) -> tuple[TestSetup, tuple[str, ...]]:
    """Link each of ``dirs`` beside the installed package; the test setup with a note for each
    link made, and the links as paths relative to site-packages (for the laptop recipe)."""
    found = jobfiles.site_packages(ctx.fs) if dirs else None
    sp = found[0] if found else ""
    todo = [d for d in dirs if sp and ctx.fs.lstat(at(sp, d)) is None]
    if not todo:
        return record, ()
    cmds = [
        f"ln -s {shlex.quote(f'{src.path}/{d.name}')} {shlex.quote(ctx.ws.path(*at(sp, d).split('/')))}" for d in todo
    ]
    phase = run_phase(
        ctx,
        PhaseSpec(
            name=PHASE, kind="setup", command=["sh", "-c", " && ".join(cmds)], env=ctx.env, cwd=ctx.ws.root, timeout=60
        ),
    )
    if not phase.ok:
        return record, ()
    notes = tuple(d.note() for d in todo)
    rel = tuple(posixpath.join(*[".."] * d.up, d.name) if d.up else d.name for d in todo)
    return replace(record, sources=(*record.sources, *notes)), rel
