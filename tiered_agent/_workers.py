"""What every worker process needs, whoever started it: logging like the CLI, and no stray helper.

A worker may be started by our process pool, by Ray, or by any scheduler a library user brings.
Each unit of work calls :func:`configure_worker_logging` with the level the driver decided
(:func:`worker_log_level`), so no worker ever runs with structlog's defaults (every debug line
printed). :func:`owned_resource_tracker` stops the ``multiprocessing`` resource tracker a process
pool started, so it does not outlive the work that needed it.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing import resource_tracker
from typing import Any

import structlog

__all__ = ["configure_worker_logging", "owned_resource_tracker", "worker_log_level"]

log = structlog.get_logger(__name__)

DEFAULT_LEVEL = logging.WARNING  # the CLI's default --log-level
_configured: list[int] = []  # the level this process was configured at by configure_worker_logging


def worker_log_level() -> int:
    """The level workers should log at: the driver's, once it configured logging (the CLI does),
    else the CLI's default (warning), never structlog's unfiltered default."""
    if not structlog.is_configured():
        return DEFAULT_LEVEL
    try:
        level = int(structlog.get_logger().bind().get_effective_level())
    except (AttributeError, TypeError, ValueError):
        return DEFAULT_LEVEL
    return level if level > logging.NOTSET else DEFAULT_LEVEL


def configure_worker_logging(level: int) -> None:
    """Configure this worker's logging as the CLI would at ``level`` (once per process and level).

    A worker that shares the driver's process (the serial path, an in-process lane) keeps the
    driver's configuration: it is already configured."""
    if _configured and _configured[-1] == level:
        return
    if structlog.is_configured() and not _configured:
        return  # the driver's own process, configured by the CLI or the application
    from ._logging import configure_logging

    configure_logging(level=logging.getLevelName(level).lower())
    _configured.append(level)


@contextmanager
def owned_resource_tracker() -> Iterator[None]:
    """Around a process pool: stop the resource tracker afterwards if the pool started it.

    ``spawn`` pools start ``multiprocessing``'s resource tracker, a helper process that otherwise
    lives until the interpreter exits. One that was already running (someone else's) is left alone.
    """
    tracker: Any = getattr(resource_tracker, "_resource_tracker", None)
    ours = tracker is not None and getattr(tracker, "_fd", None) is None
    try:
        yield
    finally:
        if ours:
            _stop_tracker(tracker)


def _stop_tracker(tracker: Any) -> None:
    gc.collect()  # the pool's queues and their semaphores go first: their finalizers talk to it
    stop = getattr(tracker, "_stop", None)
    if stop is None or getattr(tracker, "_fd", None) is None:
        return
    try:
        stop()
    except (OSError, ChildProcessError, RuntimeError) as exc:
        log.warning("workers.resource_tracker_not_stopped", error=str(exc))
