from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.job import wheelsteps

from .loopindex import LoopIndex


@pytest.fixture
def index(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopIndex]:
    """An empty loopback index, the harness's for this test."""
    loop = LoopIndex()
    monkeypatch.setenv("FT_HARNESS_INDEX_URL", loop.url)
    wheelsteps._PAGES.clear()
    try:
        yield loop
    finally:
        loop.close()
