"""Building the prompt: the policy's steps, in order, over the full history; and its validity check.

:func:`build_prompt` is pure: it starts from the history with the summary (if
one has landed) standing in for the iterations it covers
(:func:`~._draft.start`), applies each step of the policy in order
(:meth:`~.steps.Step.apply`), then lets each finish it
(:meth:`~.steps.Step.finish`: the dedup pointers), and returns the prompt with
the statistics the trace records. Input messages are never mutated; rewritten
ones are new frozen messages, untouched ones are the same objects.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..._messages import Message
from ..._tokens import TokenCounter
from .._config import ContextConfig
from .._policy import Policy
from .._presets import as_policy
from ..aging._schedule import AgingSchedule
from ._draft import BuildContext, HistoryFacts, start
from ._types import BuiltPrompt, Summary

__all__ = ["build_prompt", "validate_pairs"]


def build_prompt(
    history: Sequence[Message],
    policy: Policy | ContextConfig,
    *,
    summary: Summary | None,
    counter: TokenCounter,
    facts: HistoryFacts | None = None,
    schedule: AgingSchedule | None = None,
) -> BuiltPrompt:
    """The messages to send for the next model call, and what was done to get them.

    ``counter`` is used only by steps that measure the prompt (``Clear``; its
    per-message cache makes repeated counts cheap). ``facts``: what the
    caller keeps about the history (the context manager does; otherwise they
    are found here, and no output counts as a duplicate). ``schedule`` is the
    run's aging schedule (which iterations the ``Age`` step shows aged; None:
    none). Raises ValueError on a summary with an invalid range.
    """
    policy = as_policy(policy)
    context = BuildContext.of(
        history, summary, counter, retrieval=policy.retrieval_active, facts=facts, schedule=schedule
    )
    draft = start(context)
    for step in policy.steps:
        draft = step.apply(draft, context)
    for step in policy.steps:
        draft = step.finish(draft, context)
    return draft.built(context)


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
