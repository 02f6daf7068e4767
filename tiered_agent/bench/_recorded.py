"""A recorded agent run, normalized into the runtime's message model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._messages import Message, ToolCall, Usage

__all__ = ["RecordedRun"]


@dataclass(frozen=True, slots=True)
class RecordedRun:
    """One recorded run, whatever its source format.

    ``messages`` is the full history in the runtime's model: iteration 0 holds
    the system prompt and the task; iteration ``k`` holds the ``k``-th
    assistant message (its action as a tool call) and the observations that
    answered it (tool messages, or user messages for a simulated customer).
    ``usage[k - 1]`` is the provider usage recorded for step ``k``, or None;
    ``routes[k - 1]`` the endpoint that served step ``k`` where a router
    recorded it (OpenRouter's ``provider``: ``"Google"``, ``"Google AI
    Studio"``), or None. Each endpoint has its own prompt cache.

    A tool call is read-only (its result may be served by the dedup cache) when
    its tool is in ``read_only_tools``, or when the call itself is in
    ``read_only_calls`` (call ids: a read-only command of a tool that can also
    write, such as a file editor's ``view``); :meth:`is_read_only` decides.
    """

    run_id: str
    source: str
    # "mini-swe-agent" | "swe-agent" | "tau-bench" | "openhands" | "claude-code" | "codex" | "tiered-agent"
    format: str
    messages: tuple[Message, ...]
    tools: tuple[dict[str, Any], ...] = ()
    read_only_tools: frozenset[str] = frozenset()
    usage: tuple[Usage | None, ...] = ()
    model: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    read_only_calls: frozenset[str] = frozenset()
    routes: tuple[str | None, ...] = ()

    @property
    def steps(self) -> int:
        """Number of model calls (assistant messages) in the run."""
        return sum(1 for m in self.messages if m.role == "assistant")

    @property
    def task(self) -> str:
        return next((m.text for m in self.messages if m.role == "user"), "")

    def route(self, step: int) -> str | None:
        """The endpoint that served model call ``step`` (1-based), if recorded."""
        return self.routes[step - 1] if 0 < step <= len(self.routes) else None

    def is_read_only(self, call: ToolCall) -> bool:
        """Whether ``call`` only reads: its tool always does, or this call's command does."""
        return call.name in self.read_only_tools or call.id in self.read_only_calls
