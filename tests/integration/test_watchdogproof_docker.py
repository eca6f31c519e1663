"""ft_watchdogproof on the docker backend (issue #58): the silence watch fires there too, and asks
every process of the container but its init for its stacks (``docker exec``), not only the one
docker's own ``kill --signal`` reaches. What is checked: ``test_watchdogproof``."""

from __future__ import annotations

import pytest

from harness.job.watchdog import seconds
from tests.integration.conftest import DOCKER
from tests.integration.test_watchdogproof import TEST_TIMEOUT, _check, _run

pytestmark = [*DOCKER, pytest.mark.slow]


def test_docker_names_the_hang_with_its_stacks_once_and_goes_on(tmp_path, ft_interpreter) -> None:
    d, took = _run(tmp_path, "docker")
    _check(d)
    assert took < 2 * seconds(TEST_TIMEOUT) + 300, took
