import json

import tsan_purepy


def test_shared_counter():
    before = tsan_purepy.SHARED.value
    tsan_purepy.SHARED.incr(200)
    assert tsan_purepy.SHARED.value >= before + 200


def test_local_work():
    c = tsan_purepy.Counter()
    c.incr(50)
    data = json.loads(json.dumps({"n": c.value, "items": list(range(100))}))
    assert data["n"] == 50
    assert sorted({str(i): i for i in data["items"]}) == sorted(str(i) for i in range(100))
