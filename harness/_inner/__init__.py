"""Scripts that run inside a job's venv, on the free-threaded interpreter (not imported by the harness)."""
