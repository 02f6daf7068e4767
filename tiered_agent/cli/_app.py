"""The ``tiered-agent`` command line. Importing this module must stay cheap: no litellm, no rich."""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from .._defaults import DEFAULT_MAX_RETRIES, DEFAULT_REQUEST_TIMEOUT_S
from ._options import RunOptions

__all__ = ["cli", "main"]

LOG_LEVELS = ("debug", "info", "warning", "error")

F = TypeVar("F", bound=Callable[..., Any])


class PresetChoice(click.Choice[str]):
    """The context presets' names as a :class:`click.Choice`, read from the presets when a command
    parses or prints its options: importing a command module loads no pipeline (the presets import
    every step)."""

    def __init__(self) -> None:
        super().__init__(())

    @property  # type: ignore[override, unused-ignore]
    def choices(self) -> tuple[str, ...]:
        from ..context._presets import PRESETS  # the pipeline, only when a command needs it

        return tuple(PRESETS)

    @choices.setter
    def choices(self, value: tuple[str, ...]) -> None:
        """click.Choice sets the empty tuple it was given; the names always come from the presets."""


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

    def invoke(self, ctx: click.Context) -> Any:
        """The command, stopped by a signal or a reader gone with 128 + N (``_process.stops``),
        before click would say ``Aborted!`` with 1."""
        from ._process import stops

        with stops():
            return super().invoke(ctx)


@click.group(
    cls=LazyGroup,
    lazy={
        "batch": "tiered_agent.cli._batch:batch",
        "bench": "tiered_agent.cli._bench:bench",
        "trace": "tiered_agent.cli._trace:trace",
    },
)
@click.version_option(package_name="tiered-agent")
@click.option("--log-json", is_flag=True, help="Log as JSON lines on stderr.")
@click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS, case_sensitive=False),
    default="warning",
    show_default=True,
    help="How much to log on stderr.",
)
def cli(log_json: bool, log_level: str) -> None:
    """Run autonomous, tool-using LLM tasks with a lean, tiered context."""
    from .._logging import configure_logging

    configure_logging(json=log_json, level=log_level)


def agent_options(*, resume: bool) -> Callable[[F], F]:
    """The options ``run`` and ``resume`` share: model, endpoint, policy, limits, tools, timeouts.

    For ``resume`` the model and the policy default to the run's own (its ``run_start``).
    """
    model_help = "litellm model string, e.g. openai/gpt-4o-mini."
    options = [
        click.option(
            "--model",
            envvar=None if resume else "TIERED_AGENT_MODEL",
            help="litellm model (default: the run's own)." if resume else model_help,
        ),
        click.option("--api-base", help="Base URL of an OpenAI-compatible or self-hosted endpoint."),
        click.option(
            "--workspace",
            type=click.Path(file_okay=False, path_type=Path),
            default=Path("."),
            show_default=True,
            help="Root directory the tools may touch.",
        ),
        click.option("--max-iterations", type=click.IntRange(min=1), default=30, show_default=True),
        click.option(
            "--token-budget", type=click.IntRange(min=1), help="Stop before exceeding this many tokens."
        ),
        click.option(
            "--policy",
            type=PresetChoice(),
            default=None if resume else "tiered",
            show_default=not resume,
            help="Context policy (default: the run's own)." if resume else "Context policy.",
        ),
        click.option(
            "--summary-model",
            help="litellm model that writes the rolling summaries (default: the run's own --model, which "
            "reads the agent's cached prompt); 'digest' for the deterministic working memory "
            "(no model calls).",
        ),
        click.option(
            "--context-window",
            type=click.IntRange(min=1),
            help="The model's context window in tokens, for models litellm does not know (self-hosted).",
        ),
        click.option("--allow-write", is_flag=True, help="Enable write_file and edit_file."),
        click.option("--allow-shell", is_flag=True, help="Enable run_shell."),
        click.option(
            "--shell-env",
            multiple=True,
            metavar="NAME",
            help="Pass this environment variable (or pattern, e.g. 'AWS_*') to run_shell; repeatable. "
            "By default run_shell sees only PATH, HOME, the locale and the like.",
        ),
        click.option(
            "--request-timeout",
            type=click.FloatRange(min=0, min_open=True),
            default=DEFAULT_REQUEST_TIMEOUT_S,
            show_default=True,
            metavar="S",
            help="Seconds before a model request is abandoned (and retried).",
        ),
        click.option(
            "--max-retries",
            type=click.IntRange(min=0),
            default=DEFAULT_MAX_RETRIES,
            show_default=True,
            metavar="N",
            help="Retries of a model request after a rate limit, 5xx, timeout or refused connection.",
        ),
        click.option(
            "--mcp-config",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            help='MCP servers to start for the run: a {"mcpServers": ...} JSON file '
            "(Claude Desktop, Cursor).",
        ),
        click.option(
            "--otel",
            is_flag=True,
            help="Export OpenTelemetry spans and metrics over OTLP/HTTP (standard OTEL_* variables; on by "
            "itself when OTEL_EXPORTER_OTLP_ENDPOINT is set). Needs the otel extra.",
        ),
    ]

    def decorate(command: F) -> F:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


