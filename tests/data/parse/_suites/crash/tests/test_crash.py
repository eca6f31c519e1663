import ctypes
import sys


def test_before():
    assert True


def test_segv():
    ctypes.string_at(0)


def test_segv_nogil_only():
    if not sys._is_gil_enabled():
        ctypes.string_at(0)


def test_after():
    assert True
