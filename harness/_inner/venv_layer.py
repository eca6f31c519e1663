"""Seed a job's venv with pip and the harness's tools from a layer built once per interpreter
(runs inside the backend, by the interpreter under test; standard library only).

    python venv_layer.py VENV LAYERS TOOL [TOOL ...]     (a TSan job: LAYERS is writable)
    python venv_layer.py --from LAYER VENV               (any job: LAYER is read-only)

The second form copies a layer the harness built before the job, in a step of its own, into the
shared store (harness.store.toolslayer): the job only reads it, and its venv's files are its own
(written by this copy, writable by the job, as pip's would be).

VENV was made with ``python -m venv --without-pip``.  LAYERS is a directory kept between jobs of
the same interpreter build (the job puts it in that build's pip cache).  The first job builds
``LAYERS/<digest>``  the ordinary way -- ``python -m venv`` (ensurepip) and ``pip install TOOL...``
under the TSan interpreter -- and every job then copies its site-packages and its console scripts
into VENV, scripts pointed at VENV's python.  The files are the ones pip wrote (the same wheels,
the same bytecode, RECORDs relative to site-packages), so VENV is what ``venv`` + ``pip install
TOOL...`` would have made, without paying for pip, pytest and their dependencies being unpacked
and compiled by an instrumented interpreter in every job.  The package under test and its own
dependencies are still installed by the job's pip, under TSan.

The digest covers the interpreter (its ``-VV`` line and executable), its bundled pip and the tool
list, so a new pin is a new layer.  Two jobs building one layer at once each build their own and
the first rename wins.  Exits non-zero on any failure; the job then makes the venv the ordinary
way.
"""

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import uuid

LAYER_MARK = "ft-harness-layer.json"
SKIP_BIN = ("python", "activate", "Activate", "deactivate")
MAX_SHEBANG = 127  # what pip (distlib) allows before it writes a /bin/sh trampoline


def _pip_version():
    try:
        import ensurepip

        return ensurepip.version()
    except Exception:
        return "none"


def layer_digest(tools):
    blob = "\0".join([sys.version, os.path.realpath(sys.executable), _pip_version(), *tools])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _site(prefix):
    return sysconfig.get_path("purelib", vars={"base": prefix, "platbase": prefix})


def _build(layers, digest, tools):
    final = os.path.join(layers, digest)
    tmp = os.path.join(layers, f".{digest}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        subprocess.run([sys.executable, "-m", "venv", tmp], check=True)
        py = os.path.join(tmp, "bin", "python")
        subprocess.run([py, "-m", "pip", "install", "--disable-pip-version-check", *tools], check=True)
        with open(os.path.join(tmp, LAYER_MARK), "w") as f:
            json.dump({"tools": list(tools), "pip": _pip_version(), "python": sys.version}, f)
        try:
            os.rename(tmp, final)
        except OSError:  # another job's layer got there first: use it
            if not os.path.exists(os.path.join(final, LAYER_MARK)):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"venv_layer: built layer {final}", file=sys.stderr)
    return final


TRAMPOLINE = "'''exec' "  # line 2 of pip's /bin/sh trampoline


def _header(python):
    """The interpreter line(s) pip (distlib) writes: a /bin/sh trampoline for a long path."""
    if len(python) + 2 <= MAX_SHEBANG and " " not in python:
        return f"#!{python}\n"
    return f'#!/bin/sh\n{TRAMPOLINE}{shlex.quote(python)} "$0" "$@"\n' + "' " + "'" * 3 + "\n"


def _retarget(text, venv):
    """A console script with its interpreter line(s) pointed at ``venv``'s python."""
    lines = text.splitlines(keepends=True)
    if not lines or not lines[0].startswith("#!"):
        return None
    if lines[0].strip() == "#!/bin/sh" and len(lines) > 2 and lines[1].startswith(TRAMPOLINE):
        words = shlex.split(lines[1])  # exec, the interpreter, "$0", "$@"
        old, body = (words[1] if len(words) > 1 else ""), lines[3:]
    else:
        old, body = lines[0][2:].strip(), lines[1:]
    name = os.path.basename(old)
    if not name.startswith("python"):
        return None
    return _header(os.path.join(venv, "bin", name)) + "".join(body)


def _copy(src, dst):
    """The bytes and the times (a .pyc names its source's mtime), not the mode: a read-only
    layer gives a venv pip can still change."""
    shutil.copyfile(src, dst)
    st = os.stat(src)
    os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))


def seed(venv, layer):
    shutil.copytree(_site(layer), _site(venv), dirs_exist_ok=True, symlinks=True, copy_function=_copy)
    os.chmod(_site(venv), 0o755)
    for root, dirs, _ in os.walk(_site(venv)):
        for d in dirs:
            path = os.path.join(root, d)
            if not os.path.islink(path):
                os.chmod(path, 0o755)
    src_bin, dst_bin = os.path.join(layer, "bin"), os.path.join(venv, "bin")
    for name in sorted(os.listdir(src_bin)):
        src, dst = os.path.join(src_bin, name), os.path.join(dst_bin, name)
        if name.startswith(SKIP_BIN) or os.path.lexists(dst) or not os.path.isfile(src):
            continue
        with open(src, encoding="utf-8", errors="surrogateescape") as f:
            text = _retarget(f.read(), os.path.abspath(venv))
        if text is None:
            continue
        with open(dst, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
        os.chmod(dst, 0o755)


def main(argv):
    if len(argv) == 3 and argv[0] == "--from":
        layer, venv = argv[1], argv[2]
        if not os.path.isfile(os.path.join(layer, LAYER_MARK)):
            raise FileNotFoundError(f"no layer at {layer}")
        seed(venv, layer)
        print(f"venv_layer: seeded {venv} from {layer}", file=sys.stderr)
        return 0
    if len(argv) < 3:
        print(__doc__.splitlines()[2].strip(), file=sys.stderr)
        return 2
    venv, layers, tools = argv[0], argv[1], argv[2:]
    os.makedirs(layers, exist_ok=True)
    digest = layer_digest(tools)
    layer = os.path.join(layers, digest)
    if not os.path.exists(os.path.join(layer, LAYER_MARK)):
        layer = _build(layers, digest, tools)
    seed(venv, layer)
    print(f"venv_layer: seeded {venv} from {layer}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception as e:  # one line, then the job's ordinary venv
        print(f"venv_layer: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
