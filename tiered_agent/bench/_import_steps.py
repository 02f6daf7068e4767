"""Build one run's history event by event, for the event-log importers (OpenHands, Claude Code, Codex).

Those logs record a model response as several entries (one per tool call, or
one per content block) and answer each call with its own entry. The builder
turns them into the runtime's shape: one assistant message per step carrying
all of that response's tool calls, the results as tool messages of the same
iteration, and one usage slot per step, with when each request was sent.

Damaged logs (``damaged``: the numbers of the lines that were not JSON objects
and were skipped): a call whose result was on such a line gets a placeholder
result naming the damage, so the conversation stays one a provider accepts; a
result whose call was on such a line makes the conversation inconsistent, and
:meth:`HistoryBuilder.build` raises :class:`ShapeError` with that reason.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Literal

from .._messages import Message, ToolCall, Usage
from ._import_common import CallIds, ShapeError, StepTiming, build_run, schemas_from_calls
from ._recorded import RecordedRun

__all__ = ["HistoryBuilder", "damage_note"]


def damage_note(lines: Sequence[int]) -> str:
    """How a damaged log's skipped lines are named in reasons and placeholders."""
    shown = ", ".join(str(n) for n in lines[:5])
    more = f" and {len(lines) - 5} more" if len(lines) > 5 else ""
    return f"line{'s' * (len(lines) != 1)} {shown}{more}"