@cli.command()
@click.argument("task")
@agent_options(resume=False)
@click.option(
    "--trace-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("traces/runs"),
    show_default=True,
    help="Where the JSONL trace is written.",
)
def run(**options: Any) -> None:
    """Run TASK with a model and the workspace tools; print progress, the answer and the trace path."""
    settings = RunOptions(**options)
    _check_text(settings)
    if not settings.model:
        raise click.UsageError(
            "No model given: pass --model (e.g. openai/gpt-4o-mini) or set TIERED_AGENT_MODEL."
        )
    _check_workspace(settings)
    _check_trace_dir(settings.trace_dir)
    from ._run import run_task  # imports litellm's users: only after the cheap checks

    sys.exit(run_task(settings))


@cli.command()
@click.argument("trace", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--follow-up", metavar="TEXT", help="A new user message (needed if the run had answered).")
@agent_options(resume=True)
def resume(**options: Any) -> None:
    """Continue the run recorded in TRACE (interrupted, killed or finished), appending to it.

    A torn last line (a crash mid-write) is moved to TRACE.torn first, never dropped.
    """
    settings = RunOptions(**options)
    _check_text(settings)
    _check_workspace(settings)
    assert settings.trace is not None
    _check_trace_file(settings.trace)
    from ._run import resume_task

    sys.exit(resume_task(settings))


def _check_text(settings: RunOptions) -> None:
    """A value that is not UTF-8 (a shell's $'\\xff') cannot reach the model, the trace or the
    terminal intact: one sentence, before anything is written."""
    from .._text import undecodable

    values = {
        "TASK": settings.task,
        "--follow-up": settings.follow_up,
        "--workspace": settings.workspace,
        "--trace-dir": settings.trace_dir,
        "TRACE": settings.trace,
        "--model": settings.model,
        "--api-base": settings.api_base,
        "--summary-model": settings.summary_model,
    }
    for name, value in values.items():
        problem = None if value is None else undecodable(str(value))
        if problem is not None:
            raise click.UsageError(f"{name} is not valid UTF-8 text ({problem}); pass it as UTF-8.")


def _check_workspace(settings: RunOptions) -> None:
    if not settings.workspace.is_dir():
        raise click.UsageError(f"Workspace {settings.workspace} is not a directory.")


def _check_trace_dir(path: Path) -> None:
    """Fail in one sentence, before the slow imports, when traces cannot be written to ``path``."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise click.BadParameter(
            f"cannot write traces to {path}: {exc.strerror or exc}.", param_hint="'--trace-dir'"
        ) from None


def _check_trace_file(path: Path) -> None:
    from .._files import NotRegularFile, open_regular_for_appending

    try:
        with open_regular_for_appending(path):  # a FIFO would block the open: refused first
            pass
        with tempfile.TemporaryFile(dir=path.parent):  # room for TRACE.torn and TRACE.outputs
            pass
    except NotRegularFile as exc:
        raise click.BadParameter(f"{exc}, so it cannot be a trace.", param_hint="'TRACE'") from None
    except OSError as exc:
        raise click.BadParameter(
            f"cannot append to {path}: {exc.strerror or exc}.", param_hint="'TRACE'"
        ) from None


def main() -> None:
    from ._process import prepare_process

    prepare_process()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    cli(prog_name="tiered-agent")
