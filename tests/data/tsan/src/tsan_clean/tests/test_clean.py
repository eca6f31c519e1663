import tsan_clean


def test_incr():
    before = tsan_clean.value()
    tsan_clean.incr(2000)
    assert tsan_clean.value() >= before + 2000


def test_value():
    assert tsan_clean.value() >= 0