class HistoryBuilder:
    """Messages, per-step usage and read-only calls of one run, appended in log order."""

    def __init__(self, damaged: Sequence[int] = ()) -> None:
        self.messages: list[Message] = []
        self.usage: list[Usage | None] = []
        self.times: list[float | None] = []
        self.writes_1h: list[int] = []
        self.models: list[str | None] = []  # per step, the model that answered it (where recorded)
        self.step_ids: list[str | None] = []  # per step, the provider's id of the call (where recorded)
        self.billing: list[str] = []  # per step, its billing modifiers ("fast+us"; "": none)
        self.restarts: list[int] = []
        self.reasoning_steps: set[int] = set()
        self.read_only_calls: set[str] = set()
        self.unpaired_results = 0
        self.damaged = tuple(damaged)
        self.placeholders = 0
        self.inconsistent: str | None = None
        self._ids = CallIds()
        self._pending: dict[str, ToolCall] = {}  # recorded call id -> call of the current step
        self._answered: set[str] = set()  # unique ids of the current step's calls with a result
        self._assistant_at = -1  # index of the current step's assistant message
        self._results_end = 0  # index after the current step's assistant message and its results
        self._input_time: float | None = None  # latest entry time since the current step began

    @property
    def step(self) -> int:
        """The current step (0 before the first model call)."""
        return len(self.usage)

    def note_time(self, time: float | None) -> None:
        """An entry recorded at ``time`` before the next request (the request follows the latest)."""
        if time is not None and (self._input_time is None or time > self._input_time):
            self._input_time = time

    def context(self, role: Literal["system", "user"], text: str, *, time: float | None = None) -> None:
        """A system prompt, task or user reply, in the current iteration (0 before the first step)."""
        self.note_time(time)
        self.messages.append(Message(role, text, iteration=self.step))

    def restart(self) -> None:
        """The agent replaced its history here (a recorded compaction): the messages added from now
        on are all it kept, and the steps after them build on those alone."""
        self._close_step()
        self._pending, self._answered = {}, set()
        self._assistant_at = -1  # the step is closed: nothing after the restart belongs to it
        if self.messages and self.step:
            self.restarts.append(len(self.messages))

    def truncate(self, index: int) -> int:
        """The agent dropped its history from message ``index`` on (a recorded rollback): those
        messages go, and the steps among them with their usage; returns how many steps went."""
        self._close_step()
        index = max(0, min(index, len(self.messages)))
        gone = self.messages[index:]
        dropped = sum(1 for m in gone if m.role == "assistant")
        del self.messages[index:]
        keep = self.step - dropped
        for per_step in (self.usage, self.times, self.writes_1h, self.models, self.billing, self.step_ids):
            del per_step[keep:]
        # The work is what goes, never the whole history (a log of many rollbacks: faults.md case 68):
        # step numbers past ``keep``, restarts past ``index`` (ascending; one at the cut still holds),
        # and the calls of the messages that went (call ids are unique within the run).
        self.reasoning_steps.difference_update(range(keep + 1, keep + dropped + 1))
        del self.restarts[bisect.bisect_right(self.restarts, index) :]
        self.read_only_calls.difference_update(c.id for m in gone for c in m.tool_calls)
        self._pending, self._answered = {}, set()
        self._assistant_at, self._results_end = -1, len(self.messages)
        return dropped

    def start_step(
        self,
        text: str | None = None,
        usage: Usage | None = None,
        *,
        time: float | None = None,
        model: str | None = None,
    ) -> None:
        """A new model call: an assistant message with ``text`` and, so far, no tool calls.

        ``time``: the timestamp of the response's own entry; the request was sent at the latest
        entry before it, when the log recorded one (a tool result, the user's prompt). ``model``:
        the model that answered it, where the log says.
        """
        self._close_step()
        self.usage.append(usage)
        self.times.append(self._input_time if self._input_time is not None else time)
        self.writes_1h.append(0)
        self.models.append(model)
        self.step_ids.append(None)
        self.billing.append("")
        self._input_time = None
        self._pending, self._answered = {}, set()
        self._assistant_at = len(self.messages)
        self.messages.append(Message("assistant", text or None, iteration=self.step))
        self._results_end = len(self.messages)

    def set_step_id(self, step_id: str | None) -> None:
        """An id the provider gave the current step's call (:attr:`RecordedRun.step_ids`); the first
        one given stays."""
        if step_id and self.step_ids and self.step_ids[-1] is None:
            self.step_ids[-1] = step_id

    def mark_reasoning(self) -> None:
        """The current step's response held reasoning items (hidden thinking of a reasoning model)."""
        if self.step:
            self.reasoning_steps.add(self.step)

    def add_text(self, text: str) -> None:
        """More text of the current step's assistant message (another block of the same response)."""
        if not text or self._assistant_at < 0:
            return
        current = self.messages[self._assistant_at]
        joined = f"{current.content}\n{text}" if current.content else text
        self.messages[self._assistant_at] = dataclasses.replace(current, content=joined)

    def add_call(self, call_id: str | None, name: str, arguments: str, *, read_only: bool = False) -> str:
        """A tool call of the current step's response; returns its id, made unique within the run."""
        if self._assistant_at < 0:
            self.start_step()
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

    def add_result(self, call_id: str, text: str, *, time: float | None = None) -> None:
        """The result of call ``call_id``; a result that answers no call of this step stays a user message
        (in a damaged log, it makes the conversation inconsistent: its call was on a skipped line)."""
        self.note_time(time)
        call = self._pending.get(call_id)
        if call is None:
            self.unpaired_results += 1
            if self.damaged and self.inconsistent is None:
                self.inconsistent = (
                    f"inconsistent after skipping malformed {damage_note(self.damaged)}: "
                    f"a tool result answers call {call_id!r}, which no readable line holds"
                )
            self.context("user", text)
            return
        self._answered.add(call.id)
        self.messages.insert(
            self._results_end,
            Message("tool", text, tool_call_id=call.id, name=call.name, iteration=self.step),
        )
        self._results_end += 1

    def set_usage(self, usage: Usage, *, writes_1h: int = 0, billing: str = "") -> None:
        """The provider usage of the current step (``writes_1h``: cache writes with a 1-hour lifetime;
        ``billing``: its billing modifiers, ``"fast+us"``, ``""`` for none)."""
        if not self.usage:
            return
        self.usage[-1] = usage
        self.writes_1h[-1] = max(0, min(writes_1h, usage.cache_write_tokens))
        self.billing[-1] = billing

    def _close_step(self) -> None:
        """In a damaged log, give each call of the current step that has no result a placeholder."""
        if not self.damaged or self._assistant_at < 0:
            return
        for call in self.messages[self._assistant_at].tool_calls:
            if call.id in self._answered:
                continue
            text = f"[result not recorded: the log's malformed {damage_note(self.damaged)} could not be read]"
            message = Message("tool", text, tool_call_id=call.id, name=call.name, iteration=self.step)
            self.messages.insert(self._results_end, message)
            self._results_end += 1
            self._answered.add(call.id)
            self.placeholders += 1

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
        prompt_complete: bool = True,
    ) -> RecordedRun:
        """The run; tool schemas derived from the calls when the log has none (``tools`` None).

        Raises :class:`ShapeError` when skipped lines left the conversation inconsistent.
        """
        if self.inconsistent is not None:
            raise ShapeError(self.inconsistent)
        # The last step's calls stay as recorded: no prompt of the run follows them.
        extra = {"unpaired_results": self.unpaired_results, "missing_results": self.placeholders}
        metadata = {**metadata, **{k: v for k, v in extra.items() if v}}
        run = build_run(
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
            timing=StepTiming(
                self.times,
                self.writes_1h,
                self.restarts,
                prompt_complete,
                self.reasoning_steps,
                self.models,
                self.billing,
            ),
        )
        if any(i is not None for i in self.step_ids):
            run = dataclasses.replace(run, step_ids=tuple(self.step_ids))
        return run
