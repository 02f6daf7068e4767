"""What happened to each tool output, as short marks for the page.

For every tool message: in which prompts it was cut (and how much the model
saw), elided or left out of the window (and which summary covered it), whether
it was served from the dedup cache, capped at 1 MB and spilled to a file, an
error; for ``context_retrieve`` results, the items they recovered (parsed from
the result's ``--- iteration N | tool | call id ---`` headers), and on those
items the retrieval that recovered them. Where the full output is: the exact
``context_retrieve(...)`` call the model was given, the spill file, and the
trace line.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..context._names import RETRIEVE_TOOL_NAME, retrieve_call
from ._record import HiddenItem
from ._values import ranges
from ._view import MessageView, RunView

__all__ = ["Mark", "MarkIndex", "Ref"]

_HEADER = re.compile(r"^--- (iteration \d+(?: \| [^\n]*?)?) ---$", re.M)
_SPILL = re.compile(r"(?:saved at|saved to) (.+?)\]\s*$")
_SPILL_TAIL_CHARS = 600


@dataclass(frozen=True, slots=True)
class Ref:
    """A link target: the message answering ``call_id`` in ``iteration`` (or the iteration itself)."""

    iteration: int
    call_id: str | None = None
    label: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"it": self.iteration, "id": self.call_id, "label": self.label}


@dataclass(frozen=True, slots=True)
class Mark:
    """One note on a message: ``kind`` picks the style (truncated, spilled, error, ...)."""

    kind: str
    text: str
    how: str | None = None  # the exact recovery call, when there is one
    refs: tuple[Ref, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"k": self.kind, "t": self.text}
        if self.how:
            out["how"] = self.how
        if self.refs:
            out["refs"] = [r.to_dict() for r in self.refs]
        return out


def recovered_items(text: str) -> list[Ref]:
    """The items a ``context_retrieve`` result holds, from its item headers."""
    refs = []
    for header in _HEADER.findall(text):
        fields = header.split(" | ")
        iteration = int(fields[0].split()[1])
        call_id = next((f for f in fields[2:] if not f.startswith("part ")), None)
        label = " | ".join(fields)
        refs.append(Ref(iteration, call_id, label))
    return list(dict.fromkeys(refs))


class MarkIndex:
    """Indexes a run once; :meth:`marks` then answers per message."""

    def __init__(self, run: RunView) -> None:
        self.run = run
        self.retrieval = RETRIEVE_TOOL_NAME in run.tool_names
        context = run.config.get("context")
        self.keep_actions = isinstance(context, dict) and context.get("window_keep_actions") is True
        self.call_iteration: dict[str, int] = {}
        for view in run.messages:
            for call in view.message.tool_calls:
                self.call_iteration[call.id] = view.message.iteration
        self.hidden: dict[str, dict[str, list[tuple[int, HiddenItem]]]] = defaultdict(
            lambda: defaultdict(list)
        )
        self.windowed: dict[int, list[tuple[int, tuple[int, int] | None]]] = defaultdict(list)
        for it in run.iterations:
            for item in it.record.items:
                self.hidden[item.tool_call_id][item.kind].append((it.iteration, item))
            for number in it.record.windowed_out:
                self.windowed[number].append((it.iteration, it.record.summary_range))
        self.recovered_by: dict[str, list[Ref]] = defaultdict(list)
        self.recovered: dict[str, list[Ref]] = {}
        for view in run.messages:
            message = view.message
            if message.role == "tool" and message.name == RETRIEVE_TOOL_NAME and message.tool_call_id:
                items = recovered_items(message.text)
                self.recovered[message.tool_call_id] = items
                for ref in items:
                    if ref.call_id:
                        self.recovered_by[ref.call_id].append(Ref(message.iteration, message.tool_call_id))

    def marks(self, view: MessageView) -> list[Mark]:
        message = view.message
        if message.role != "tool" or not message.tool_call_id:
            return self._window(message.iteration, tool=False) if message.role == "assistant" else []
        call_id = message.tool_call_id
        found = [
            *self._result(call_id),
            *self._hidden(call_id, view),
            *self._window(message.iteration, tool=True),
        ]
        found.extend(self._spill(message.text))
        if call_id in self.recovered:
            found.append(self._recovered(call_id))
        if call_id in self.recovered_by:
            refs = tuple(self.recovered_by[call_id])
            found.append(
                Mark(
                    "recovered-by",
                    "recovered by context_retrieve at iteration(s) " + ranges(r.iteration for r in refs),
                    refs=refs,
                )
            )
        return found

    def _result(self, call_id: str) -> list[Mark]:
        result = self.run.tool_results.get(call_id)
        if result is None:
            return []
        found = []
        if result.is_error:
            found.append(Mark("error", f"tool error ({result.error_kind or 'error'})"))
        if result.dedup_of:
            origin = self.call_iteration.get(result.dedup_of)
            where = f" (iteration {origin})" if origin is not None else ""
            refs = (Ref(origin, result.dedup_of),) if origin is not None else ()
            text = f"deduplicated: not run again, the cached result of {result.dedup_of}{where} was reused"
            found.append(Mark("dedup", text, refs=refs))
        return found

    def _hidden(self, call_id: str, view: MessageView) -> list[Mark]:
        found = []
        where = f"full text: line {view.line} of {self.run.path.name}"
        how = retrieve_call("tool_call_id", call_id) if self.retrieval else None
        for kind, seen in self.hidden.get(call_id, {}).items():
            prompts = ranges(number for number, _ in seen)
            item = seen[-1][1]
            text = f"{kind} in the prompt of iteration(s) {prompts}"
            if item.kept_chars is not None and item.original_chars:
                hidden = item.original_chars - item.kept_chars
                text += (
                    f": the model saw {item.kept_chars:,} of {item.original_chars:,} chars "
                    f"({hidden:,} hidden, {math.floor(100 * hidden / item.original_chars)}%)"
                )
            found.append(Mark(kind, f"{text}; {where}", how=how))
        return found

    def _window(self, iteration: int, *, tool: bool) -> list[Mark]:
        seen = self.windowed.get(iteration)
        if not seen or (self.keep_actions and not tool):
            return []  # window_keep_actions keeps the agent's own messages
        first, summary = seen[0]
        covered = next((s for _, s in seen if s is not None), summary)
        if self.keep_actions:
            text = f"elided from the prompt of iteration {first} on: a retrieval placeholder stood for it"
        else:
            text = f"left out of the prompt from iteration {first} on"
        if covered:
            text += f"; covered by the summary of iterations {covered[0]}-{covered[1]}"
        how = retrieve_call("iteration", str(iteration)) if self.retrieval else None
        return [Mark("windowed", text, how=how)]

    def _spill(self, text: str) -> list[Mark]:
        match = _SPILL.search(text[-_SPILL_TAIL_CHARS:])
        if match is None:
            return []
        written = Path(match.group(1))
        beside = self.run.path.with_suffix(".outputs") / written.name
        state = "" if beside.exists() else " (not found beside the trace)"
        return [Mark("spilled", f"over the output cap: the full output is in {beside}{state}")]

    def _recovered(self, call_id: str) -> Mark:
        refs = tuple(self.recovered[call_id])
        if not refs:
            return Mark("retrieval", "retrieval: nothing matched")
        return Mark("retrieval", f"recovered {len(refs)} item(s):", refs=refs)
