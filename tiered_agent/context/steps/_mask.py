"""Mask: observation masking, the last N tool outputs kept and older ones replaced by a placeholder.

After Lindenbauer et al., "The Complexity Trap" (masking keeps the agent's
reasoning and calls, and hides old observations). An output is replaced only
when the placeholder is shorter than it; outputs an earlier step already hid
still count among the last N. :func:`hide_older_outputs` is the mechanism,
shared with :class:`~._clear.Clear`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from ..._messages import Message
from .._names import retrieve_call
from .._step import Step, require
from ..pipeline._draft import BuildContext, Draft, with_content

__all__ = ["Mask", "hide_older_outputs", "output_placeholder"]


@dataclass(frozen=True, slots=True)
class Mask(Step):
    """Keep the last ``keep`` tool outputs; replace older ones with a placeholder."""

    kind: ClassVar[str] = "mask"
    keep: int = 10

    def __post_init__(self) -> None:
        require(isinstance(self.keep, int) and self.keep >= 1, f"Mask.keep must be >= 1, got {self.keep!r}")

    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        return hide_older_outputs(draft, keep=self.keep, retrieval=context.retrieval, by=self.kind)


@lru_cache(maxsize=8192)
def output_placeholder(tool_call_id: str | None, *, retrieval: bool) -> str:
    """``[output omitted; context_retrieve(tool_call_id="call_7")]``, or ``[output omitted]``."""
    if retrieval and tool_call_id:
        return f"[output omitted; {retrieve_call('tool_call_id', tool_call_id)}]"
    return "[output omitted]"


def hide_older_outputs(draft: Draft, *, keep: int, retrieval: bool, by: str) -> Draft:
    """Every tool output but the last ``keep`` behind a placeholder (when it is shorter); ``by``: the
    step's kind."""
    placeholders: dict[int, tuple[Message, int]] = {}
    seen = 0
    for index in range(len(draft.messages) - 1, -1, -1):
        if draft.messages[index].role != "tool":
            continue
        seen += 1
        if seen <= keep or index in draft.hidden:
            continue
        original = draft.originals[index]
        replaced = _placeholder_message(original, retrieval)
        if replaced is not None:
            placeholders[index] = (replaced, len(original.text))
    return draft.hide(placeholders, by) if placeholders else draft


@lru_cache(maxsize=4096)
def _placeholder_message(message: Message, retrieval: bool) -> Message | None:
    """The placeholder message, or None when the placeholder would not be shorter."""
    placeholder = output_placeholder(message.tool_call_id, retrieval=retrieval)
    return with_content(message, placeholder) if len(message.text) > len(placeholder) else None
