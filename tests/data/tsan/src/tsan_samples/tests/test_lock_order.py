import pytest

import tsan_samples


@pytest.mark.thread_unsafe
def test_lock_order():
    tsan_samples.lock_ab()
    tsan_samples.lock_ba()
