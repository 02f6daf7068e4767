"""``tiered-agent run``: wire the workspace tools, AGENTS.md, the model and the display, then run."""

from __future__ import annotations

from pathlib import Path

import anyio
from rich.console import Console

from ._agent import DEFAULT_SYSTEM_PROMPT, Agent, RunLimits
from ._cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from ._display import RunDisplay
from ._errors import AuthenticationError, ConfigurationError, ModelNotFoundError
from ._instructions import build_system_prompt, load_instructions
from ._model import LiteLLMModel
from ._workspace import Workspace, workspace_tools
from .context._config import preset

__all__ = ["run_task"]


def run_task(
    *,
    task: str,
    model: str,
    api_base: str | None,
    workspace: Path,
    trace_dir: Path,
    max_iterations: int,
    token_budget: int | None,
    policy: str,
    summary_model: str | None,
    context_window: int | None,
    allow_write: bool,
    allow_shell: bool,
) -> int:
    """Run one task from the CLI; returns the exit code (0 answered, 1 failed, 2 bad usage)."""
    console = Console(highlight=False, soft_wrap=True)
    err = Console(stderr=True, highlight=False)
    try:
        context = preset(policy)
        if summary_model:
            context = context.replace(summary_model=summary_model)
        ws = Workspace(workspace)
        display = RunDisplay(console)
        agent = Agent(
            LiteLLMModel(model, api_base=api_base, context_window=context_window),
            tools=workspace_tools(ws, allow_write=allow_write, allow_shell=allow_shell),
            context=context,
            system_prompt=build_system_prompt(DEFAULT_SYSTEM_PROMPT, load_instructions(ws.root)),
            limits=RunLimits(max_iterations=max_iterations, token_budget=token_budget),
            trace_dir=trace_dir,
            on_event=display,
        )
        result = anyio.run(agent.run, task, backend="asyncio")
    except ConfigurationError as exc:
        err.print(f"[red]error:[/] {exc}")
        return EXIT_USAGE
    except ModelNotFoundError as exc:
        err.print(f"[red]error:[/] {exc}")
        return EXIT_USAGE
    except AuthenticationError as exc:
        err.print(f"[red]error:[/] {exc}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        err.print("[yellow]cancelled[/]")
        return EXIT_FAILED
    display.final(result)
    return EXIT_OK if result.ok else EXIT_FAILED
