import threading


class Counter:
    def __init__(self):
        self._lock = threading.Lock()
        self._n = 0
        self._seen = {}

    def incr(self, n, key="k"):
        for _ in range(n):
            with self._lock:
                self._n += 1
                self._seen[key] = self._seen.get(key, 0) + 1

    @property
    def value(self):
        with self._lock:
            return self._n


SHARED = Counter()
