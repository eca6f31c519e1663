import pytest


@pytest.mark.thread_unsafe
def test_marked():
    assert True


def test_monkeypatch(monkeypatch):
    monkeypatch.setenv("X", "1")


def test_capsys(capsys):
    print("hi")
    assert capsys.readouterr().out == "hi\n"


def test_skipped():
    pytest.skip("not here")
