"""Where the bench's units of work run: this process, a pool of worker processes, or Ray.

:func:`open_backend` gives a :class:`Backend` whose :meth:`~Backend.map` runs
``function(level, *shared, *item)`` for each item and yields the results as they finish (in
any order), with a bounded number of units in flight: items are taken from the iterable only
as workers free up, and a result is released as soon as it is yielded, so neither the items
nor the results pile up in the main process. ``level`` is the log level the unit configures
in its worker (:func:`~tiered_agent._workers.configure_worker_logging`); None in this process
(the caller's own logging stays as it is).

A pool's worker ends without tearing its interpreter down (:func:`_worker_start`): by the time it
exits, every result it computed was sent, and freeing a heap that replayed hundreds of runs, object
by object, kept the bench waiting one to three seconds after its last run.
"""

from __future__ import annotations

import atexit
import gc
import logging
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import ExitStack, contextmanager
from typing import Any, Protocol, TypeVar

from .._cluster import RayAddress, map_on_ray, ray_session
from .._workers import owned_resource_tracker, worker_log_level

__all__ = ["Backend", "Pool", "open_backend"]

T = TypeVar("T")
_QUEUED_PER_WORKER = 4  # units handed to the pool per worker process at a time


class Backend(Protocol):
    level: int | None  # what units configure their logging at (None: in this process, leave it)
    remote: bool  # the workers may be on other machines (they cannot read this machine's files)

    def map(
        self, function: Callable[..., T], items: Iterable[tuple[Any, ...]], shared: tuple[Any, ...] = ()
    ) -> Iterator[T]: ...


class _Serial:
    level: int | None = None
    remote = False

    def map(
        self, function: Callable[..., T], items: Iterable[tuple[Any, ...]], shared: tuple[Any, ...] = ()
    ) -> Iterator[T]:
        for item in items:
            yield function(None, *shared, *item)


class Pool:
    remote = False

    def __init__(self, pool: ProcessPoolExecutor, workers: int) -> None:
        self._pool = pool
        self._workers = max(1, workers)
        self._bound = self._workers * _QUEUED_PER_WORKER
        self.level: int | None = worker_log_level()

    def map(
        self, function: Callable[..., T], items: Iterable[tuple[Any, ...]], shared: tuple[Any, ...] = ()
    ) -> Iterator[T]:
        queue = iter(items)
        pending: set[Future[T]] = set()

        def fill() -> None:
            for item in queue:
                pending.add(self._pool.submit(function, self.level, *shared, *item))
                if len(pending) >= self._bound:
                    return

        fill()
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                pending.discard(future)
                yield future.result()
            fill()

    def submit(self, function: Callable[..., T], *args: Any) -> Future[T]:
        """Run ``function(level, *args)`` in a worker; the caller collects the result."""
        return self._pool.submit(function, self.level, *args)

    def start(self, function: Callable[..., object], *args: Any) -> list[Future[object]]:
        """Start every worker process now, each given ``function(level, *args)`` to run (what it
        imports and loads is then ready for the units that follow); the caller collects the results."""
        return [self._pool.submit(function, self.level, *args) for _ in range(self._workers)]


class _Ray:
    remote = True

    def __init__(self, in_flight: int) -> None:
        self._in_flight = in_flight
        self.level: int | None = worker_log_level()

    def map(
        self, function: Callable[..., T], items: Iterable[tuple[Any, ...]], shared: tuple[Any, ...] = ()
    ) -> Iterator[T]:
        level = self.level if self.level is not None else worker_log_level()
        for result, _node in map_on_ray(
            function, items, shared=(level, *shared), in_flight=self._in_flight, log_level=level
        ):
            yield result


# A worker's garbage collector: a young collection every 20,000 net allocations of container
# objects instead of Python's 700, and the oldest generation collected 10x less often. A replay
# allocates millions of short-lived tuples, messages and dicts, almost none in reference cycles,
# and the default thresholds spent 12% of a serial replay's CPU re-scanning the survivors (every
# preset and ablation over ../shared: 99.3 against 112.6 s of CPU, the same JSON). The garbage
# left between collections is bounded by the threshold: a few MB at most.
GC_THRESHOLDS = (20_000, 20, 100)


@contextmanager
def collector(thresholds: tuple[int, int, int]) -> Iterator[None]:
    """The garbage collector's ``thresholds`` while the block runs (the serial backend replays in
    this process as a pool worker does in its own: :data:`GC_THRESHOLDS`), the caller's restored
    after it."""
    before = gc.get_threshold()
    gc.set_threshold(*thresholds)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _worker_start() -> None:
    """A pool worker's initializer: the collector's thresholds (:data:`GC_THRESHOLDS`), and, at
    its exit, once the pool told it to stop (its results sent), its logs and output flushed and
    then no interpreter teardown."""
    gc.set_threshold(*GC_THRESHOLDS)
    atexit.register(_leave)


def _leave() -> None:
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    os._exit(0)


@contextmanager
def open_backend(workers: int, ray: RayAddress | None = None) -> Iterator[Backend]:
    """``ray``: a Ray session (``workers``: the units in flight; 0: twice the cluster's CPUs); else
    ``workers`` > 1 worker processes ("spawn", safe next to the progress bar's thread), else this
    process. On an error the units not started are cancelled."""
    if ray is not None:
        level = worker_log_level()
        with ray_session(ray, log_level=level) as session:
            yield _Ray(workers if workers > 0 else 2 * session.cpus)
        return
    if workers <= 1:
        with collector(GC_THRESHOLDS):
            yield _Serial()
        return
    with ExitStack() as stack:
        stack.enter_context(owned_resource_tracker())
        context = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_worker_start)
        try:
            yield Pool(pool, workers)
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
