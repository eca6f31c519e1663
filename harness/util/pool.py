"""Spread a big, pure, CPU-bound loop over the machine's cores with forked workers.

Rendering 10,000 package pages or parsing 10,000 result files is a loop of
independent steps in pure Python; one process uses one core.  ``start`` forks
worker processes that inherit the (large) input by copy-on-write, so it is
never pickled; only the chunks (small: index ranges) go in and each chunk's
(small) result comes back.

Forking is only safe while this process has a single thread, and only worth
it for big inputs: ``start`` returns None otherwise and the caller runs its
loop in-process, with the same function, so both paths give the same output.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

log = logging.getLogger(__name__)

PARALLEL_MIN = 400  # fewer items than this: the loop runs in-process (forking costs ~50 ms)
MAX_WORKERS = 2

_TASK: tuple[Callable[[Any, Any], Any], Any] | None = None  # what forked workers inherit


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """The objects alive now are left out of garbage collection until the block ends.

    A report of 10,000 packages is millions of long-lived objects that every
    full collection would walk again while the pages are rendered (or parsed).
    Nested blocks leave it to the outermost one to unfreeze.
    """
    outer = gc.get_freeze_count() == 0
    if outer:
        gc.freeze()
    try:
        yield
    finally:
        if outer:
            gc.unfreeze()


def workers() -> int:
    """Cores this process may use, at most MAX_WORKERS."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, n))


def chunks(n: int, size: int) -> list[tuple[int, int]]:
    """[start, stop) index ranges covering range(n), each at most ``size`` long."""
    return [(i, min(i + size, n)) for i in range(0, n, max(1, size))]


def _run(chunk: Any) -> Any:
    assert _TASK is not None, "pool worker started without a task"
    fn, state = _TASK
    return fn(state, chunk)


def start(
    fn: Callable[[Any, Any], Any], state: Any, parts: Sequence[Any], *, items: int
) -> Callable[..., list[Any]] | None:
    """Run ``fn(state, part)`` for every part in forked workers, in the background.

    Returns ``wait``: ``wait()`` gives the results in ``parts`` order
    (re-raising a worker's exception), ``wait(cancel=True)`` stops the
    workers; or None when the caller should run the
    loop itself: fewer than PARALLEL_MIN ``items``, one core, no fork, or
    other threads alive in this process.
    """
    global _TASK
    n = workers()
    if items < PARALLEL_MIN or n < 2 or len(parts) < 2:
        return None
    if "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        log.info(
            "%d items of %s in one process: %s",
            items,
            fn.__name__,
            "no fork here"
            if threading.active_count() == 1
            else f"{threading.active_count() - 1} other threads alive, forking is unsafe",
        )
        return None
    _TASK = (fn, state)
    with frozen_heap():  # workers' collections skip the inherited heap: no copy-on-write of it
        try:
            pool = multiprocessing.get_context("fork").Pool(n)
        finally:
            _TASK = None  # the workers have their copy; the parent keeps no reference
    pending = pool.map_async(_run, parts, chunksize=1)
    pool.close()
    log.debug("%d parts of %s on %d forked workers", len(parts), fn.__name__, n)

    def wait(cancel: bool = False) -> list[Any]:
        try:
            return [] if cancel else pending.get()
        finally:
            pool.terminate()
            pool.join()

    return wait
