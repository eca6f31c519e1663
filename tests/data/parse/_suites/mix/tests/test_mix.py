import sys
import threading
import time

import pytest

_owner = [None]


def test_ok():
    assert 1 + 1 == 2


@pytest.mark.parametrize("x", ["a", "b-c", "d e"])
def test_param(x):
    assert isinstance(x, str)


def test_baseline_fail():
    assert {"a": 1} == {"a": 2}, "plain bug"


def test_skipped():
    pytest.skip("not on this platform")


@pytest.mark.thread_unsafe(reason="touches global config")
def test_marked_unsafe():
    assert True


def test_uses_monkeypatch(monkeypatch):
    monkeypatch.setattr(sys, "maxsize", sys.maxsize)


def test_race():
    """Unlocked check-then-act on shared state: interleaves only with real parallelism."""
    me = threading.get_ident()
    for _ in range(200_000):
        _owner[0] = me
        assert _owner[0] == me, "another thread wrote _owner in between"


class TestKlass:
    def test_method(self):
        assert "x".upper() == "X"


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False  # noqa: B011


_items = []


def test_shared_list():
    """Sleeps between write and read: interleaves under threads whatever the GIL does."""
    _items.clear()
    _items.append(threading.get_ident())
    time.sleep(0.01)
    assert _items == [threading.get_ident()]
