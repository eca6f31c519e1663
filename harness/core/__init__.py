"""What every stage shares: the result model and its evidence, errors, limits, the workspace filesystem, capped logs, the YAML walker (general utilities: harness.util)."""
