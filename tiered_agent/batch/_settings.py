"""What every task of a batch runs with: ``tiered-agent run``'s options, as one picklable value."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .._defaults import DEFAULT_MAX_RETRIES, DEFAULT_REQUEST_TIMEOUT_S
from .._errors import ConfigurationError
from ..cli._options import RunOptions
from ..context._presets import PRESETS
from ._tasks import BatchTask

__all__ = ["BatchSettings"]


@dataclass(frozen=True, slots=True)
class BatchSettings:
    """``run``'s options for every task (a task's own ``workspace``, ``model`` and ``policy`` win).

    ``trace_dir`` holds one folder per task (named after its id), so a rerun finds the trace of an
    interrupted task and resumes it. Provider keys come from the environment of whichever process
    runs the task, never from here.
    """

    model: str | None = None
    api_base: str | None = None
    workspace: Path = Path(".")
    max_iterations: int = 30
    token_budget: int | None = None
    policy: str = "tiered"
    summary_model: str | None = None
    context_window: int | None = None
    allow_write: bool = False
    allow_shell: bool = False
    shell_env: tuple[str, ...] = ()
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    mcp_config: Path | None = None
    otel: bool = False
    trace_dir: Path = field(default=Path("traces/batch"))

    def __post_init__(self) -> None:
        if self.policy not in PRESETS:
            raise ConfigurationError(
                f"unknown context policy {self.policy!r}; choose one of {', '.join(PRESETS)}"
            )
        if self.max_iterations < 1:
            raise ConfigurationError(f"max_iterations must be at least 1, got {self.max_iterations}")
        if self.token_budget is not None and self.token_budget < 1:
            raise ConfigurationError(f"token_budget must be at least 1, got {self.token_budget}")
        if self.request_timeout <= 0 or self.max_retries < 0:
            raise ConfigurationError("request_timeout must be positive and max_retries at least 0")

    def model_of(self, task: BatchTask) -> str:
        model = task.model or self.model
        if not model:
            raise ConfigurationError(
                f'task {task.id!r} (line {task.line}) has no model: pass --model or give it a "model"'
            )
        return model

    def run_options(self, task: BatchTask, trace_dir: Path) -> RunOptions:
        """The options ``tiered-agent run`` would have for ``task``, its trace in ``trace_dir``."""
        return RunOptions(
            model=self.model_of(task),
            api_base=self.api_base,
            workspace=task.workspace or self.workspace,
            max_iterations=self.max_iterations,
            token_budget=self.token_budget,
            policy=task.policy or self.policy,
            summary_model=self.summary_model,
            context_window=self.context_window,
            allow_write=self.allow_write,
            allow_shell=self.allow_shell,
            shell_env=self.shell_env,
            request_timeout=self.request_timeout,
            max_retries=self.max_retries,
            task=task.task,
            trace_dir=trace_dir,
            mcp_config=self.mcp_config,
            otel=self.otel,
        )
