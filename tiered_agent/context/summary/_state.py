"""The run's summary state, in one place: the latest summary, what is queued, the worker that writes them.

A policy's :class:`~.steps.Summarize` decides when a rolling summary is due and
what it covers; :class:`~.steps.Compact` when the run must summarize on the
spot. This object does it: it owns the background
:class:`~._summarizer.SmartSummarizer` (an LLM or the deterministic digest),
knows the newest summary that landed (from the worker, a compaction or a
resumed trace) and how far summaries are queued, and reports every summary
that lands.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import TracebackType

import anyio
import structlog
from anyio.abc import TaskGroup

from ..._messages import Message, Usage
from .._policy import Policy
from ..pipeline._types import SentPrompt, Summary
from ..steps import Compact, Summarize
from ._compact import compaction_keep
from ._llm import LLMSummarizer
from ._summarizer import DigestSummarizer, Summarizer
from ._worker import SmartSummarizer

__all__ = ["Summaries"]

log = structlog.get_logger(__name__)

CHARS_PER_TOKEN = 4  # the digest's character bound per token of the policy's summary budget


class Summaries:
    """Summary state of one run. Use ``async with`` so the background worker runs and is awaited."""

    def __init__(
        self,
        policy: Policy,
        *,
        summarizer: Summarizer | None = None,
        background: bool = True,
        on_summary: Callable[[Summary], None] | None = None,
    ) -> None:
        self.policy = policy
        self._summarize = policy.find(Summarize)
        self._compact = policy.find(Compact)
        self._summarizer = summarizer
        self._background = background
        self._on_summary = on_summary
        self._smart: SmartSummarizer | None = None
        self._task_group: TaskGroup | None = None
        self._queued_through = 0
        self._fallback: Summary | None = None  # from a compaction or a resumed trace

    # ------------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> Summaries:
        if self.policy.summarizes:
            self._smart = SmartSummarizer(
                self._summarizer or self._default_summarizer(),
                timeout_s=self.policy.summary_timeout_s,
                background=self._background,
                on_summary=self._landed,
            )
            if self._background:
                self._task_group = anyio.create_task_group()
                await self._task_group.__aenter__()
                self._task_group.start_soon(self._smart.run)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._smart is None:
            return
        if self._task_group is None:  # inline mode: nothing runs in the background
            self._smart.close()
            return
        if exc is None:
            await self._smart.drain(self.policy.summary_timeout_s)
        self._smart.close()
        self._task_group.cancel_scope.cancel()
        # The worker is cancelled on purpose; an exception leaving the ``async with``
        # propagates by itself and must not be wrapped in an ExceptionGroup.
        group, self._task_group = self._task_group, None
        await group.__aexit__(None, None, None)

    def _default_summarizer(self) -> Summarizer:
        if self.policy.summary_model:
            return LLMSummarizer(
                self.policy.summary_model,
                max_tokens=self.policy.summary_max_tokens,
                timeout_s=self.policy.summary_timeout_s,
            )
        return DigestSummarizer(max_chars=self._digest_chars)

    # ------------------------------------------------------------------ state
    @property
    def _digest_chars(self) -> int:
        """The digest's bound: the policy's summary budget (``summary_max_tokens``) in characters."""
        return self.policy.summary_max_tokens * CHARS_PER_TOKEN

    @property
    def latest(self) -> Summary | None:
        """The newest summary that has landed (background, compaction, or resumed)."""
        landed = self._smart.latest if self._smart else None
        candidates = [s for s in (landed, self._fallback) if s is not None]
        return max(candidates, key=lambda s: s.last) if candidates else None

    @property
    def usage(self) -> Usage:
        """Tokens the summarizer spent so far (0 for the deterministic digest)."""
        return self._smart.usage if self._smart else Usage()

    def restore(self, summary: Summary) -> None:
        """Start from a summary recorded earlier (resuming a run from its trace)."""
        self._fallback = summary
        self._queued_through = max(self._queued_through, summary.last)
        if self._smart is not None:
            self._smart.seed(summary)

    def _covered_through(self) -> int:
        latest = self.latest
        return max(self._queued_through, latest.last if latest else 0)

    # ------------------------------------------------------------------ per prompt
    async def before_prompt(
        self,
        history: Sequence[Message],
        last: int,
        *,
        prompt: SentPrompt | None = None,
        aged_through: int | None = None,
    ) -> None:
        """Land what inline mode queued, then queue a rolling summary if :class:`Summarize` says so
        (with ``prompt``, the agent's last one, for a summarizer that rides its cache;
        ``aged_through``: the policy ages iterations, and these have aged; see ``due_aged``)."""
        if self._smart is not None and not self._background:
            await self._smart.run_pending()
        if self._smart is None or self._summarize is None:
            return
        if isinstance(self._smart.summarizer, DigestSummarizer):
            self._smart.summarizer.prime(_newest(history, last))  # spread the parsing over the iterations
        covered = self._covered_through()
        if aged_through is None:
            due = self._summarize.due(last, covered)
        else:
            due = self._summarize.due_aged(aged_through, covered)
        if due is None:
            return
        first, through = due
        snapshot = tuple(m for m in history if m.iteration <= through)
        self._smart.submit(snapshot, first, through, at_iteration=last, prompt=prompt)
        self._queued_through = through

    def compaction_due(self, tokens: int, context_window: int | None) -> bool:
        """Whether :class:`Compact` wants a prompt of ``tokens`` compacted first."""
        return self._compact is not None and self._compact.due(tokens, context_window)

    async def compact(
        self, history: Sequence[Message], last: int, *, emergency: bool, prompt: SentPrompt | None = None
    ) -> bool:
        """Summarize synchronously all but the iterations the compaction keeps; False if nothing to do."""
        through = last - compaction_keep(self._compact, emergency=emergency)
        latest = self.latest
        covered = latest.last if latest else 0
        if through <= covered:
            return False
        snapshot = tuple(m for m in history if m.iteration <= through)
        summary: Summary | None = None
        if self._smart is not None:
            summary = await self._smart.compact_now(
                snapshot, covered + 1, through, at_iteration=last, prompt=prompt
            )
        if summary is None:  # no summarizer, or it failed: the digest cannot fail
            from ._digest import digest  # the working-memory parser, loaded only when it is needed

            summary = digest(self.latest, snapshot, covered + 1, through, max_chars=self._digest_chars)
            self._landed(summary)
            if self._smart is not None:
                self._smart.seed(summary)
        self._fallback = summary
        self._queued_through = max(self._queued_through, through)
        log.info("context.compacted", through=through, emergency=emergency)
        return True

    def _landed(self, summary: Summary) -> None:
        if self._on_summary is not None:
            self._on_summary(summary)


def _newest(history: Sequence[Message], last: int) -> list[Message]:
    """The messages of iteration ``last`` (at the end of the history)."""
    newest: list[Message] = []
    for message in reversed(history):
        if message.iteration < last:
            break
        newest.append(message)
    return newest[::-1]
