"""The Tier-1 pipeline: one pure function from the full history to the prompt.

Steps, in order: window (:mod:`._window`), observation masking
(:mod:`._masking`), truncation (:mod:`._truncation`), then Anthropic-style
clearing, which is measured on the prompt as it would be sent (after
truncation) and, when triggered, re-applies truncation to the outputs it
keeps. Input messages are never mutated; rewritten ones are new frozen
messages, untouched ones are the same objects.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._messages import Message
from .._tokens import TokenCounter
from ._config import ContextConfig
from ._masking import MaskResult, clear_outputs, mask_outputs
from ._truncation import truncate_outputs
from ._types import BuiltPrompt, ContextStats, Summary
from ._window import select_window

__all__ = ["build_prompt", "validate_pairs"]


def build_prompt(
    history: Sequence[Message], config: ContextConfig, *, summary: Summary | None, counter: TokenCounter
) -> BuiltPrompt:
    """The messages to send for the next model call, and what was done to get them.

    ``counter`` is used only when clearing is configured (its per-text cache
    makes repeated counts cheap).
    """
    window = select_window(history, config, summary=summary)
    masked = MaskResult(window.messages)
    if config.mask_keep_outputs is not None:
        masked = mask_outputs(
            window.messages, keep=config.mask_keep_outputs, retrieval=config.retrieval_active
        )
    shown, truncations = truncate_outputs(masked.messages, config, skip=masked.masked)
    cleared = clear_outputs(masked.messages, shown, config, counter)
    if cleared is not None and cleared.masked:
        hidden = masked.masked | cleared.masked
        masked = MaskResult(cleared.messages, hidden, masked.masked_chars + cleared.masked_chars)
        shown, truncations = truncate_outputs(masked.messages, config, skip=hidden)
    stats = ContextStats(
        truncations=tuple(truncations),
        masked_outputs=masked.masked_outputs + window.elided_outputs,
        masked_chars=masked.masked_chars + window.elided_chars,
        windowed_out=window.windowed_out,
        summary_range=window.summary_range,
        shown_iterations=window.shown_iterations,
    )
    return BuiltPrompt(tuple(shown), stats)


def validate_pairs(messages: Sequence[Message]) -> None:
    """Raise ValueError unless ``messages`` is a prompt every provider accepts.

    Rules: not empty; at most one system message, and only first; the first
    other message is ``user``; every assistant tool call has a non-empty id,
    unique in the prompt, and is answered by exactly one ``tool`` message in
    the block of tool messages right after it (OpenAI rejects anything in
    between); no tool message outside such a block or answering an unknown id;
    no two consecutive assistant messages.
    """
    if not messages:
        raise ValueError("empty prompt")
    _check_head(messages)
    seen_ids: set[str] = set()
    pending: set[str] = set()
    previous: Message | None = None
    for index, message in enumerate(messages):
        if message.role == "tool":
            _check_tool(index, message, pending)
        elif pending:
            raise ValueError(f"message {index} ({message.role}) before tool results for {sorted(pending)}")
        elif message.role == "assistant":
            if previous is not None and previous.role == "assistant":
                raise ValueError(f"message {index}: two consecutive assistant messages")
            pending = _open_calls(index, message, seen_ids)
        previous = message
    if pending:
        raise ValueError(f"tool calls without results at the end: {sorted(pending)}")


def _check_head(messages: Sequence[Message]) -> None:
    for index, message in enumerate(messages):
        if message.role == "system" and index != 0:
            raise ValueError(f"message {index}: system message not first")
    first = 1 if messages[0].role == "system" else 0
    if first < len(messages) and messages[first].role != "user":
        raise ValueError(f"message {first}: the first non-system message is {messages[first].role}, not user")


def _check_tool(index: int, message: Message, pending: set[str]) -> None:
    if not message.tool_call_id or message.tool_call_id not in pending:
        raise ValueError(f"message {index}: orphan tool result {message.tool_call_id!r}")
    pending.discard(message.tool_call_id)


def _open_calls(index: int, message: Message, seen_ids: set[str]) -> set[str]:
    pending: set[str] = set()
    for call in message.tool_calls:
        if not call.id:
            raise ValueError(f"message {index}: tool call without id")
        if call.id in seen_ids:
            raise ValueError(f"message {index}: duplicate tool call id {call.id!r}")
        seen_ids.add(call.id)
        pending.add(call.id)
    return pending
