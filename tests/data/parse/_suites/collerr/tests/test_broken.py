
def test_never():
    pass
