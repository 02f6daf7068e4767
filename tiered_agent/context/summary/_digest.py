"""The deterministic digest: the working memory (:mod:`.memory._fold`) of a range of iterations, as a
:class:`~..pipeline._types.Summary`. No model call; the same input gives the same text.

A digest folds on from the previous one when that one holds its working memory and
reaches ``first - 1`` or beyond (an overlap re-covers nothing: the memory of ``1..b``
is the same however it was folded); otherwise it folds the history from the
previous summary's first iteration. When the history no longer holds those iterations (and
the previous summary has no working memory, say an LLM's or one read from a trace),
the previous text is carried as "Earlier". Nothing after ``last`` is ever read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..._messages import Message
from ..pipeline._types import Summary
from .memory._fold import Memory, fold
from .memory._render import render
from .memory._sections import MAX_MEMORY_CHARS
from .memory._text import shorten

__all__ = ["MAX_DIGEST_CHARS", "digest"]

MAX_DIGEST_CHARS = MAX_MEMORY_CHARS
_EARLIER_CHARS = 600


def _previous_task(previous: Summary) -> str:
    for line in previous.text.splitlines():
        if line.startswith("Task: "):
            return line[len("Task: ") :]
    return ""


def _earlier(previous: Summary | None, messages: Sequence[Message], first: int) -> str | None:
    """The previous summary's text, when the history no longer holds the iterations it covers."""
    if previous is None or previous.first >= first:
        return None
    if any(previous.first <= m.iteration < first for m in messages):
        return None
    text = shorten(previous.text.replace("\n", " | "), _EARLIER_CHARS)
    return f"Earlier (iterations {previous.first}-{previous.last}): {text}"


def digest(
    previous: Summary | None,
    messages: Sequence[Message],
    first: int,
    last: int,
    *,
    max_chars: int = MAX_DIGEST_CHARS,
) -> Summary:
    """The working memory of iterations ``first..last`` (``previous.first..last`` when rolling).

    ``messages`` is usually the run's whole history; only iterations up to ``last``
    are read (iteration 0 for the task).
    """
    if first < 0 or last < first:
        raise ValueError(f"invalid digest range {first}..{last}")
    state = previous.state if previous is not None and isinstance(previous.state, Memory) else None
    earlier = None
    if state is not None and first - 1 <= state.last < last:
        # An overlap (first <= state.last) re-covers iterations the memory holds already: fold on.
        memory = fold(state, messages, state.last + 1, last)
    else:
        lo = min(previous.first, first) if previous is not None else first
        memory = fold(None, messages, lo, last)
        earlier = _earlier(previous, messages, first)
        if previous is not None and not memory.task:
            memory = dataclasses.replace(memory, task=_previous_task(previous))
    text = render(memory, max_chars=max_chars, earlier=earlier)
    return Summary(memory.first, last, text, model=None, state=memory)
