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

from dataclasses import dataclass, field
from typing import ClassVar

from ..._messages import Message
from .._memo import run_memo
from .._step import Run, Step, StepRuntime, require
from ..pipeline._draft import BuildContext, Draft, summary_message, with_content
from ..pipeline._tally import common_prefix
from ._mask import output_placeholder

__all__ = ["Elide", "ElideRuntime"]


@dataclass(frozen=True, slots=True)
class Elide(Step):
    """Covered iterations keep their messages; outputs of ``min_chars`` or more become placeholders."""

    kind: ClassVar[str] = "elide"
    hides: ClassVar[bool] = False  # it only changes how a summary's range is shown
    min_chars: int = 0

    def __post_init__(self) -> None:
        ok = isinstance(self.min_chars, int) and self.min_chars >= 0
        require(ok, f"Elide.min_chars must be >= 0, got {self.min_chars!r}")

    def start(self, run: Run) -> ElideRuntime:
        return ElideRuntime(self)

    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        return _elide(self.min_chars, draft, context, _Elided())


@dataclass(slots=True)
class _Elided:
    """The last elision: the covered messages, as shown, and the chars hidden by index. A rolling
    summary's range only grows and the messages it covered before are the same objects, so only
    the newly covered ones are looked at."""

    originals: tuple[Message, ...] = ()
    shown: tuple[Message, ...] = ()
    hidden: dict[int, int] = field(default_factory=dict)


class ElideRuntime(StepRuntime):
    """Elide over one run: the last elision is kept, so each prompt elides only what is new."""

    def __init__(self, step: Elide) -> None:
        super().__init__(step)
        self.min_chars = step.min_chars
        self.last = _Elided()

    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        return _elide(self.min_chars, draft, context, self.last)


def _elide(min_chars: int, draft: Draft, context: BuildContext, last: _Elided) -> Draft:
    summary = context.summary
    if summary is None or not draft.covered:
        return draft
    first, final = min(draft.covered), max(draft.covered)
    at = _position(draft, summary_message(summary, first), context.span(first, final))
    if at is None:  # an earlier step already reshaped the covered range
        return draft
    originals = _covered(context, draft.covered, first, final)
    shown, hidden = _elided(originals, min_chars, context.retrieval, last)
    after = summary_message(summary, final)  # after the covered range
    return draft.splice(at, at + 1, [*shown, after], [*originals, after], hidden, by=Elide.kind)


def _position(draft: Draft, stand_in: Message, span: tuple[int, int] | None) -> int | None:
    """Where the summary stands in the draft (compared in full only for user messages of its iteration)."""
    if span is not None and span[0] < len(draft.messages) and draft.messages[span[0]] is stand_in:
        return span[0]  # where start() put it
    for index, message in enumerate(draft.messages):
        if message.iteration == stand_in.iteration and message.role == "user" and message == stand_in:
            return index
    return None


def _covered(context: BuildContext, covered: frozenset[int], first: int, last: int) -> tuple[Message, ...]:
    """The messages of the covered iterations, in history order."""
    span = context.span(first, last)
    if span is not None:
        return tuple(context.history[span[0] : span[1]])
    return tuple(m for m in context.history if m.iteration in covered)


def _elided(
    originals: tuple[Message, ...], min_chars: int, retrieval: bool, last: _Elided
) -> tuple[tuple[Message, ...], dict[int, int]]:
    """The covered messages as shown (long outputs as placeholders) and, by index, the chars hidden;
    ``last`` (updated) is the previous elision, whose common prefix is reused."""
    shared = common_prefix(last.originals, originals)
    shown = list(last.shown[:shared])
    hidden = {i: chars for i, chars in last.hidden.items() if i < shared}
    for index in range(shared, len(originals)):
        message = originals[index]
        placeholder = _placeholder(message, min_chars, retrieval) if message.role == "tool" else None
        shown.append(message if placeholder is None else placeholder)
        if placeholder is not None:
            hidden[index] = len(message.text) - len(placeholder.text)
    result = tuple(shown)
    last.originals, last.shown, last.hidden = originals, result, hidden
    return result, hidden


@run_memo(8192)
def _placeholder(message: Message, min_chars: int, retrieval: bool) -> Message | None:
    """A tool output of ``min_chars`` or more as its placeholder; None to keep it (it is shorter)."""
    if len(message.text) < min_chars:
        return None
    placeholder = output_placeholder(message.tool_call_id, retrieval=retrieval)
    return None if len(message.text) <= len(placeholder) else with_content(message, placeholder)
