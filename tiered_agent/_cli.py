"""The ``tiered-agent`` command line. Importing this module must stay cheap: no litellm, no rich."""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from .context._presets import PRESETS  # plain frozen dataclasses: cheap to import

__all__ = ["cli", "main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


@dataclass(frozen=True, slots=True)
class RunOptions:
    """The options of ``tiered-agent run``, as click parsed them."""

    task: str
    model: str | None
    api_base: str | None
    workspace: Path
    trace_dir: Path
    max_iterations: int
    token_budget: int | None
    policy: str
    summary_model: str | None
    context_window: int | None
    allow_write: bool
    allow_shell: bool
    otel: bool = False
    mcp_config: Path | None = None


class LazyGroup(click.Group):
    """A group whose subcommands are imported only when used (keeps ``--help`` fast)."""

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy or {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy:
            module_name, attr = self.lazy[name].split(":")
            command = getattr(importlib.import_module(module_name), attr)
            assert isinstance(command, click.Command)
            return command
        return super().get_command(ctx, name)


@click.group(
    cls=LazyGroup,
    lazy={"bench": "tiered_agent.bench._command:bench", "trace": "tiered_agent.inspect._command:trace"},
)
@click.version_option(package_name="tiered-agent")
@click.option("--log-json", is_flag=True, help="Log as JSON lines on stderr.")
@click.option("--log-level", default="warning", show_default=True, help="debug, info, warning or error.")
def cli(log_json: bool, log_level: str) -> None:
    """Run autonomous, tool-using LLM tasks with a lean, tiered context."""
    from ._logging import configure_logging

    configure_logging(json=log_json, level=log_level)


@cli.command()
@click.argument("task")
@click.option("--model", envvar="TIERED_AGENT_MODEL", help="litellm model string, e.g. openai/gpt-4o-mini.")
@click.option("--api-base", help="Base URL of an OpenAI-compatible or self-hosted endpoint.")
@click.option(
    "--workspace",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Root directory the tools may touch.",
)
@click.option(
    "--trace-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("traces/runs"),
    show_default=True,
    help="Where the JSONL trace is written.",
)
@click.option("--max-iterations", type=click.IntRange(min=1), default=30, show_default=True)
@click.option("--token-budget", type=click.IntRange(min=1), help="Stop before exceeding this many tokens.")
@click.option(
    "--policy", type=click.Choice(list(PRESETS)), default="tiered", show_default=True, help="Context policy."
)
@click.option(
    "--summary-model",
    help="litellm model that writes the rolling summaries (default: the run's own --model, which reads "
    "the agent's cached prompt); 'digest' for the deterministic working memory (no model calls).",
)
@click.option(
    "--context-window",
    type=click.IntRange(min=1),
    help="The model's context window in tokens, for models litellm does not know (self-hosted).",
)
@click.option("--allow-write", is_flag=True, help="Enable write_file and edit_file.")
@click.option("--allow-shell", is_flag=True, help="Enable run_shell.")
@click.option(
    "--otel",
    is_flag=True,
    help="Export OpenTelemetry spans over OTLP/HTTP (standard OTEL_* variables; on by itself when "
    "OTEL_EXPORTER_OTLP_ENDPOINT is set). Needs the otel extra.",
)
@click.option(
    "--mcp-config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help='MCP servers to start for the run: a {"mcpServers": ...} JSON file (Claude Desktop, Cursor).',
)
def run(**options: Any) -> None:
    """Run TASK with a model and the workspace tools; print progress, the answer and the trace path."""
    settings = RunOptions(**options)
    if not settings.model:
        raise click.UsageError(
            "No model given: pass --model (e.g. openai/gpt-4o-mini) or set TIERED_AGENT_MODEL."
        )
    if not settings.workspace.is_dir():
        raise click.UsageError(f"Workspace {settings.workspace} is not a directory.")
    from ._run_command import run_task

    sys.exit(run_task(settings))


def main() -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    cli(prog_name="tiered-agent")
