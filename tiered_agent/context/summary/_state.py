"""The run's summary state, in one place: the latest summary, what is queued, the worker that writes them.

Every run has one (the manager makes it): the prompt starts from its latest summary, and a
provider's context-window error compacts through it whatever the policy. The steps that
summarize drive it from their runtimes: :class:`~._summarize.Summarize` queues rolling
summaries, :class:`~._compact.Compact` compacts on the spot. This object owns the background
:class:`~._worker.SmartSummarizer` (an LLM or the deterministic digest; started only when a
step needs it), knows the newest summary that landed (from the worker, a compaction or a
resumed trace) and how far summaries are queued, and reports every summary that lands and
every one that failed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType

import anyio
import structlog
from anyio.abc import TaskGroup

from ..._messages import Message, Usage
from ..._trace import Event, SummaryEvent
from ..pipeline._types import SentPrompt, Summary
from ._llm import LLMSummarizer
from ._summarizer import DigestSummarizer, Summarizer
from ._worker import SmartSummarizer, SummaryJob

__all__ = ["Summaries", "SummarySettings"]

log = structlog.get_logger(__name__)

CHARS_PER_TOKEN = 4  # the digest's character bound per token of the policy's summary budget


@dataclass(frozen=True, slots=True)
class SummarySettings:
    """The policy's summary settings: who writes summaries (``model``: a litellm model; None: the
    deterministic digest), within ``max_tokens`` and ``timeout_s``; ``worker``: a step of the
    policy summarizes, so the background worker runs."""

    model: str | None = None
    max_tokens: int = 500
    timeout_s: float = 60.0
    worker: bool = False


class Summaries:
    """Summary state of one run. Use ``async with`` so the background worker runs and is awaited."""

    def __init__(
        self,
        settings: SummarySettings = SummarySettings(),
        *,
        summarizer: Summarizer | None = None,
        background: bool = True,
        on_summary: Callable[[Summary], None] | None = None,
        on_failure: Callable[[str, Exception], None] | None = None,
    ) -> None:
        """``on_failure(step kind, exception)``: a summary job raised (it never becomes a summary)."""
        self.settings = settings
        self._summarizer = summarizer
        self._background = background
        self._on_summary = on_summary
        self._on_failure = on_failure
        self._smart: SmartSummarizer | None = None
        self._task_group: TaskGroup | None = None
        self._queued_through = 0
        self._fallback: Summary | None = None  # from a compaction or a resumed trace

    # ------------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> Summaries:
        if self.settings.worker:
            failure = self._on_failure
            self._smart = SmartSummarizer(
                self._summarizer or self._default_summarizer(),
                timeout_s=self.settings.timeout_s,
                background=self._background,
                # the callbacks, not methods of this object: the worker it holds would hold it back
                # (a reference cycle, freed only by the cycle collector)
                on_summary=self._on_summary,
                on_failure=None if failure is None else functools.partial(_job_failed, failure),
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
            await self._smart.drain(self.settings.timeout_s)
        self._smart.close()
        self._task_group.cancel_scope.cancel()
        # The worker is cancelled on purpose; an exception leaving the ``async with``
        # propagates by itself and must not be wrapped in an ExceptionGroup.
        group, self._task_group = self._task_group, None
        await group.__aexit__(None, None, None)

    def _default_summarizer(self) -> Summarizer:
        settings = self.settings
        if settings.model:
            return LLMSummarizer(settings.model, max_tokens=settings.max_tokens, timeout_s=settings.timeout_s)
        return DigestSummarizer(max_chars=self._digest_chars)

    # ------------------------------------------------------------------ state
    @property
    def _digest_chars(self) -> int:
        """The digest's bound: the policy's summary budget (``max_tokens``) in characters."""
        return self.settings.max_tokens * CHARS_PER_TOKEN

    @property
    def latest(self) -> Summary | None:
        """The newest summary that has landed (background, compaction, or resumed)."""
        landed = self._smart.latest if self._smart is not None else None
        fallback = self._fallback
        if landed is None or fallback is None:
            return fallback if landed is None else landed
        return fallback if fallback.last > landed.last else landed  # max() keeps the first of equals

    @property
    def usage(self) -> Usage:
        """Tokens the summarizer spent so far (0 for the deterministic digest)."""
        return self._smart.usage if self._smart else Usage()

    @property
    def covered_through(self) -> int:
        """The last iteration a summary covers or was queued for."""
        latest = self.latest
        return max(self._queued_through, latest.last if latest else 0)

    def restore(self, events: Sequence[Event]) -> None:
        """Start from the newest summary a run's trace recorded (resuming it)."""
        recorded = [e for e in events if isinstance(e, SummaryEvent)]
        newest = max(recorded, key=lambda e: e.last_iteration, default=None)
        if newest is not None:
            self.adopt(
                Summary(
                    newest.first_iteration,
                    newest.last_iteration,
                    newest.text,
                    newest.model,
                    newest.input_tokens,
                    newest.output_tokens,
                    newest.created_at_iteration,
                )
            )

    def adopt(self, summary: Summary) -> None:
        """Start from a summary made elsewhere (a resumed trace)."""
        self._fallback = summary
        self._queued_through = max(self._queued_through, summary.last)
        if self._smart is not None:
            self._smart.seed(summary)

    # ------------------------------------------------------------------ rolling summaries
    async def land(self) -> None:
        """Inline mode (the replay): write the queued summaries now."""
        if self._smart is not None and not self._background:
            await self._smart.run_pending()

    @property
    def primes(self) -> bool:
        """Whether :meth:`prime` does anything: a digest writes the summaries in the background.

        Priming only moves the digest's parsing earlier, to spread it over the iterations while
        the agent waits on its model; inline (the replay, a session) a summary is written on the
        spot anyway, and priming would only parse the iterations no summary ever covers (the
        last ones of every run)."""
        smart = self._smart
        return smart is not None and self._background and isinstance(smart.summarizer, DigestSummarizer)

    def prime(self, messages: Sequence[Message]) -> None:
        """Let a background digest parse one iteration's messages as they arrive (see :attr:`primes`)."""
        smart = self._smart
        if smart is not None and self._background and isinstance(smart.summarizer, DigestSummarizer):
            smart.summarizer.prime(messages)

    def queue(
        self, history: Sequence[Message], first: int, through: int, *, at: int, prompt: SentPrompt | None
    ) -> None:
        """Queue a rolling summary of ``first..through`` (``prompt``: the agent's last one, for a
        summarizer that rides its cache); it lands before a later prompt."""
        if self._smart is None:
            return
        snapshot = tuple(m for m in history if m.iteration <= through)
        self._smart.submit(snapshot, first, through, at_iteration=at, prompt=prompt)
        self._queued_through = through

    # ------------------------------------------------------------------ compaction
    async def compact(
        self,
        history: Sequence[Message],
        last: int,
        *,
        keep: int,
        emergency: bool,
        prompt: SentPrompt | None = None,
        by: str = "compact",
    ) -> bool:
        """Summarize synchronously all but the last ``keep`` iterations; False if nothing to do."""
        through = last - keep
        latest = self.latest
        covered = latest.last if latest else 0
        if through <= covered:
            return False
        snapshot = tuple(m for m in history if m.iteration <= through)
        summary: Summary | None = None
        if self._smart is not None:
            summary = await self._smart.compact_now(
                snapshot, covered + 1, through, at_iteration=last, prompt=prompt, by=by
            )
        if summary is None:  # no summarizer, or it failed: the deterministic digest
            from ._digest import digest  # the working-memory parser, loaded only when it is needed

            summary = digest(self.latest, snapshot, covered + 1, through, max_chars=self._digest_chars)
            self._landed(summary)
            if self._smart is not None:
                self._smart.seed(summary)
        self._fallback = summary
        self._queued_through = max(self._queued_through, through)
        log.info("context.compacted", through=through, emergency=emergency)
        return True

    # ------------------------------------------------------------------ reports
    def _landed(self, summary: Summary) -> None:
        if self._on_summary is not None:
            self._on_summary(summary)


def _job_failed(on_failure: Callable[[str, Exception], None], job: SummaryJob, exc: Exception) -> None:
    """A summary job raised: reported as the step kind that asked for it."""
    on_failure(job.by, exc)
