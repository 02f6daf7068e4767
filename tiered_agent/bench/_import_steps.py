"""Build one run's history event by event, for the event-log importers (OpenHands, Claude Code, Codex).

Those logs record a model response as several entries (one per tool call, or
one per content block) and answer each call with its own entry. The builder
turns them into the runtime's shape: one assistant message per step carrying
all of that response's tool calls, the results as tool messages of the same
iteration, and one usage slot per step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Literal

from .._messages import Message, ToolCall, Usage
from ._import_common import CallIds, build_run, schemas_from_calls
from ._recorded import RecordedRun

__all__ = ["HistoryBuilder"]


class HistoryBuilder:
    """Messages, per-step usage and read-only calls of one run, appended in log order."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.usage: list[Usage | None] = []
        self.read_only_calls: set[str] = set()
        self.unpaired_results = 0
        self._ids = CallIds()
        self._pending: dict[str, ToolCall] = {}  # recorded call id -> call of the current step
        self._assistant_at = -1  # index of the current step's assistant message

    @property
    def step(self) -> int:
        """The current step (0 before the first model call)."""
        return len(self.usage)

    def context(self, role: Literal["system", "user"], text: str) -> None:
        """A system prompt, task or user reply, in the current iteration (0 before the first step)."""
        self.messages.append(Message(role, text, iteration=self.step))

    def start_step(self, text: str | None = None, usage: Usage | None = None) -> None:
        """A new model call: an assistant message with ``text`` and, so far, no tool calls."""
        self.usage.append(usage)
        self._pending = {}
        self._assistant_at = len(self.messages)
        self.messages.append(Message("assistant", text or None, iteration=self.step))

    def add_text(self, text: str) -> None:
        """More text of the current step's assistant message (another block of the same response)."""
        if not text:
            return
        current = self.messages[self._assistant_at]
        joined = f"{current.content}\n{text}" if current.content else text
        self.messages[self._assistant_at] = dataclasses.replace(current, content=joined)

    def add_call(self, call_id: str | None, name: str, arguments: str, *, read_only: bool = False) -> str:
        """A tool call of the current step's response; returns its id, made unique within the run."""
        current = self.messages[self._assistant_at]
        unique = self._ids.unique(call_id, self.step, len(current.tool_calls))
        call = ToolCall(unique, name, arguments)
        self.messages[self._assistant_at] = dataclasses.replace(
            current, tool_calls=(*current.tool_calls, call)
        )
        self._pending[call_id or unique] = call
        if read_only:
            self.read_only_calls.add(unique)
        return unique

    def add_result(self, call_id: str, text: str) -> None:
        """The result of call ``call_id``; a result that answers no call of this step stays a user message."""
        call = self._pending.get(call_id)
        if call is None:
            self.unpaired_results += 1
            self.context("user", text)
            return
        self.messages.append(Message("tool", text, tool_call_id=call.id, name=call.name, iteration=self.step))

    def set_usage(self, usage: Usage) -> None:
        """The provider usage of the current step."""
        self.usage[-1] = usage

    def build(
        self,
        *,
        run_id: str,
        source: str,
        fmt: str,
        tools: list[dict[str, Any]] | None,
        model: str | None,
        metadata: dict[str, Any],
        read_only: Callable[[str], bool],
    ) -> RecordedRun:
        """The run; tool schemas derived from the calls when the log has none (``tools`` None)."""
        if self.unpaired_results:
            metadata = {**metadata, "unpaired_results": self.unpaired_results}
        return build_run(
            run_id=run_id,
            source=source,
            fmt=fmt,
            messages=self.messages,
            tools=tools if tools is not None else schemas_from_calls(self.messages),
            usage=self.usage,
            model=model,
            metadata=metadata,
            read_only=read_only,
            read_only_calls=self.read_only_calls,
        )
