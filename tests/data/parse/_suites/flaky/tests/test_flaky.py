import threading

_owner = [None]


def test_rare_race():
    """The same unlocked write/read as mix's test_race, but short: interleaves only sometimes."""
    me = threading.get_ident()
    for _ in range(20000):
        _owner[0] = me
        assert _owner[0] == me, "another thread wrote _owner in between"


def test_ok():
    assert True
