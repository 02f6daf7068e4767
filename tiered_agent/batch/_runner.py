"""Run batch tasks in this process's event loop: many agents at once, each in its own trace folder.

The same :class:`TaskRunner` serves the driver's own event loop, each worker process and each Ray
actor. A task whose trace shows it finished is recorded from the trace (no model call); one that
was interrupted is resumed from its trace (``Agent.resume``, the code ``tiered-agent resume``
runs); any other starts afresh. The agent is built exactly as ``tiered-agent run`` builds it.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import structlog

from .._errors import TieredAgentError
from .._trace import Event, redact
from ..cli._run import _agent as build_agent
from ..context._presets import preset
from ..telemetry._pipelines import CliTelemetry, cli_telemetry
from ._results import FINAL, TaskResult
from ._settings import BatchSettings
from ._tasks import BatchTask
from ._traces import TaskTrace, latest_trace, read_task_trace, task_folder

__all__ = ["TaskRunner"]

log = structlog.get_logger(__name__)


def _ignore(event: Event) -> None:
    return None


class TaskRunner:
    """Runs tasks concurrently in the current event loop; :meth:`cancel` stops one, :meth:`stop` all.

    Use as an async context manager: it sets up OpenTelemetry export when the settings ask for it
    (and flushes it at the end), once per process.
    """

    def __init__(self, settings: BatchSettings) -> None:
        self.settings = settings
        self._scopes: dict[str, anyio.CancelScope] = {}
        self._stopped = False
        self._exporting: CliTelemetry | None = None

    def open(self) -> TaskRunner:
        self._exporting = cli_telemetry(self.settings.otel)
        return self

    def close(self) -> None:
        self.stop()
        if self._exporting is not None:
            self._exporting.shutdown()
            self._exporting = None

    async def __aenter__(self) -> TaskRunner:
        return self.open()

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def cancel(self, task_id: str) -> None:
        """Cancel the task ``task_id`` if it runs here: its trace gets its end, its result says so."""
        scope = self._scopes.get(task_id)
        if scope is not None:
            scope.cancel()

    def stop(self) -> None:
        """Cancel every running task; tasks given afterwards are not started (``cancelled``)."""
        self._stopped = True
        for scope in list(self._scopes.values()):
            scope.cancel()

    async def run(self, task: BatchTask) -> TaskResult:
        """Run (or resume, or read back) one task; never raises for the task's own failures."""
        folder = task_folder(self.settings.trace_dir, task.id)
        model, policy = self.settings.model_of(task), task.policy or self.settings.policy
        before = read_task_trace(latest_trace(folder))
        if before is not None and before.outcome in FINAL:
            return before.result(task, model=model, policy=policy)  # finished before: no model call
        error: str | None = None
        with anyio.CancelScope() as scope:
            if self._stopped:
                scope.cancel()
            self._scopes[task.id] = scope
            try:
                await self._execute(task, folder, before)
            except TieredAgentError as exc:  # the task's configuration or provider: its result says so
                error = f"{type(exc).__name__}: {exc}"
            except Exception as exc:  # anything else a task raised must not end the others
                log.exception("batch.task_crashed", id=task.id)
                error = f"{type(exc).__name__}: {exc}"
            finally:
                self._scopes.pop(task.id, None)
        return self.settle(task, error=error, cancelled=scope.cancelled_caught)

    def settle(self, task: BatchTask, *, error: str | None = None, cancelled: bool = False) -> TaskResult:
        """The result of a task that ran here, read from its trace."""
        model, policy = self.settings.model_of(task), task.policy or self.settings.policy
        after = read_task_trace(latest_trace(task_folder(self.settings.trace_dir, task.id)))
        if error is not None:
            log.warning("batch.task_failed", id=task.id, error=redact(error))
        if after is None:  # it failed (or was stopped) before its trace was written
            reason = "cancelled" if cancelled and error is None else "error"
            return TaskResult(
                id=task.id,
                stop_reason=reason,
                error=redact(error) if error else None,
                model=model,
                policy=policy,
                finished_at=time.time(),
            )
        result = after.result(task, model=model, policy=policy)
        if error is not None and result.error is None:
            return _with_error(result, redact(error))
        return result

    async def _execute(self, task: BatchTask, folder: Path, before: TaskTrace | None) -> None:
        options = self.settings.run_options(task, folder)
        assert options.model is not None
        agent = build_agent(
            options,
            options.model,
            options.api_base,
            preset(options.policy or self.settings.policy),
            _ignore,
            telemetry=self._exporting.telemetry if self._exporting else None,
        )
        if before is not None and before.resumable:
            await agent.resume(before.path)
        else:
            await agent.run(task.task)


def _with_error(result: TaskResult, error: str) -> TaskResult:
    values: dict[str, Any] = {"error": error}
    if result.stop_reason not in ("error", "cancelled"):
        values["stop_reason"] = "error"
    return dataclasses.replace(result, **values)
