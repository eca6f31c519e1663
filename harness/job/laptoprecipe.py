"""Portable reproduce recipes: what a reader pastes on a laptop to see a finding again.

A finding's ``reproduce`` is the exact command on the machine that ran the job (its workspace,
its venv, its container).  Its ``recipe`` names nothing of that machine: a free-threaded
CPython of the same version on PATH, a fresh venv, the release and the test tools at the
versions the job pinned, the sdist's tests, then the same pytest run on the one test, with the
same GIL mode and thread options::

    python3.13t -m venv ft && . ft/bin/activate
    python -m pip install 'six==1.17.0' 'pytest==8.4.2' ...
    python -m pip download --no-deps --no-binary six -d sdist 'six==1.17.0'
    mkdir src && tar xzf sdist/*.tar.gz -C src && cd src/*/
    PYTHON_GIL=0 PYTHONFAULTHANDLER=1 python -P -m pytest ... 'test_six.py::test_x'

A local package (``path:`` in matrix.yaml) has no release to download: the recipe copies its
source from that path.  Built from the phase's command parts (``model.TestCommand``), never by
parsing a command line; only the options that name the job's workspace are rewritten.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from ..core.model import Finding, InterpreterInfo, Phase
from ..verdict.artifact import rebuilt
from .tsanenv import MARKER_PLUGIN

# The harness's own tools a run alone needs (pytest-xdist only serves the job's own runs).
ALONE_TOOLS = ("pytest", "pytest-run-parallel", "pytest-timeout")
OWN_PLUGINS = (MARKER_PLUGIN,)  # the harness's in-tree plugins: not on a laptop


def _options(options: Sequence[str], src: str) -> list[str]:
    """The job's pytest options with its workspace paths made relative to the sdist's top: the
    rootdir, and the config file named by ``-c`` (the sdist's own, at its place in the sdist;
    a config named from outside the tests' directory, as for tests run from site-packages, is
    the sdist's top-level file of that name)."""
    out = []
    top = src.rstrip("/") + "/"
    for i, o in enumerate(options):
        for flag in ("--rootdir=", "--confcutdir="):
            if o.startswith(flag) and o[len(flag) :].rstrip("/") == src.rstrip("/"):
                o = flag + "."
        if i and options[i - 1] == "-c" and o != "/dev/null" and o.startswith("/"):
            o = o[len(top) :] if o.startswith(top) else o.rsplit("/", 1)[-1]
        out.append(o)
    return out


def _plugins(plugins: Sequence[str]) -> list[str]:
    out: list[str] = []
    it = iter(plugins)
    for p in it:
        if p == "-p":
            name = next(it, "")
            if name not in OWN_PLUGINS:
                out += ["-p", name]
        else:
            out.append(p)
    return out


def recipe(
    finding: Finding,
    phases: Sequence[Phase],
    *,
    package: str,
    version: str,
    local_path: str,
    interp: InterpreterInfo,
    tools: Sequence[str],
    test_requires: Sequence[str],
    data_links: Sequence[str] = (),
) -> str:
    """The laptop recipe of one finding ('' when its phase is not a test run we can rebuild)."""
    phase = next((p for p in phases if p.name == finding.phase), None)
    tc = phase.test_command if phase is not None else None
    if phase is None or tc is None or "pytest" not in tc.head:
        return ""
    major_minor = ".".join(interp.version.split(".")[:2])
    exe = interp.python_name or f"python{major_minor}t"
    pins = [t for t in tools if t.split("==")[0] in ALONE_TOOLS]
    spec = f"{package}=={version}" if version and not local_path else ""
    lines = [
        f"# needs a free-threaded CPython {interp.version} on PATH as {exe} "
        f"(python.org's free-threaded build, `uv python install {major_minor}t`, "
        f"or setup-python `{major_minor}t`)",
        f"{exe} -m venv ft && . ft/bin/activate",
    ]
    if spec:
        built = ["--no-binary", package] if rebuilt(phases) else []
        lines += [
            f"python -m pip install {shlex.join([*built, spec, *pins, *test_requires])}",
            # the package's sdist only: `:all:` would build setuptools & co. from source too
            f"python -m pip download --no-deps --no-binary {shlex.quote(package)} -d sdist {shlex.join([spec])}",
            "mkdir src && tar xzf sdist/*.tar.gz -C src && cd src/*/",
        ]
    else:
        lines += [
            f"cp -R {shlex.quote(local_path)} src && cd src  # the package's local source",
            f"python -m pip install . {shlex.join([*pins, *test_requires])}",
        ]
    if data_links:  # the sdist's data where the installed package looks for it (harness.job.datalinks)
        sp = '"$(python -c \'import sysconfig; print(sysconfig.get_path("purelib"))\')"'
        lines += [f'ln -s "$PWD"/{shlex.quote(d.rsplit("/", 1)[-1])} {sp}/{shlex.quote(d)}' for d in data_links]
    env = {k: v for k, v in sorted(phase.env.items()) if k in ("PYTHON_GIL", "PYTHONFAULTHANDLER")}
    test = (finding.test_id,) if finding.test_id else tc.paths
    argv = ["python", *tc.head[1:], *_options(tc.options, phase.cwd), *_plugins(tc.plugins), *tc.threads, *test]
    lines.append(" ".join([*(f"{k}={shlex.quote(v)}" for k, v in env.items()), shlex.join(argv)]))
    return "\n".join(lines)
