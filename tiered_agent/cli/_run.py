"""``tiered-agent run`` and ``resume``: wire the tools, AGENTS.md, the model and the display, then run.

SIGTERM, SIGINT and SIGHUP cancel the run the same way: the trace gets the paid reply, the
results of the step that was running (``interrupted`` for calls that had not returned), and its
``run_end``; the shell's process group is killed. The exit code is then 128 + the signal number.
"""

from __future__ import annotations

import dataclasses
import functools
import signal
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
from rich.console import Console
from rich.markup import escape

from .._agent import DEFAULT_SYSTEM_PROMPT, Agent, RunLimits
from .._endpoint import resume_endpoint
from .._errors import (
    AuthenticationError,
    ConfigurationError,
    MCPServerError,
    ModelNotFoundError,
    TraceFormatError,
    TraceWriteError,
)
from .._instructions import build_system_prompt, load_instructions
from .._litellm import settle_heap_on_import
from .._model import LiteLLMModel, RetryPolicy
from .._result import RunResult
from .._terminal import TerminalConsole
from .._trace import Event, RunStarted, redact, scan_trace
from .._workspace import Workspace, workspace_tools
from ..context import LLMSummarizer
from ..context._policy import Policy
from ..context._presets import PRESETS, preset
from ..mcp._config import load_mcp_config
from ..telemetry import Telemetry
from ..telemetry._pipelines import cli_telemetry
from ._display import RunDisplay
from ._options import EXIT_FAILED, EXIT_OK, EXIT_USAGE, RunOptions
from ._process import Interrupted

__all__ = ["DIGEST", "resume_task", "run_task"]

DIGEST = "digest"  # --summary-model value for the deterministic working memory

_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
T = TypeVar("T")
_RUN_TOOLS = {"allow_write": "write_file", "allow_shell": "run_shell"}


@dataclass
class _Launch:
    """A prepared CLI run: how to start it and where its trace is once it started."""

    display: RunDisplay
    start: Callable[[], Awaitable[RunResult]]
    trace: Callable[[], Path | None]


def run_task(options: RunOptions) -> int:
    """Run one task; returns the exit code (0 answered, 1 failed, 2 bad usage, 128+N on signal N)."""
    return _exporting(options, lambda telemetry: _main(lambda c, e: _prepare_run(options, c, telemetry)))


def resume_task(options: RunOptions) -> int:
    """Continue the run in ``options.trace``; exit codes as :func:`run_task`."""
    return _exporting(
        options, lambda telemetry: _main(lambda c, e: _prepare_resume(options, c, e, telemetry))
    )


def _exporting(options: RunOptions, main: Callable[[Telemetry | None], int]) -> int:
    """Run ``main`` with OpenTelemetry export when ``--otel`` or an OTLP endpoint asks for it;
    the spans and metrics are flushed before this returns."""
    try:
        exporting = cli_telemetry(options.otel)
    except ConfigurationError as exc:
        return _error(TerminalConsole.for_cli(stderr=True), exc, EXIT_USAGE)
    try:
        return main(exporting.telemetry if exporting else None)
    finally:
        if exporting is not None:
            exporting.shutdown()


def _main(prepare: Callable[[Console, Console], _Launch]) -> int:
    settle_heap_on_import()  # this process is ours: litellm's objects need no garbage collection
    console = TerminalConsole.for_cli()
    err = TerminalConsole.for_cli(stderr=True)  # a sentence is never cut into lines
    try:
        launch = prepare(console, err)
        result, signum = _run_until_signal(launch.start, launch.display)
    except (ConfigurationError, ModelNotFoundError, TraceFormatError) as exc:
        return _error(err, exc, EXIT_USAGE)
    except (AuthenticationError, TraceWriteError, MCPServerError) as exc:
        return _error(err, exc, EXIT_FAILED)
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM or SIGHUP before the run started
        number = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
        err.print(f"[yellow]interrupted by {signal.Signals(number).name}[/]")
        return 128 + number
    if signum is not None or result is None:
        number = signum or signal.SIGINT
        path = launch.trace()
        hint = f"; continue with: tiered-agent resume {path}" if path else ""
        err.print(f"[yellow]interrupted by {signal.Signals(number).name}[/]{escape(hint)}")
        return 128 + number
    launch.display.final(result)
    return EXIT_OK if result.ok else EXIT_FAILED


