"""The harness's own cost, measured side by side: ``python benchmarks/run.py`` (``nox -s bench``)."""
