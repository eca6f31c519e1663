"""Results of earlier runs reused instead of running a job again (reuse: ``run --reuse DIR``)."""
