"""Building the prompt: the policy's step runtimes, in order, over the full history; and its validity check.

:func:`assemble` starts from the history with the summary (if one has landed) standing in
for the iterations it covers (:func:`~._draft.start`), applies each runtime in order
(:meth:`~.._step.StepRuntime.apply`), then lets each finish it
(:meth:`~.._step.StepRuntime.finish`: the dedup pointers), and returns the prompt with the
statistics the trace records. Input messages are never mutated; rewritten ones are new
frozen messages, untouched ones are the same objects. A runtime that raises is skipped for
that prompt (fail open). :class:`~.._manager.ContextManager` assembles with the run's
runtimes; :func:`build_prompt` with freshly started ones (a pure function of its arguments).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..._messages import Message
from ..._tokens import TokenCounter
from .._policy import Policy
from .._presets import as_policy
from .._step import Participants, Run, StepRuntime, participants
from ..aging._schedule import AgingSchedule
from ._draft import BuildContext, HistoryFacts, start
from ._types import BuiltPrompt, StepFailure, Summary

__all__ = ["assemble", "build_prompt", "validate_pairs"]


def build_prompt(
    history: Sequence[Message],
    policy: Policy | str,
    *,
    summary: Summary | None,
    counter: TokenCounter,
    facts: HistoryFacts | None = None,
    schedule: AgingSchedule | None = None,
) -> BuiltPrompt:
    """The messages to send for the next model call, and what was done to get them: the policy's
    steps, freshly started (so no state of a run: no dedup pointers), over ``history``.

    ``counter`` is used only by steps that measure the prompt (``Clear``). ``facts``: what the
    caller keeps about the history (otherwise they are found here). ``schedule`` is the run's
    aging schedule (which iterations the ``Age`` step shows aged; None: none). Raises ValueError
    on a summary with an invalid range. A step that raises is skipped (see :func:`assemble`).
    """
    policy = as_policy(policy)
    retrieval = policy.retrieval_active
    context = BuildContext.of(history, summary, counter, retrieval=retrieval, facts=facts, schedule=schedule)
    run = Run(counter, retrieval=retrieval)
    return assemble(context, [step.start(run) for step in policy.steps])


def assemble(
    context: BuildContext,
    runtimes: Sequence[StepRuntime],
    skipped: set[int] | None = None,
    *,
    plan: tuple[Participants, Participants] | None = None,
) -> BuiltPrompt:
    """The prompt the runtimes build over ``context``: each one's ``apply`` in order, then each
    one's ``finish``. A runtime that raises is skipped for the rest of this prompt (its position
    joins ``skipped``, which also names the runtimes to leave out from the start) and its failure
    is on the prompt: the prompt is what the others build without it. ``plan``: the runtimes whose
    ``apply`` and whose ``finish`` do something (:func:`~.._step.participants`; found here if not
    given: a run's manager finds them once)."""
    appliers, finishers = plan or (participants(runtimes, "apply"), participants(runtimes, "finish"))
    failed = skipped if skipped is not None else set()
    failures: list[StepFailure] = []
    draft = start(context)
    for position, runtime in appliers:
        if position not in failed:
            try:
                draft = runtime.apply(draft, context)
            except Exception as exc:  # fail open: the draft the earlier steps left goes on
                failed.add(position)
                failures.append(runtime.failure("apply", exc))
    for position, runtime in finishers:
        if position not in failed:
            try:
                draft = runtime.finish(draft, context)
            except Exception as exc:
                failed.add(position)
                failures.append(runtime.failure("finish", exc))
    built = draft.built(context)
    return dataclasses.replace(built, failures=tuple(failures)) if failures else built


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
