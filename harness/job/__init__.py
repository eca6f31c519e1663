"""One job from sdist to verdict (job, with fetch, extract, suite, recipe, tsan, watchdog, jobfiles) and the runner that runs them (runner, reuse)."""
