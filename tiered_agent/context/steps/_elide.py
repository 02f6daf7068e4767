"""Elide: the iterations a summary covers keep the agent's own messages; only their outputs go.

Instead of the one summary message in place of the covered iterations, their
assistant messages (reasoning and calls) and user messages stay verbatim, each
tool output at least ``min_chars`` long becomes a one-line placeholder naming
its retrieval call, and the summary follows them. The agent keeps what it
decided and did; and since the summary comes after the covered range, the
cached prompt prefix survives up to the previous summary. Without a summary,
nothing happens.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from ..._messages import Message
from .._draft import BuildContext, Draft, summary_message, with_content
from ._base import Step, require
from ._mask import output_placeholder

__all__ = ["Elide"]


@dataclass(frozen=True, slots=True)
class Elide(Step):
    """Covered iterations keep their messages; outputs of ``min_chars`` or more become placeholders."""

    kind: ClassVar[str] = "elide"
    hides: ClassVar[bool] = False  # it only changes how a summary's range is shown
    min_chars: int = 0

    def __post_init__(self) -> None:
        ok = isinstance(self.min_chars, int) and self.min_chars >= 0
        require(ok, f"Elide.min_chars must be >= 0, got {self.min_chars!r}")

    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        summary = context.summary
        if summary is None or not draft.covered:
            return draft
        at = _position(draft, summary_message(summary, min(draft.covered)))
        if at is None:  # an earlier step already reshaped the covered range
            return draft
        originals = [m for m in context.history if m.iteration in draft.covered]
        placeholders = self._placeholders(originals, context.retrieval)
        shown = [placeholders.get(i, m) for i, m in enumerate(originals)]
        hidden = {i: len(originals[i].text) - len(p.text) for i, p in placeholders.items()}
        after = summary_message(summary, max(draft.covered))  # after the covered range
        return draft.splice(at, at + 1, [*shown, after], [*originals, after], hidden)

    def _placeholders(self, messages: list[Message], retrieval: bool) -> dict[int, Message]:
        """Index -> placeholder, for the outputs this step hides."""
        out: dict[int, Message] = {}
        for index, message in enumerate(messages):
            if message.role == "tool":
                placeholder = _placeholder(message, self.min_chars, retrieval)
                if placeholder is not None:
                    out[index] = placeholder
        return out


def _position(draft: Draft, stand_in: Message) -> int | None:
    """Where the summary stands in the draft (compared in full only for user messages of its iteration)."""
    for index, message in enumerate(draft.messages):
        if message.iteration == stand_in.iteration and message.role == "user" and message == stand_in:
            return index
    return None


@lru_cache(maxsize=8192)
def _placeholder(message: Message, min_chars: int, retrieval: bool) -> Message | None:
    """A tool output of ``min_chars`` or more as its placeholder; None to keep it (it is shorter)."""
    if len(message.text) < min_chars:
        return None
    placeholder = output_placeholder(message.tool_call_id, retrieval=retrieval)
    return None if len(message.text) <= len(placeholder) else with_content(message, placeholder)
