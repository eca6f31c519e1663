import pytest

import tsan_samples


@pytest.mark.thread_unsafe
def test_uaf():
    assert tsan_samples.uaf() is None
