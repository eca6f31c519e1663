"""ft-harness: which packages are safe on free-threaded CPython, and why the others are not."""

__version__ = "0.1.0"
