import sys

import legacyext


def test_add():
    assert legacyext.add(2, 3) == 5


def test_gil_state():
    # informational: records what the interpreter says after the import
    assert isinstance(sys._is_gil_enabled(), bool)
