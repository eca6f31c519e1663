import itertools
import threading
import time

_a, _b = threading.Lock(), threading.Lock()
_turn = itertools.count()


def test_ok():
    assert True


def test_sleeps_forever():
    time.sleep(600)


def test_lock_order():
    """Half the callers take a then b, half b then a: only concurrent callers deadlock."""
    first, second = (_a, _b) if next(_turn) % 2 else (_b, _a)
    with first:
        time.sleep(0.3)
        with second:
            pass
