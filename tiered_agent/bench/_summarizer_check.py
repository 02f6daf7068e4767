"""The bench's LLM summarizer, watched: a summary that never comes stops the bench.

A policy that summarizes saves tokens because its summaries stand in for the iterations they
cover. If ``--summary-model`` cannot answer (an unknown model, no key, a provider that times out),
the replay would go on without summaries and report savings the policy never had (issue 16:
``kb-labs-adr`` "saved" 21.3% with zero summaries). :class:`CheckedSummarizer` records the first
failure, and :meth:`~CheckedSummarizer.check` (called after each replayed step) turns it into
:class:`SummaryModelFailed`: one sentence, the bench exits 1 and writes no numbers.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._errors import TieredAgentError
from .._messages import Message
from ..context.pipeline._types import SentPrompt, Summary
from ..context.summary._llm import LLMSummarizer

__all__ = ["CheckedSummarizer", "SummaryModelFailed"]


class SummaryModelFailed(TieredAgentError):
    """The bench's summary model failed; its policies' numbers would be invalid."""


class CheckedSummarizer(LLMSummarizer):
    """An :class:`LLMSummarizer` that remembers why its first summary failed (an error, a timeout,
    an empty text)."""

    failure: str | None = None

    async def summarize(
        self,
        previous: Summary | None,
        snapshot: Sequence[Message],
        first: int,
        last: int,
        prompt: SentPrompt | None = None,
    ) -> Summary:
        try:
            summary = await super().summarize(previous, snapshot, first, last, prompt=prompt)
        except BaseException as exc:  # a timeout cancels it: recorded, then passed on unchanged
            self.failure = self.failure or (_reason(exc) if isinstance(exc, Exception) else "it timed out")
            raise
        if not summary.text.strip():
            self.failure = self.failure or "it returned an empty summary"
        return summary

    def check(self, policy: str) -> None:
        """Raise :class:`SummaryModelFailed` if a summary failed (see the module docstring)."""
        if self.failure is not None:
            raise SummaryModelFailed(
                f"--summary-model {self.model!r} could not summarize ({self.failure}), so the numbers "
                f"of {policy!r} would claim savings its summaries never made; fix the model name or its "
                "key, or use --summary-model digest"
            )


def _reason(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    text = text if len(text) <= 200 else text[:197] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
