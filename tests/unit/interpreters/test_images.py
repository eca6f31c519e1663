"""Pure parts of harness.interpreters.images: tags, digests, the build script and the build context."""

from __future__ import annotations

import json
import re
import shlex
import tarfile
from pathlib import Path

import pytest

from harness.config import matrix
from harness.core.errors import BuildError
from harness.interpreters import images, interpreters

MATRIX = """
interpreters:
  - name: ft313
    version: 3.13.5
    source: debian:trixie
    configure: [--with-lto]
packages:
  - name: six
"""


def _interp():
    return matrix.loads(MATRIX).interpreters[0]


def test_base_tag_is_a_digest_of_every_input():
    a = images.base_inputs("trixie", "http://deb.debian.org/debian")
    assert images.base_tag(a) == images.base_tag(dict(a))  # deterministic
    assert images.base_tag(a).startswith("ft-harness/base:trixie-")
    tags = {images.base_tag(a)}
    for key, other in (
        ("suite", "forky"),
        ("mirror", "http://example/debian"),
        ("packages", "ca-certificates"),
        ("script", "0" * 64),
    ):
        tags.add(images.base_tag({**a, key: other}))
    assert len(tags) == 5  # each input changes the tag


def test_base_inputs_cover_the_bootstrap_script():
    a = images.base_inputs("trixie", "http://m/debian")
    assert a["packages"] == "ca-certificates,python3"
    assert len(a["script"]) == 64 and images.BOOTSTRAP.exists()


def test_build_script_runs_the_local_builders_commands():
    interp = _interp()
    script = images.build_script(interp, jobs=3)
    expected = interpreters.build_commands("/tmp/ft-build/src", "/opt/python", interp.configure_flags, 3)
    lines = script.splitlines()
    assert lines[0] == "set -eu"
    assert [shlex.split(line) for line in lines[-len(expected) :]] == expected
    assert "--disable-gil" in script and "--with-lto" in script
    assert "--prefix=/opt/python" in script


def test_interpreter_tag():
    tag = images.interpreter_tag("cpython-3.13.5-ft-abc")
    assert re.fullmatch(r"ft-harness/interp:cpython-3\.13\.5-ft-abc-[0-9a-f]{8}", tag), tag


def test_build_context_holds_dockerfile_script_and_tarball(tmp_path: Path):
    tarball = tmp_path / "Python-3.13.5.tar.xz"
    tarball.write_bytes(b"not really a tarball")
    ctx = images._context(_interp(), tarball, jobs=2)
    with tarfile.open(fileobj=ctx) as tf:
        names = sorted(tf.getnames())
        dockerfile = tf.extractfile("Dockerfile").read().decode()
        script = tf.extractfile("build.sh").read().decode()
        source = tf.extractfile("source.tar").read()
    assert names == ["Dockerfile", "build.sh", "source.tar"]
    assert "FROM ${BASE}" in dockerfile and "useradd --uid 1000" in dockerfile
    assert script == images.build_script(_interp(), 2)
    assert source == b"not really a tarball"


class _Containers:
    def __init__(self, facts: dict):
        self.facts, self.argv = facts, []

    def run(self, tag, argv, **kw):
        self.argv.append(argv)
        return json.dumps(self.facts).encode()


class _Client:
    def __init__(self, facts: dict):
        self.containers = _Containers(facts)


def _facts(**changes) -> dict:
    """What CHECK_SCRIPT printed in a real 3.14t's shape (tests/data/real/py314/check.json)."""
    data = json.loads((Path(__file__).parent.parent.parent / "data/real/py314/check.json").read_text())
    return {**data, **changes}


def test_check_image_runs_bin_python3_and_uses_the_one_check():
    interp = matrix.loads(MATRIX.replace("3.13.5", "3.14.0")).interpreters[0]
    client = _Client(_facts())
    assert images.check_image(client, "t", interp)["python_name"] == "python3.14t"
    assert client.containers.argv[0][:2] == ["/opt/python/bin/python3", "-c"]
    assert interpreters.python_in(images.PREFIX, _facts()) == "/opt/python/bin/python3.14t"
    # a string "0" is true in Python: check_facts compares, the old copy here tested truth
    with pytest.raises(BuildError, match=r"t is not a free-threaded build \(Py_GIL_DISABLED='0'"):
        images.check_image(_Client(_facts(Py_GIL_DISABLED="0")), "t", interp)
    with pytest.raises(BuildError, match="t is CPython 3.14.0, the matrix asks for 3.13.5"):
        images.check_image(_Client(_facts()), "t", _interp())


def test_debootstrap_checks_the_archive_keyring(tmp_path, monkeypatch):
    """#30: the base image's packages come from a mirror that may be plain http; debootstrap
    checks them against the suite's signed Release file, with the keyring named explicitly."""
    import subprocess

    script = images.BOOTSTRAP.read_text()
    assert '--keyring="$KEYRING"' in script
    # no keyring: the script refuses before debootstrap runs (nothing made at ROOT)
    r = subprocess.run(
        [
            "sh",
            str(images.BOOTSTRAP),
            str(tmp_path / "root"),
            "trixie",
            "http://deb.debian.org/debian",
            "ca-certificates",
            str(tmp_path / "missing.gpg"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 2 and "refusing to debootstrap unchecked" in r.stderr
    assert not (tmp_path / "root").exists()
    # and the harness says which package to install, before starting it
    monkeypatch.setattr(images, "KEYRING", tmp_path / "missing.gpg")
    monkeypatch.setattr(images.shutil, "which", lambda name: "/usr/sbin/" + name)
    with pytest.raises(BuildError, match="apt-get install debian-archive-keyring"):
        images._bootstrap_and_import(
            None, "ft-harness/base:trixie-x", images.base_inputs("trixie", "http://m/debian"), tmp_path / "images"
        )