def _error(err: Console, exc: Exception, code: int) -> int:
    err.print(f"[red]error:[/] {escape(redact(str(exc)))}")
    return code


def _run_until_signal(
    start: Callable[[], Awaitable[T]], display: RunDisplay | None = None
) -> tuple[T | None, int | None]:
    """Run ``start()``; a signal in :data:`_SIGNALS` cancels it, and so does the display's stdout
    closing (as SIGPIPE: a pipeline's reader gone, ``run ... | head``, ends the run as cleanly as
    Ctrl-C, resumable). (result, None) or (None, signal)."""
    outcome: dict[str, Any] = {}

    async def watch(signals: Any, scope: anyio.CancelScope) -> None:
        async for signum in signals:
            _stop(outcome, scope, signum)
            return

    async def main() -> None:
        async with anyio.create_task_group() as group:
            if display is not None:
                display.on_closed = functools.partial(_stop, outcome, group.cancel_scope, signal.SIGPIPE)
            with anyio.open_signal_receiver(*_SIGNALS) as signals:
                group.start_soon(watch, signals, group.cancel_scope)
                try:
                    outcome["result"] = await start()
                except Exception as exc:  # re-raised below as itself, not inside an ExceptionGroup
                    outcome["error"] = exc
                finally:
                    group.cancel_scope.cancel()

    anyio.run(main, backend="asyncio")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result"), outcome.get("signal")


def _stop(outcome: dict[str, Any], scope: anyio.CancelScope, signum: int) -> None:
    outcome.setdefault("signal", int(signum))
    scope.cancel()


# ------------------------------------------------------------------ run
def _prepare_run(options: RunOptions, console: Console, telemetry: Telemetry | None) -> _Launch:
    if not options.model:
        raise ConfigurationError("no model given: pass --model or set TIERED_AGENT_MODEL")
    context = preset(options.policy or "tiered")
    run_ids: list[str] = []
    display = RunDisplay(console)
    agent = _agent(
        options, options.model, options.api_base, context, _recorder(display, run_ids), telemetry=telemetry
    )

    def trace() -> Path | None:
        found = [p for i in run_ids for p in options.trace_dir.glob(f"*-{i}.jsonl")]
        return found[0] if found else None

    return _Launch(display, lambda: agent.run(options.task), trace)


def _recorder(display: RunDisplay, run_ids: list[str]) -> Callable[[Event], None]:
    def on_event(event: Event) -> None:
        if isinstance(event, RunStarted):
            run_ids.append(event.run_id)
        display(event)

    return on_event


# ------------------------------------------------------------------ resume
def _prepare_resume(
    options: RunOptions, console: Console, err: Console, telemetry: Telemetry | None
) -> _Launch:
    trace = options.trace
    assert trace is not None
    started = _last_run_start(trace)
    same_model = options.model in (None, started.model)
    model = options.model or started.model
    endpoint = resume_endpoint(options.api_base, started.config.get("api_base"), model)
    window = options.context_window or (started.config.get("context_window") if same_model else None)
    options = dataclasses.replace(options, context_window=window if isinstance(window, int) else None)
    context = _resumed_context(options, started, err)
    _note_tools(started, options, err)
    display = RunDisplay(console, preface=(endpoint.described, *(f"note: {n}" for n in [endpoint.note] if n)))
    agent = _agent(options, model, endpoint.api_base, context, display, telemetry=telemetry)
    return _Launch(display, lambda: agent.resume(trace, options.follow_up), lambda: trace)


