"""A package whose code plants links to host files in its workspace (#17), through the real CLI
on the local backend (tests/integration/test_hostile.py runs it on docker too): a row of the
fault table."""

from __future__ import annotations

import pytest

from tests.integration.test_hostile import PLACES, _check

pytestmark = [pytest.mark.reliability, pytest.mark.integration, pytest.mark.slow]


def test_planted_links_to_host_files_are_never_followed(tmp_path, ft_interpreter, record) -> None:
    out, res = _check(tmp_path, "local")  # asserts: no marker in any output, target unchanged
    record(
        f"package code plants links to host files at {len(PLACES)}+ places the host reads or writes",
        f"none followed: no host text in any output, the target unchanged; verdict `{res['verdict']}`",
        True,
    )
