"""The docker backend's pip cache volumes bounded by ``pip_cache_bytes`` (#56): when a job ends its
volume is measured by ``du`` in a container and kept only while this run's kept volumes fit the
limit together; one past it is removed, the others stay.  A real engine, real volumes; the image
is the host's own du and dd (imported from the host's files: no registry, ~2 s)."""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
import tarfile
import uuid
from pathlib import Path

import pytest

from harness.backends.pipcache import CACHE_LABEL, bound_pip_cache
from tests.integration.conftest import DOCKER

pytestmark = DOCKER
IMAGE = "ft-harness-test/du:1"
MIB = 1 << 20


def _files(tool: str) -> list[Path]:
    """A host binary and the libraries ldd names for it."""
    exe = Path(shutil.which(tool) or tool)
    out = subprocess.run(["ldd", str(exe)], capture_output=True, text=True, check=True).stdout
    return [exe, *(Path(w) for line in out.splitlines() for w in line.split() if w.startswith("/"))]


@pytest.fixture(scope="module")
def du_image(client):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for f in {p for tool in ("du", "dd") for p in _files(tool)}:
            tf.add(f.resolve(), arcname=str(f).lstrip("/"))
    subprocess.run(["docker", "import", "-", IMAGE], input=buf.getvalue(), check=True, capture_output=True)
    yield IMAGE


@pytest.fixture
def volumes(client):
    names: list[str] = []

    def make(mib: int) -> str:
        name = f"ft-harness-pip-test-{uuid.uuid4().hex[:8]}"
        client.volumes.create(name, labels={CACHE_LABEL: "pip-test"})
        client.containers.run(
            IMAGE,
            ["dd", "if=/dev/urandom", "of=/c/wheel", "bs=1M", f"count={mib}"],
            volumes={name: {"bind": "/c", "mode": "rw"}},
            network_mode="none",
            remove=True,
        )
        names.append(name)
        return name

    yield make
    for n in names:
        with contextlib.suppress(Exception):  # removed by the test itself
            client.volumes.get(n).remove(force=True)


def _exists(client, name: str) -> bool:
    return any(v.name == name for v in client.volumes.list())


def test_a_volume_past_pip_cache_bytes_is_removed_and_the_others_stay(
    client, du_image, volumes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FT_HARNESS_LIMIT_PIP_CACHE_BYTES", str(5 * MIB))
    kept: dict[str, int] = {}
    a, b = volumes(3), volumes(3)
    assert bound_pip_cache(client, a, du_image, "0:0", kept) == ""
    assert 3 * MIB <= kept[a] < 3 * MIB + 64 * 1024
    said = bound_pip_cache(client, b, du_image, "0:0", kept)
    assert said.startswith(f"pip cache {b} removed: it holds ") and "pip_cache_bytes" in said
    assert not _exists(client, b) and _exists(client, a) and list(kept) == [a]
    assert bound_pip_cache(client, a, du_image, "0:0", kept) == ""  # measured again: itself not counted twice


def test_a_volume_that_cannot_be_measured_is_not_kept(client, du_image, volumes, monkeypatch) -> None:
    """Fail-closed: a measure that fails (here: no such image) removes the volume, never keeps it."""
    monkeypatch.setenv("FT_HARNESS_LIMIT_PIP_CACHE_BYTES", str(64 * MIB))
    kept: dict[str, int] = {}
    c = volumes(1)
    said = bound_pip_cache(client, c, "ft-harness-test/no-such-image:0", "0:0", kept)
    assert said.endswith("could not be measured (limit pip_cache_bytes 67108864)") and not _exists(client, c)


def test_a_job_that_made_no_volume_gets_none_made(client, du_image) -> None:
    """A job whose steps never used its pip cache (no install step ran) has no volume: its end
    measures nothing and makes none (a container mounting a missing named volume would make one
    without its labels, which test_docker_backend then found on its next job of that name)."""
    name = f"ft-harness-pip-test-none-{uuid.uuid4().hex[:8]}"
    assert bound_pip_cache(client, name, du_image, "0:0", {}) == ""
    assert not _exists(client, name)