def _last_run_start(trace: Path) -> RunStarted:
    """The trace's last readable ``run_start``; without one, one sentence that names the first
    unreadable line and why (a ``run_start`` nested too deep, of the wrong shape, ...), if any."""
    scan = scan_trace(trace)
    started = [e for e in scan.events if isinstance(e, RunStarted)]
    if not started:
        first = scan.skipped[0] if scan.skipped else None
        why = f"; its line {first.line} is unreadable: {first.reason}" if first else ""
        raise ConfigurationError(f"{trace} is not a tiered-agent run trace (no readable run_start{why})")
    return started[-1]


def _resumed_context(options: RunOptions, started: RunStarted, err: Console) -> Policy:
    """``--policy`` if given, else the run's own policy (as its ``run_start`` recorded it); a
    recorded policy this version cannot read is the preset of its name, said on ``err``."""
    if options.policy:
        return preset(options.policy)
    recorded = started.config.get("context")
    if isinstance(recorded, Mapping):
        try:
            return Policy.from_dict(recorded)
        except (ConfigurationError, TypeError, ValueError, KeyError, AttributeError) as exc:
            name = recorded.get("name")
            if isinstance(name, str) and name in PRESETS:
                err.print(
                    f"[yellow]note:[/] the run's recorded policy cannot be read here ({escape(str(exc))});"
                    f" resuming with the preset {escape(name)!r} of this version (--policy picks another)"
                )
                return preset(name)
    raise ConfigurationError(f"{options.trace} does not record its context policy: pass --policy")


def _note_tools(started: RunStarted, options: RunOptions, err: Console) -> None:
    """Tools are never re-enabled from a trace: say which flags the run had."""
    functions = (t.get("function") for t in started.tools if isinstance(t, Mapping))
    used = {str(f.get("name")) for f in functions if isinstance(f, Mapping)}
    for flag, name in _RUN_TOOLS.items():
        if name in used and not getattr(options, flag):
            err.print(
                f"[yellow]note:[/] the run used {name}; pass --{flag.replace('_', '-')} to enable it again"
            )


# ------------------------------------------------------------------ shared
def _summaries(
    options: RunOptions, model: str, api_base: str | None, context: Policy
) -> tuple[Policy, LLMSummarizer | None]:
    """Who writes the run's summaries: the run's own model unless ``--summary-model`` says otherwise
    (``digest``: the deterministic working memory). The run's model is reached through its
    ``--api-base``, and rides the agent's prompt cache; another model gets no ``--api-base``."""
    name = options.summary_model or model
    if name == DIGEST:
        return context.replace(summary_model=None), None
    base = api_base if name == model else None
    summarizer = LLMSummarizer(
        name, api_base=base, max_tokens=context.summary_max_tokens, timeout_s=context.summary_timeout_s
    )
    return context.replace(summary_model=name), summarizer


def _agent(
    options: RunOptions,
    model: str,
    api_base: str | None,
    context: Policy,
    on_event: Callable[[Event], None],
    *,
    telemetry: Telemetry | None,
) -> Agent:
    ws = Workspace(options.workspace)
    context, summarizer = _summaries(options, model, api_base, context)
    return Agent(
        LiteLLMModel(
            model,
            api_base=api_base,
            context_window=options.context_window,
            timeout_s=options.request_timeout,
            retry=RetryPolicy(max_attempts=options.max_retries + 1),
        ),
        tools=workspace_tools(
            ws, allow_write=options.allow_write, allow_shell=options.allow_shell, shell_env=options.shell_env
        ),
        context=context,
        summarizer=summarizer,
        system_prompt=build_system_prompt(DEFAULT_SYSTEM_PROMPT, load_instructions(ws.root)),
        limits=RunLimits(max_iterations=options.max_iterations, token_budget=options.token_budget),
        trace_dir=options.trace_dir,
        on_event=on_event,
        telemetry=telemetry,
        mcp_servers=load_mcp_config(options.mcp_config) if options.mcp_config else (),
    )
