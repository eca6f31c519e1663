"""Base and interpreter images on a real docker engine: built once, then reused.

The first run builds the base image (debootstrap, ~1-3 min) and the free-threaded
interpreter image (~5 min on 2 cores); every later run reuses them by tag.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import subprocess
import uuid
from pathlib import Path

import pytest

from harness.interpreters import images, interpreters
from tests.integration.conftest import DOCKER

pytestmark = DOCKER

CONFIG = (
    "import json, sys, sysconfig; print(json.dumps({'args': sysconfig.get_config_var("
    "'CONFIG_ARGS'), 'gil': sysconfig.get_config_var('Py_GIL_DISABLED'), "
    "'version': sys.version.split()[0]}))"
)


@pytest.fixture(scope="module")
def cache() -> Path:
    return interpreters.cache_root()


@pytest.mark.slow
def test_interpreter_image_is_built_once_then_reused(client, interp, cache, caplog):
    caplog.set_level(logging.INFO, logger="harness.interpreters.images")
    first = images.ensure_interpreter_image(client, interp, cache)
    caplog.clear()
    second = images.ensure_interpreter_image(client, interp, cache)
    assert second.reused is True
    assert second.tag == first.tag and second.id == first.id
    # the build key, then the digest of the Dockerfile, the build deps and the test tools
    assert re.fullmatch(rf"ft-harness/interp:{re.escape(second.key)}-[0-9a-f]{{8}}", second.tag), second.tag
    assert second.tag == images.interpreter_tag(second.key)
    assert second.python == "/opt/python/bin/python3.13t"  # named by the interpreter itself
    assert second.info is not None and second.info.key == second.key
    assert (second.info.full_version, second.info.python_name) == (interp.version, "python3.13t")
    assert "cp313-cp313t" in second.info.tag_pairs  # its wheel tags, asked inside the image
    assert f"reused image {second.tag}" in caplog.text
    assert "built image" not in caplog.text
    base = images.ensure_base(client, cache)
    assert base.reused is True

    labels = client.images.get(second.tag).labels
    tarball = interpreters.fetch_source(interp, cache)
    assert labels["ft-harness.key"] == interpreters.build_key(interp, tarball)
    assert labels["ft-harness.configure"] == "--disable-gil"
    assert labels["ft-harness.base"] == base.tag
    assert labels["ft-harness.source-sha256"] == interpreters._sha256(tarball)
    facts = images.check_image(client, second.tag, interp)
    assert facts["Py_GIL_DISABLED"] == 1 and facts["gil_enabled"] is False


@pytest.mark.slow
def test_image_interpreter_matches_the_local_build(client, interp, cache):
    """Same tarball, same configure flags: the docker and local interpreters agree."""
    ref = images.ensure_interpreter_image(client, interp, cache)
    out = client.containers.run(ref.tag, [ref.python, "-c", CONFIG], network_mode="none", remove=True)
    inside = json.loads(out)
    local = cache / "interpreters" / ref.key / "bin" / "python3.13t"
    if not (local / ".." / ".." / "ft-harness.json").resolve().exists():
        pytest.skip(f"no local build of {ref.key} in {cache} to compare with")
    here = json.loads(subprocess.run([str(local), "-c", CONFIG], capture_output=True, text=True, check=True).stdout)
    assert inside["version"] == here["version"] == interp.version
    assert inside["gil"] == here["gil"] == 1
    strip = lambda args: [a for a in args.split() if not a.strip("'").startswith("--prefix=")]  # noqa: E731
    assert strip(inside["args"]) == strip(here["args"])


def test_runtime_user_and_workdir(client, interp, cache):
    ref = images.ensure_interpreter_image(client, interp, cache)
    out = (
        client.containers.run(
            ref.tag, ["sh", "-c", "id -u; id -g; pwd; test -w /work && echo w"], network_mode="none", remove=True
        )
        .decode()
        .split()
    )
    assert out == ["1000", "1000", "/work", "w"]


def test_clean_removes_only_the_given_run(client, interp, cache):
    ref = images.ensure_base(client, cache)
    mine, other = f"t-{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex[:8]}"
    made = []
    for run in (mine, other):
        made.append(client.containers.create(ref.tag, ["true"], labels={"ft-harness.run": run, "ft-harness.job": "j1"}))
        made.append(client.volumes.create(f"ft-harness-test-{run}", labels={"ft-harness.run": run}))
    try:
        removed = images.clean(client, mine)
        assert len(removed) == 2 and any(r.startswith("volume ft-harness-test-") for r in removed)
        left = client.containers.list(all=True, filters={"label": "ft-harness.run=" + mine})
        assert left == []
        assert client.volumes.list(filters={"label": "ft-harness.run=" + mine}) == []
        assert len(client.containers.list(all=True, filters={"label": "ft-harness.run=" + other})) == 1
        assert len(images.clean(client, other)) == 2
    finally:
        for obj in made:
            with contextlib.suppress(Exception):
                obj.remove(force=True)


def test_the_image_builds_what_the_top_compiled_projects_need(client, interp, cache):
    """#43: the package layer (images.PACKAGE_BUILD_DEPS) is in the image: gfortran, Debian's
    rustc/cargo, cmake, ninja, and the libraries pkg-config finds (libjpeg, libyaml, GEOS, ...)."""
    tag = images.ensure_interpreter_image(client, interp, cache).tag
    script = (
        "gfortran --version | head -1 && cargo --version && rustc --version && cmake --version | head -1 "
        "&& ninja --version && patchelf --version && pkg-config --modversion libjpeg yaml-0.1 geos libpng "
        "libtiff-4 libwebp freetype2 lcms2 libopenjp2 libxml-2.0 libxslt openblas libsodium libpq "
        "libzstd liblz4 libbrotlienc libffi openssl zlib && test -f /usr/include/snappy-c.h && echo OK"
    )
    out = client.containers.run(
        tag, ["sh", "-c", script], network_mode="none", remove=True, labels={"ft-harness.kind": "check"}
    ).decode()
    lines = out.strip().splitlines()
    assert lines[-1] == "OK", out
    assert lines[0].startswith("GNU Fortran") and lines[1].startswith("cargo ") and lines[2].startswith("rustc ")
