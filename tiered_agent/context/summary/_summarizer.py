"""What writes a summary: the :class:`Summarizer` protocol, and the deterministic digest as one.

* :class:`DigestSummarizer` wraps the deterministic digest (:func:`~._digest.digest`), the
  structured working memory (no LLM). It imports the working-memory parser only when it first
  summarizes or primes, so that a run that never summarizes never loads it.
* :class:`~._llm.LLMSummarizer` asks a litellm model for the same working memory.
* :class:`~._worker.SmartSummarizer` runs either off the agent's critical path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..._errors import ConfigurationError
from ..._messages import Message
from ..pipeline._types import Summary
from .memory._sections import MAX_MEMORY_CHARS

__all__ = ["DigestSummarizer", "Summarizer"]


class Summarizer(Protocol):
    """Turns a range of iterations (plus the previous summary) into a new rolling summary.

    A summarizer whose ``summarize`` also takes ``prompt`` gets the agent's last prompt
    (:class:`~..pipeline._types.SentPrompt`, or None before the first one), as :class:`LLMSummarizer` does.
    """

    async def summarize(
        self, previous: Summary | None, snapshot: Sequence[Message], first: int, last: int
    ) -> Summary: ...


class DigestSummarizer:
    """The deterministic digest as a :class:`Summarizer` (no model call, no tokens), at most
    ``max_chars`` characters.

    :meth:`prime` parses an iteration's messages as they arrive (memoized), so that a summary
    folds warm facts instead of parsing every new iteration at once.
    """

    max_chars: int = MAX_MEMORY_CHARS

    def __init__(self, *, max_chars: int = MAX_MEMORY_CHARS) -> None:
        if max_chars < 1:
            raise ConfigurationError(f"DigestSummarizer: max_chars must be >= 1, got {max_chars}")
        self.max_chars = max_chars

    async def summarize(
        self, previous: Summary | None, snapshot: Sequence[Message], first: int, last: int
    ) -> Summary:
        from ._digest import digest

        return digest(previous, snapshot, first, last, max_chars=self.max_chars)

    def prime(self, messages: Sequence[Message]) -> None:
        """Parse the messages of one iteration ahead of the summary that will read them."""
        from .memory._fold import prime

        prime(messages)
