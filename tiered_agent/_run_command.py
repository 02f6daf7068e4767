"""``tiered-agent run``: wire the workspace tools, AGENTS.md, the model and the display, then run."""

from __future__ import annotations

import anyio
from rich.console import Console
from rich.markup import escape

from ._agent import DEFAULT_SYSTEM_PROMPT, Agent, RunLimits
from ._cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, RunOptions
from ._display import RunDisplay
from ._errors import AuthenticationError, ConfigurationError, MCPServerError, ModelNotFoundError
from ._instructions import build_system_prompt, load_instructions
from ._model import LiteLLMModel
from ._otel_export import cli_telemetry
from ._telemetry import Telemetry
from ._workspace import Workspace, workspace_tools
from .context._policy import Policy
from .context._presets import preset
from .context._summarizer import LLMSummarizer
from .mcp._config import load_mcp_config

__all__ = ["DIGEST", "run_task"]

DIGEST = "digest"  # --summary-model value for the deterministic working memory


def run_task(options: RunOptions) -> int:
    """Run one task from the CLI; returns the exit code (0 answered, 1 failed, 2 bad usage).

    With ``--otel`` or an OTLP endpoint in the environment, spans are exported, and flushed
    before this returns.
    """
    try:
        exporting = cli_telemetry(options.otel)
    except ConfigurationError as exc:
        Console(stderr=True, highlight=False, soft_wrap=True).print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_USAGE
    try:
        return _run_task(options, exporting.telemetry if exporting else None)
    finally:
        if exporting is not None:
            exporting.shutdown()


def _run_task(options: RunOptions, telemetry: Telemetry | None) -> int:
    console = Console(highlight=False, soft_wrap=True)
    err = Console(stderr=True, highlight=False)
    try:
        if not options.model:
            raise ConfigurationError("no model given: pass --model or set TIERED_AGENT_MODEL")
        context, summarizer = _summaries(options, preset(options.policy))
        ws = Workspace(options.workspace)
        display = RunDisplay(console)
        agent = Agent(
            LiteLLMModel(options.model, api_base=options.api_base, context_window=options.context_window),
            tools=workspace_tools(ws, allow_write=options.allow_write, allow_shell=options.allow_shell),
            context=context,
            summarizer=summarizer,
            system_prompt=build_system_prompt(DEFAULT_SYSTEM_PROMPT, load_instructions(ws.root)),
            limits=RunLimits(max_iterations=options.max_iterations, token_budget=options.token_budget),
            trace_dir=options.trace_dir,
            on_event=display,
            telemetry=telemetry,
            mcp_servers=load_mcp_config(options.mcp_config) if options.mcp_config else (),
        )
        result = anyio.run(agent.run, options.task, backend="asyncio")
    except (ConfigurationError, ModelNotFoundError) as exc:
        err.print(f"[red]error:[/] {exc}")
        return EXIT_USAGE
    except MCPServerError as exc:  # may quote the server's stderr: printed without markup
        err.print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_FAILED
    except AuthenticationError as exc:
        err.print(f"[red]error:[/] {exc}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        err.print("[yellow]cancelled[/]")
        return EXIT_FAILED
    display.final(result)
    return EXIT_OK if result.ok else EXIT_FAILED


def _summaries(options: RunOptions, context: Policy) -> tuple[Policy, LLMSummarizer | None]:
    """Who writes the run's summaries: the run's own model unless ``--summary-model`` says otherwise
    (``digest``: the deterministic working memory). The run's model is reached through its
    ``--api-base``, and rides the agent's prompt cache; another model gets no ``--api-base``."""
    name = options.summary_model or options.model
    if not name or name == DIGEST:
        return context.replace(summary_model=None), None
    api_base = options.api_base if name == options.model else None
    summarizer = LLMSummarizer(
        name, api_base=api_base, max_tokens=context.summary_max_tokens, timeout_s=context.summary_timeout_s
    )
    return context.replace(summary_model=name), summarizer
