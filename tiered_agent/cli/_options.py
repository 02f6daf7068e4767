"""What the ``run`` and ``resume`` commands hand to their implementation: the parsed options and the
exit codes. A leaf module (click-free), so the command group and the run wiring share it without an
import circle."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .._defaults import DEFAULT_MAX_RETRIES, DEFAULT_REQUEST_TIMEOUT_S

__all__ = ["CACHE_MODEL_CHOICES", "EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "RunOptions"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2  # a signal ends the CLI with 128 + its number
# tiered_agent._providers.CACHE_MODEL_NAMES, spelled out so --help does not import the providers module
CACHE_MODEL_CHOICES = ("auto", "ideal", "gemini", "openai", "anthropic")


@dataclass(frozen=True, slots=True)
class RunOptions:
    """The options of ``tiered-agent run`` and ``resume``, as click parsed them.

    For ``resume``, ``trace`` is the trace to continue and ``model`` / ``policy`` may be None:
    the run's own, from its ``run_start``.
    """

    model: str | None
    api_base: str | None
    workspace: Path
    max_iterations: int
    token_budget: int | None
    policy: str | None
    summary_model: str | None
    context_window: int | None
    allow_write: bool
    allow_shell: bool
    shell_env: tuple[str, ...] = ()
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    task: str = ""
    trace_dir: Path = Path("traces/runs")
    trace: Path | None = None
    follow_up: str | None = None
    otel: bool = False
    mcp_config: Path | None = None
