"""Live per-iteration display of a run for the CLI (rich); the loop only emits events.

It prints on a :class:`~._terminal.TerminalConsole`, so nothing from a model, a tool or a trace
reaches the terminal as a control sequence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rich.console import Console
from rich.markup import escape

from .._result import RunResult
from .._trace import (
    ErrorEvent,
    Event,
    MessageEvent,
    ModelRequest,
    ModelResponse,
    RunStarted,
    SummaryEvent,
    ToolResult,
    redact,
)

__all__ = ["RunDisplay"]


@dataclass
class RunDisplay:
    """Prints, per iteration, the tool calls, prompt tokens against the window, and savings.

    Every text it prints from the run (calls, errors, the answer) goes through ``redact`` first.
    When stdout's reader goes away (``| head``), it prints nothing more and calls ``on_closed``
    once (the CLI stops the run as SIGPIPE would); the run itself never sees the broken pipe.
    """

    console: Console
    preface: tuple[str, ...] = ()  # lines printed after the run's first line (resume: the endpoint)
    context_window: int | None = None
    hard_limit: float = 0.95
    first_prompt: int | None = None
    sent: int = 0
    full: int = 0
    iteration: int = 0
    on_closed: Callable[[], None] | None = None
    closed: bool = False
    _request: ModelRequest | None = field(default=None, repr=False)

    def __call__(self, event: Event) -> None:
        if self.closed:
            return
        try:
            self._show(event)
        except BrokenPipeError:
            self.closed = True
            if self.on_closed is not None:
                self.on_closed()

    def _show(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self.context_window = event.config.get("context_window")
            self.hard_limit = float(event.config.get("context", {}).get("hard_limit", 0.95))
            self.console.print(f"[bold]run {escape(event.run_id)}[/] · model {escape(event.model)}")
            for line in self.preface:
                self.console.print(f"[dim]{escape(line)}[/]")
        elif isinstance(event, ModelRequest):
            self._request = event
        elif isinstance(event, ModelResponse):
            self._response(event)
        elif isinstance(event, MessageEvent):
            self._message(event)
        elif isinstance(event, ToolResult) and (event.is_error or event.dedup_of):
            note = "cached: already called" if event.dedup_of else f"error ({event.error_kind})"
            self.console.print(f"    [yellow]{escape(event.name)}: {note}[/]")
        elif isinstance(event, SummaryEvent):
            self.console.print(
                f"    [cyan]summary of iterations {event.first_iteration}-{event.last_iteration} landed[/]"
            )
        elif isinstance(event, ErrorEvent):
            self.console.print(f"    [red]{escape(event.kind)}: {escape(redact(event.message))}[/]")

    def _message(self, event: MessageEvent) -> None:
        message = event.message
        if message.role != "assistant" or not message.tool_calls:
            return
        calls = ", ".join(f"{c.name}({_short(c.arguments)})" for c in message.tool_calls)
        self.console.print(f"    → {escape(redact(calls))}")

    def _response(self, event: ModelResponse) -> None:
        request = self._request
        if request is None:
            return
        self.iteration = event.iteration
        prompt = event.usage.prompt_tokens or request.prompt_tokens_local
        self.first_prompt = self.first_prompt or prompt
        self.sent += request.prompt_tokens_local
        self.full += request.counterfactual_tokens
        saved = 0.0 if not self.full else 1 - self.sent / self.full
        self.console.print(
            f"[bold]iter {event.iteration}[/] prompt {prompt:,} tok{self._window(prompt)}"
            f" · cached {event.usage.cached_tokens:,} · saved {saved:.0%} vs full history"
        )

    def _window(self, prompt: int) -> str:
        if not self.context_window:
            return ""
        share = prompt / self.context_window
        growth = (prompt - (self.first_prompt or prompt)) / max(self.iteration - 1, 1)
        room = self.hard_limit * self.context_window - prompt
        left = "many" if growth <= 0 else f"~{max(int(room / growth), 0)}"
        return f" ({share:.1%} of {self.context_window:,}; {left} iterations left)"

    def final(self, result: RunResult) -> None:
        self.console.rule()
        if result.output is not None:
            self.console.print(redact(result.output), markup=False)
        else:
            error = escape(redact(result.error or ""))
            self.console.print(f"[red]stopped: {result.stop_reason.value}[/] {error}")
        usage = result.usage
        self.console.print(
            f"iterations {len(result.iterations)} · prompt {usage.prompt_tokens:,} · completion "
            f"{usage.completion_tokens:,} · cached {usage.cached_tokens:,}"
            + (f" · cost ${usage.cost:.4f}" if usage.cost is not None else "")
        )
        self.console.print(
            f"local prompt tokens {result.prompt_tokens_local:,} vs full history "
            f"{result.counterfactual_tokens:,}: saved {result.savings:.1%}"
        )
        self.console.print(f"trace: {result.trace_path}")


def _short(arguments: str, limit: int = 60) -> str:
    text = arguments.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"
