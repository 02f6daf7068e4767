"""Clear: Anthropic-style context editing, past a token count all tool outputs but the last N cleared.

After Anthropic's ``clear_tool_uses`` context edit: nothing happens until the
prompt as it stands when this step runs (after the steps before it, e.g. a
truncation) exceeds ``trigger_tokens`` (messages only, no tool schemas); then
every tool output but the last ``keep`` is replaced by a placeholder, by the
mechanism of :mod:`._mask`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from ..._messages import Message
from ..._tokens import PROMPT_OVERHEAD, TokenCounter
from .._step import Step, require
from ..pipeline._draft import BuildContext, Draft
from ._mask import hide_older_outputs

__all__ = ["Clear", "prompt_tokens"]


@dataclass(frozen=True, slots=True)
class Clear(Step):
    """Past ``trigger_tokens``, clear every tool output but the last ``keep``."""

    kind: ClassVar[str] = "clear"
    trigger_tokens: int = 100_000
    keep: int = 3

    def __post_init__(self) -> None:
        ok = isinstance(self.trigger_tokens, int) and self.trigger_tokens >= 1
        require(ok, f"Clear.trigger_tokens must be a positive integer, got {self.trigger_tokens!r}")
        require(isinstance(self.keep, int) and self.keep >= 0, f"Clear.keep must be >= 0, got {self.keep!r}")

    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        if prompt_tokens(draft.messages, context.counter) <= self.trigger_tokens:
            return draft
        return hide_older_outputs(draft, keep=self.keep, retrieval=context.retrieval)


def prompt_tokens(messages: Sequence[Message], counter: TokenCounter) -> int:
    """``counter.count_prompt(messages)``, memoized per message."""
    return PROMPT_OVERHEAD + sum(_message_tokens(counter, message) for message in messages)


@lru_cache(maxsize=8192)
def _message_tokens(counter: TokenCounter, message: Message) -> int:
    return counter.count_message(message)
