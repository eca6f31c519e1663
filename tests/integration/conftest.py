"""What the docker tests share: whether an engine answers, a client, and the interpreter they use."""

from __future__ import annotations

import pytest

from harness.backends.docker import docker_available
from harness.config import matrix
from tests.conftest import INTERP_YAML

DOCKER_OK, DOCKER_WHY = docker_available()
# every docker test module: pytestmark = [*DOCKER, ...]
DOCKER = [
    pytest.mark.docker,
    pytest.mark.integration,
    pytest.mark.skipif(not DOCKER_OK, reason=f"no docker engine: {DOCKER_WHY}"),
]


@pytest.fixture(scope="module")
def client():
    import docker

    c = docker.from_env(timeout=600)
    yield c
    c.close()


@pytest.fixture(scope="module")
def interp():
    """The default matrix's interpreter: its image is the one `nox -s matrix` uses."""
    return matrix.loads(INTERP_YAML + "packages: [{name: six}]\n").interpreters[0]
