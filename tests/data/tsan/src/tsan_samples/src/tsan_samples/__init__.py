from ._samples import incr, lock_ab, lock_ba, uaf, value

__all__ = ["incr", "lock_ab", "lock_ba", "uaf", "value"]
