"""Tier 1, masking: hide old tool outputs behind a short placeholder.

Two policies share one mechanism (keep the last N tool outputs, replace the
older ones):

* observation masking (``mask_keep_outputs``; Lindenbauer et al., "The
  Complexity Trap"): always on, keeps the last N outputs;
* clearing (``clear_trigger_tokens`` / ``clear_keep_outputs``; Anthropic's
  context editing ``clear_tool_uses``): only once the prompt exceeds the trigger.

An output is replaced only when the placeholder is shorter than it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from .._messages import Message
from .._tokens import PROMPT_OVERHEAD, TokenCounter
from ._config import ContextConfig
from ._names import retrieve_call
from ._truncation import with_content

__all__ = ["MaskResult", "clear_outputs", "mask_outputs", "output_placeholder", "prompt_tokens"]


@dataclass(frozen=True, slots=True)
class MaskResult:
    """Messages after masking; ``masked`` holds the positions replaced by a placeholder."""

    messages: tuple[Message, ...]
    masked: frozenset[int] = frozenset()
    masked_chars: int = 0  # chars of the replaced outputs

    @property
    def masked_outputs(self) -> int:
        return len(self.masked)


def output_placeholder(tool_call_id: str | None, *, retrieval: bool) -> str:
    """``[output omitted; context_retrieve(tool_call_id="call_7")]``, or ``[output omitted]``."""
    if retrieval and tool_call_id:
        return f"[output omitted; {retrieve_call('tool_call_id', tool_call_id)}]"
    return "[output omitted]"


def mask_outputs(messages: Sequence[Message], *, keep: int, retrieval: bool) -> MaskResult:
    """Keep the last ``keep`` tool outputs; replace older ones longer than their placeholder."""
    out = list(messages)
    masked: set[int] = set()
    chars = 0
    seen = 0
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role != "tool":
            continue
        seen += 1
        if seen <= keep:
            continue
        replaced = _masked(message, retrieval)
        if replaced is not None:
            out[index] = replaced
            masked.add(index)
            chars += len(message.text)
    return MaskResult(tuple(out), frozenset(masked), chars)


@lru_cache(maxsize=4096)
def _masked(message: Message, retrieval: bool) -> Message | None:
    """The placeholder message, or None when the placeholder would not be shorter."""
    placeholder = output_placeholder(message.tool_call_id, retrieval=retrieval)
    return with_content(message, placeholder) if len(message.text) > len(placeholder) else None


def clear_outputs(
    messages: Sequence[Message], measured: Sequence[Message], config: ContextConfig, counter: TokenCounter
) -> MaskResult | None:
    """Anthropic-style clearing of ``messages``, or None when not triggered.

    ``measured`` is the prompt as it would be sent (after truncation); clearing
    triggers when its token count (messages only, no tool schemas) exceeds
    ``config.clear_trigger_tokens``. Then every tool output but the last
    ``config.clear_keep_outputs`` is replaced by a placeholder.
    """
    trigger = config.clear_trigger_tokens
    if trigger is None or prompt_tokens(measured, counter) <= trigger:
        return None
    return mask_outputs(messages, keep=config.clear_keep_outputs, retrieval=config.retrieval_active)


def prompt_tokens(messages: Sequence[Message], counter: TokenCounter) -> int:
    """``counter.count_prompt(messages)``, memoized per message."""
    return PROMPT_OVERHEAD + sum(_message_tokens(counter, message) for message in messages)


@lru_cache(maxsize=8192)
def _message_tokens(counter: TokenCounter, message: Message) -> int:
    return counter.count_message(message)
