from ._clean import incr, value

__all__ = ["incr", "value"]
