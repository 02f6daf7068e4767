"""``run_batch``: many tasks, up to N agents at once, one trace and one result line per task.

Rerunning a batch with the same results file continues it: tasks whose last result is final
(answered, or stopped at their iteration or token limit) are skipped without a model call, the
others (interrupted, failed, or never started) run again, resumed from their traces where they
have one. Cancelling the batch (SIGTERM or Ctrl-C in the CLI) stops every running agent the way
``tiered-agent run`` stops: each trace gets its end, each result line is written (``cancelled``),
and the next run resumes them.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from .._cluster import RayAddress
from .._errors import ConfigurationError
from .._messages import Usage
from ._lanes import Lane, open_lanes
from ._results import ResultsFile, TaskResult, read_results
from ._settings import BatchSettings
from ._tasks import BatchTask, load_tasks

__all__ = ["BatchReport", "run_batch"]


@dataclass(frozen=True, slots=True)
class BatchReport:
    """Every task's latest result (in the tasks' order; ``None``: not run yet), and what this run did."""

    results: tuple[tuple[BatchTask, TaskResult | None], ...]
    ran: int = 0  # tasks run (or resumed) by this call
    skipped: int = 0  # tasks whose final result was already in the results file

    @property
    def counts(self) -> dict[str, int]:
        """Tasks per stop reason (``pending``: no result yet)."""
        out: dict[str, int] = {}
        for _, result in self.results:
            reason = result.stop_reason if result is not None else "pending"
            out[reason] = out.get(reason, 0) + 1
        return dict(sorted(out.items()))

    @property
    def usage(self) -> Usage:
        total = Usage()
        for _, result in self.results:
            if result is not None:
                total = total + result.usage
        return total

    @property
    def dollars(self) -> float | None:
        priced = [r.dollars for _, r in self.results if r is not None and r.dollars is not None]
        return sum(priced) if priced else None

    @property
    def savings(self) -> float:
        """Prompt tokens saved against the full history, pooled over the tasks."""
        sent = sum(r.sent_tokens for _, r in self.results if r is not None)
        full = sum(r.full_tokens for _, r in self.results if r is not None)
        return 0.0 if full <= 0 else 1 - sent / full

    @property
    def ok(self) -> bool:
        """Whether every task has answered."""
        return all(r is not None and r.stop_reason == "answered" for _, r in self.results)


@dataclass
class _Progress:
    out: ResultsFile
    latest: dict[str, TaskResult]
    on_result: Callable[[TaskResult], None] | None
    ran: int = 0

    def record(self, result: TaskResult) -> None:
        self.out.append(result)
        self.latest[result.id] = result
        self.ran += 1
        if self.on_result is not None:
            self.on_result(result)


async def run_batch(
    tasks: Sequence[BatchTask] | Path | str,
    results: Path | str,
    settings: BatchSettings,
    *,
    concurrency: int = 8,
    workers: int = 0,
    ray: RayAddress | str | None = None,
    on_result: Callable[[TaskResult], None] | None = None,
) -> BatchReport:
    """Run ``tasks`` (a tasks file, or :class:`BatchTask` values) with up to ``concurrency`` agents at
    once, appending one line per finished task to ``results`` (see the module's docstring).

    ``workers``: event loops to spread the agents over (0: one per 250 concurrent agents, at most
    one per CPU; more than one are worker processes, or Ray actors with ``ray``). ``ray``: ``local``
    or a cluster's address (the ``ray`` extra). ``on_result`` sees each result as it is written.
    Configuration mistakes raise :class:`ConfigurationError` before anything runs.
    """
    chosen = load_tasks(Path(tasks)) if isinstance(tasks, Path | str) else _absolute_tasks(tasks)
    settings = _absolute(settings)
    _check(chosen, settings, concurrency, workers)
    address = RayAddress(ray) if isinstance(ray, str) else ray
    path = Path(results)
    with ResultsFile(path) as out:  # locked and repaired first: then what it holds is read
        earlier = read_results(path)
        todo = [t for t in chosen if not (t.id in earlier and earlier[t.id].final)]
        progress = _Progress(out, dict(earlier), on_result)
        if todo:
            width = min(concurrency, len(todo))
            async with open_lanes(settings, concurrency=width, workers=workers, ray=address) as lanes:
                await _dispatch(todo, lanes, width, progress)
    return BatchReport(
        results=tuple((t, progress.latest.get(t.id)) for t in chosen),
        ran=progress.ran,
        skipped=len(chosen) - len(todo),
    )


async def _dispatch(
    todo: Sequence[BatchTask], lanes: Sequence[Lane], width: int, progress: _Progress
) -> None:
    slots = anyio.Semaphore(width)
    load = dict.fromkeys(range(len(lanes)), 0)

    async def one(index: int, task: BatchTask) -> None:
        lane = lanes[index]
        try:
            try:
                result = await lane.run(task)
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True):
                    progress.record(await lane.abort(task))
                raise
            progress.record(result)
        finally:
            load[index] -= 1
            slots.release()

    async with anyio.create_task_group() as group:
        for task in todo:
            await slots.acquire()
            index = min(load, key=lambda i: (load[i] / lanes[i].capacity, i))
            load[index] += 1
            group.start_soon(one, index, task)


def _check(tasks: Sequence[BatchTask], settings: BatchSettings, concurrency: int, workers: int) -> None:
    if not tasks:
        raise ConfigurationError("the batch has no tasks")
    if concurrency < 1 or workers < 0:
        raise ConfigurationError(
            f"concurrency must be at least 1 and workers at least 0, got {concurrency} and {workers}"
        )
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        repeated = next(i for i in ids if ids.count(i) > 1)
        raise ConfigurationError(f"task id {repeated!r} is given more than once")
    for task in tasks:
        settings.model_of(task)
        workspace = task.workspace or settings.workspace
        if not workspace.is_dir():
            raise ConfigurationError(f"the workspace of task {task.id!r} is not a folder: {workspace}")
    if settings.otel and importlib.util.find_spec("opentelemetry.sdk") is None:
        from ..telemetry._environment import MISSING_EXTRA

        raise ConfigurationError(MISSING_EXTRA)


def _absolute_tasks(tasks: Sequence[BatchTask]) -> tuple[BatchTask, ...]:
    return tuple(
        dataclasses.replace(t, workspace=t.workspace.expanduser().resolve()) if t.workspace else t
        for t in tasks
    )


def _absolute(settings: BatchSettings) -> BatchSettings:
    """Paths made absolute here, so worker processes and Ray actors read the same files."""
    return dataclasses.replace(
        settings,
        workspace=settings.workspace.expanduser().resolve(),
        trace_dir=settings.trace_dir.expanduser().resolve(),
        mcp_config=settings.mcp_config.expanduser().resolve() if settings.mcp_config else None,
    )
