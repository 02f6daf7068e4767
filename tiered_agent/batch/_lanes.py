"""Where a batch's agents run: lanes, each an event loop serving many agents at once.

One event loop serves a few hundred concurrent agents well (see ``_capacity.py``). A batch gets
one lane per ``AGENTS_PER_LANE`` agents it runs at once: one lane is the driver's own loop, more
are worker processes (one loop each), and with ``--ray`` each lane is a Ray actor. Every lane runs
its tasks with the same :class:`~tiered_agent.batch._runner.TaskRunner`.

A lane's :meth:`Lane.run` returns the task's result; when the caller is cancelled (the batch is
stopping) it calls :meth:`Lane.abort`, shielded, which stops the task where it runs and returns
its result once its trace has its end.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, Protocol

import anyio
import structlog

from .._cluster import RayAddress
from .._litellm import settle_heap_on_import
from .._workers import configure_worker_logging, owned_resource_tracker, worker_log_level
from ._capacity import ABORT_WAIT_S, lane_count
from ._results import TaskResult
from ._runner import TaskRunner
from ._settings import BatchSettings
from ._tasks import BatchTask

__all__ = ["Lane", "LocalLane", "ProcessLane", "open_lanes", "serve_lane"]

log = structlog.get_logger(__name__)


class Lane(Protocol):
    """An event loop that runs tasks (see the module's docstring)."""

    name: str
    capacity: int

    async def run(self, task: BatchTask) -> TaskResult: ...

    async def abort(self, task: BatchTask) -> TaskResult: ...


@asynccontextmanager
async def open_lanes(
    settings: BatchSettings, *, concurrency: int, workers: int = 0, ray: RayAddress | None = None
) -> AsyncIterator[Sequence[Lane]]:
    """The lanes of a batch, open for the block; closed (workers stopped) after it."""
    level = worker_log_level()
    if ray is not None:
        from ._ray import ray_lanes

        async with ray_lanes(ray, settings, concurrency=concurrency, workers=workers, level=level) as actors:
            yield actors
        return
    count = lane_count(concurrency, workers, os.cpu_count() or 1)
    if count == 1:
        async with TaskRunner(settings) as runner:
            yield [LocalLane("local", concurrency, runner)]
        return
    capacity = math.ceil(concurrency / count)
    with owned_resource_tracker():
        async with AsyncExitStack() as stack, anyio.create_task_group() as group:
            lanes = [
                stack.enter_context(ProcessLane.start(i, capacity, settings, level)) for i in range(count)
            ]
            for lane in lanes:
                group.start_soon(lane.read)
            try:
                yield lanes
            finally:
                with anyio.CancelScope(shield=True):
                    async with anyio.create_task_group() as closing:
                        for lane in lanes:
                            closing.start_soon(lane.close)


@dataclass
class LocalLane:
    """The driver's own event loop."""

    name: str
    capacity: int
    runner: TaskRunner

    async def run(self, task: BatchTask) -> TaskResult:
        return await self.runner.run(task)

    async def abort(self, task: BatchTask) -> TaskResult:
        # The task ran in the caller's own cancelled scope: the agent has recorded its end.
        return self.runner.settle(task, cancelled=True)


# ------------------------------------------------------------------ worker processes
@dataclass
class _Waiting:
    event: anyio.Event = field(default_factory=anyio.Event)
    result: TaskResult | None = None


class ProcessLane:
    """A worker process with its own event loop, talking to the driver over a pipe.

    Driver to worker: ``("run", task)``, ``("cancel", id)``, ``("close", None)``; worker to
    driver: ``(id, result)``. The worker ignores SIGINT (Ctrl-C reaches the whole process group:
    the driver decides); SIGTERM, or the driver vanishing, stops its tasks, which record their end.
    """

    def __init__(self, name: str, capacity: int, process: Any, connection: Connection) -> None:
        self.name = name
        self.capacity = capacity
        self._process = process
        self._connection = connection
        self._waiting: dict[str, _Waiting] = {}

    @classmethod
    def start(cls, index: int, capacity: int, settings: BatchSettings, level: int) -> _Started:
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe(duplex=True)
        process = context.Process(
            target=serve_lane, args=(theirs, settings, level), name=f"tiered-agent-batch-{index}"
        )
        process.start()
        theirs.close()
        return _Started(cls(f"process-{index}", capacity, process, ours))

    async def read(self) -> None:
        """Deliver the worker's results until it closes the pipe; then fail what still waits.

        Shielded: a stopping batch still needs the results of the tasks it stops."""
        with anyio.CancelScope(shield=True):
            await self._read()

    async def _read(self) -> None:
        while (message := await _next(self._connection)) is not None:
            task_id, result = message
            waiting = self._waiting.get(task_id)
            if waiting is not None:
                waiting.result = result
                waiting.event.set()
        await anyio.to_thread.run_sync(self._process.join, 5.0, abandon_on_cancel=True)
        code = self._process.exitcode
        for task_id, waiting in self._waiting.items():
            if waiting.result is None:
                error = f"its worker process ended (exit code {code}) before the task did"
                waiting.result = TaskResult(task_id, "error", error=error)
                waiting.event.set()

    async def run(self, task: BatchTask) -> TaskResult:
        waiting = self._waiting.setdefault(task.id, _Waiting())
        try:
            self._connection.send(("run", task))
            await waiting.event.wait()
        except (OSError, ValueError) as exc:  # the pipe is closed: the worker is gone
            return TaskResult(task.id, "error", error=f"its worker process is gone ({exc})")
        finally:
            if waiting.event.is_set():
                self._waiting.pop(task.id, None)
        assert waiting.result is not None
        return waiting.result

    async def abort(self, task: BatchTask) -> TaskResult:
        waiting = self._waiting.get(task.id)
        if waiting is None:
            return TaskResult(task.id, "cancelled")
        _send(self._connection, ("cancel", task.id))  # a worker that is gone: read() fails the task
        with anyio.move_on_after(ABORT_WAIT_S):
            await waiting.event.wait()
        self._waiting.pop(task.id, None)
        if waiting.result is None:
            error = f"its worker did not stop it within {ABORT_WAIT_S:.0f} s"
            return TaskResult(task.id, "cancelled", error=error)
        return waiting.result

    async def close(self) -> None:
        _send(self._connection, ("close", None))
        await anyio.to_thread.run_sync(self._process.join, ABORT_WAIT_S, abandon_on_cancel=True)
        if self._process.is_alive():
            log.warning("batch.worker_killed", lane=self.name)
            self._process.kill()
            await anyio.to_thread.run_sync(self._process.join, 5.0, abandon_on_cancel=True)
        self._connection.close()


class _Started:
    """A started process lane as a context manager: killed if the batch leaves without closing it."""

    def __init__(self, lane: ProcessLane) -> None:
        self.lane = lane

    def __enter__(self) -> ProcessLane:
        return self.lane

    def __exit__(self, *exc: object) -> None:
        process = self.lane._process
        if process.is_alive():
            process.kill()
            process.join(5.0)


def _send(connection: Connection, message: tuple[str, Any]) -> bool:
    """Send ``message``; False when the pipe is closed (the worker is gone: its reader says so)."""
    try:
        connection.send(message)
    except (OSError, ValueError):
        return False
    return True


def _receive(connection: Connection) -> Any:
    try:
        return connection.recv()
    except (EOFError, OSError):
        return None


def serve_lane(connection: Connection, settings: BatchSettings, level: int) -> None:
    """A worker process: run what the driver sends until it says close (or goes away)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    configure_worker_logging(level)
    settle_heap_on_import()  # our process: litellm's objects need no garbage collection
    anyio.run(_serve, connection, settings, backend="asyncio")


async def _serve(connection: Connection, settings: BatchSettings) -> None:
    async with TaskRunner(settings) as runner, anyio.create_task_group() as group:
        group.start_soon(_stop_on_sigterm, runner)
        while (message := await _next(connection)) is not None:
            kind, payload = message
            if kind == "run":
                group.start_soon(_run_one, runner, connection, payload)
            elif kind == "cancel":
                runner.cancel(payload)
            elif kind == "close":
                break
        # closed (every result was delivered) or the driver is gone: stop what runs, which records
        # its end in its trace, and the SIGTERM watcher
        runner.stop()
        group.cancel_scope.cancel()


async def _next(connection: Connection) -> Any:
    return await anyio.to_thread.run_sync(_receive, connection, abandon_on_cancel=True)


async def _run_one(runner: TaskRunner, connection: Connection, task: BatchTask) -> None:
    result = await runner.run(task)
    try:
        connection.send((task.id, result))
    except (OSError, ValueError):
        log.warning("batch.result_undelivered", id=task.id, stop_reason=result.stop_reason)


async def _stop_on_sigterm(runner: TaskRunner) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM) as signals:
        async for _ in signals:
            runner.stop()
