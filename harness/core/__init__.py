"""What every stage shares: the result model and its evidence, errors, limits, the workspace filesystem, capped logs, inert text, the fork pool, the YAML walker."""
