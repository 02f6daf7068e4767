"""A batch on Ray: each lane is an async Ray actor running a :class:`TaskRunner` on its event loop.

Imported only with ``--ray``. The actors are spread over the cluster's nodes (one CPU each). A task
writes its trace where its actor runs, under the batch's trace folder: on a cluster of several
machines that folder (and the workspaces) must be on storage every node sees at the same path, so
that a rerun, on whichever node, finds the trace to resume. The results file is written by the
driver alone.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import structlog

from .._cluster import RayAddress, import_ray, node_id, ray_session
from .._litellm import settle_heap_on_import
from .._workers import configure_worker_logging
from ._capacity import ABORT_WAIT_S, lane_count
from ._results import TaskResult
from ._runner import TaskRunner
from ._settings import BatchSettings
from ._tasks import BatchTask

__all__ = ["BatchActor", "RayLane", "ray_lanes"]

log = structlog.get_logger(__name__)


class BatchActor:
    """The body of a Ray actor: a :class:`TaskRunner` on the actor's event loop."""

    def __init__(self, settings: BatchSettings, level: int) -> None:
        configure_worker_logging(level)
        settle_heap_on_import()  # the actor's process is ours: litellm's objects need no collection
        self.runner = TaskRunner(settings).open()

    async def run(self, task: BatchTask) -> TaskResult:
        return await self.runner.run(task)

    async def cancel(self, task_id: str) -> None:
        self.runner.cancel(task_id)

    async def close(self) -> str:
        self.runner.close()
        return node_id()


class RayLane:
    """One actor, seen from the driver."""

    def __init__(self, name: str, capacity: int, actor: Any) -> None:
        self.name = name
        self.capacity = capacity
        self._actor = actor
        self._refs: dict[str, Any] = {}

    async def run(self, task: BatchTask) -> TaskResult:
        ref = self._actor.run.remote(task)
        self._refs[task.id] = ref
        result = await _result(task, ref)
        self._refs.pop(task.id, None)
        return result

    async def abort(self, task: BatchTask) -> TaskResult:
        ref = self._refs.pop(task.id, None)
        if ref is None:
            return TaskResult(task.id, "cancelled")
        self._actor.cancel.remote(task.id)
        with anyio.move_on_after(ABORT_WAIT_S):
            return await _result(task, ref)
        return TaskResult(
            task.id, "cancelled", error=f"its actor did not stop it within {ABORT_WAIT_S:.0f} s"
        )

    async def close(self) -> str | None:
        try:
            node: str = await self._actor.close.remote()
        except Exception as exc:  # the actor is gone already: nothing to close
            log.warning("batch.ray_actor_lost", lane=self.name, error=str(exc))
            return None
        return node


async def _result(task: BatchTask, ref: Any) -> TaskResult:
    ray = import_ray()
    try:
        result: TaskResult = await ref
    except ray.exceptions.RayError as exc:  # the actor or its node died; the runner itself never raises
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return TaskResult(task.id, "error", error=f"Ray lost the task: {message}")
    return result


@asynccontextmanager
async def ray_lanes(
    address: RayAddress, settings: BatchSettings, *, concurrency: int, workers: int, level: int
) -> AsyncIterator[list[RayLane]]:
    """One actor per lane, spread over the cluster, for the block; closed and killed after it."""
    ray = import_ray()
    with ray_session(address, log_level=level) as session:
        count = lane_count(concurrency, workers, session.cpus)
        capacity = math.ceil(concurrency / count)
        remote = ray.remote(BatchActor).options(
            num_cpus=1, max_concurrency=capacity + 8, scheduling_strategy="SPREAD"
        )
        lanes = [RayLane(f"ray-{i}", capacity, remote.remote(settings, level)) for i in range(count)]
        try:
            yield lanes
        finally:
            with anyio.CancelScope(shield=True):
                nodes = [await lane.close() for lane in lanes]
                for lane in lanes:
                    ray.kill(lane._actor)
            log.info("batch.ray_lanes_closed", lanes=count, nodes=sorted({n for n in nodes if n}))
