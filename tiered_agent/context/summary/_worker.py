"""The background summary worker: one job at a time, FIFO, over frozen snapshots of the history.

:class:`SmartSummarizer` runs a :class:`~._summarizer.Summarizer` (an LLM or the deterministic
digest) off the agent's critical path, so that the agent never waits for a summary unless it
must (:meth:`SmartSummarizer.compact_now`). A failed or timed-out job never produces a summary:
the previous one stays, the failure is reported (``on_failure``), and the next job covers the
failed range too.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import structlog

from ..._errors import ConfigurationError, ModelError
from ..._messages import Message, Usage
from ..pipeline._types import SentPrompt, Summary
from ._summarizer import Summarizer

__all__ = ["SmartSummarizer", "SummaryJob"]

log = structlog.get_logger(__name__)


def _accepts_prompt(summarizer: Summarizer) -> bool:
    """Whether ``summarizer.summarize`` takes the agent's last prompt (``prompt=``). Read once per
    :class:`SmartSummarizer`, at its first job (``inspect.signature`` costs ~20 µs, and most
    summarizers of a replayed run never get a job: 1,307 of 1,716 on ``../shared/trajectories``)."""
    try:
        return "prompt" in inspect.signature(summarizer.summarize).parameters
    except (TypeError, ValueError):
        return False


# --------------------------------------------------------------------------- background worker
@dataclass(frozen=True, slots=True)
class SummaryJob:
    """One queued request: summarize ``first..last`` of an immutable history snapshot."""

    snapshot: tuple[Message, ...]
    first: int
    last: int
    at_iteration: int
    prompt: SentPrompt | None = None  # the agent's last prompt when the job was queued
    by: str = "summarize"  # the kind of the step that asked for it


class SmartSummarizer:
    """Runs a :class:`Summarizer` off the agent's critical path, one job at a time, FIFO.

    Background mode: the owner starts :meth:`run` in a task group; :meth:`submit`
    queues and returns at once. Inline mode (``background=False``): :meth:`submit`
    only queues and :meth:`run_pending` processes the queue on the spot, so
    summaries land deterministically (replay benchmark, tests).

    Summaries are rolling: each job gets the latest landed summary as
    ``previous`` and starts no later than the iteration after it. A job that
    fails or exceeds ``timeout_s`` is logged, counted in ``failures`` and reported
    (``on_failure``); the previous summary stays, and the next job also covers the
    failed range.
    When the bounded queue is full, the queued jobs are coalesced into the new
    one (its snapshot holds all their iterations).
    """

    def __init__(
        self,
        summarizer: Summarizer,
        *,
        timeout_s: float = 60.0,
        background: bool = True,
        max_queue: int = 8,
        on_summary: Callable[[Summary], None] | None = None,
        on_failure: Callable[[SummaryJob, Exception], None] | None = None,
    ) -> None:
        if timeout_s <= 0:
            raise ConfigurationError(f"SmartSummarizer: timeout_s must be > 0, got {timeout_s}")
        if max_queue < 1:
            raise ConfigurationError(f"SmartSummarizer: max_queue must be >= 1, got {max_queue}")
        self.summarizer = summarizer
        self._takes_prompt: bool | None = None  # _accepts_prompt(summarizer), read at the first job
        self.timeout_s = timeout_s
        self.background = background
        self.on_summary = on_summary
        self.on_failure = on_failure
        self.latest: Summary | None = None
        self.failures = 0
        self.completed = 0
        self.coalesced = 0
        self.dropped = 0
        self._send, self._receive = anyio.create_memory_object_stream[SummaryJob](max_queue)
        self._lock = anyio.Lock()
        self._retry_first: int | None = None
        self._outstanding = 0  # queued or running jobs
        self._progress: anyio.Event | None = None
        self._scope: anyio.CancelScope | None = None
        self._closed = False
        self._landed_usage = Usage()

    # ------------------------------------------------------------------ state
    @property
    def pending(self) -> int:
        """Jobs queued or running."""
        return self._outstanding

    @property
    def retry_from(self) -> int | None:
        """First iteration of a failed range the next job will cover too (None: nothing to retry)."""
        return self._retry_first

    @property
    def usage(self) -> Usage:
        """Summarizer tokens: the summarizer's own ``usage`` when it keeps one, else the landed summaries'."""
        own = getattr(self.summarizer, "usage", None)
        return own if isinstance(own, Usage) else self._landed_usage

    # ------------------------------------------------------------------ queueing
    def submit(
        self,
        snapshot: tuple[Message, ...],
        first: int,
        last: int,
        at_iteration: int,
        *,
        prompt: SentPrompt | None = None,
    ) -> None:
        """Queue a job over an immutable snapshot (and the agent's last prompt); returns at once."""
        if self._closed:
            raise RuntimeError("SmartSummarizer is closed")
        if first < 0 or last < first:
            raise ValueError(f"invalid summary range {first}..{last}")
        job = SummaryJob(tuple(snapshot), first, last, at_iteration, prompt)
        try:
            self._send.send_nowait(job)
        except anyio.WouldBlock:
            job = self._coalesce(job)
            self._send.send_nowait(job)
        except anyio.BrokenResourceError:
            raise RuntimeError("SmartSummarizer's worker has stopped") from None
        self._outstanding += 1

    def _coalesce(self, job: SummaryJob) -> SummaryJob:
        first = job.first
        merged = 0
        while True:
            try:
                queued = self._receive.receive_nowait()
            except anyio.WouldBlock:
                break
            first = min(first, queued.first)
            merged += 1
        self._outstanding -= merged
        self.coalesced += merged
        log.info("summary_jobs_coalesced", merged=merged, first=first, last=job.last)
        return dataclasses.replace(job, first=first)

    def _job_done(self) -> None:
        self._outstanding -= 1
        if self._progress is not None:
            self._progress.set()
            self._progress = None

    async def _wait_progress(self) -> None:
        if self._progress is None:
            self._progress = anyio.Event()
        await self._progress.wait()

    # ------------------------------------------------------------------ processing
    async def run(self) -> None:
        """The background worker: process queued jobs until :meth:`close` (or cancellation)."""
        if not self.background:
            raise RuntimeError("SmartSummarizer(background=False) has no worker: call run_pending()")
        if self._scope is not None:
            raise RuntimeError("SmartSummarizer.run() is already running")
        if self._closed:
            return
        self._scope = anyio.CancelScope()
        try:
            with self._scope, self._receive:
                async for job in self._receive:
                    try:
                        await self._process(job)
                    finally:
                        self._job_done()
        finally:
            self._scope = None

    async def run_pending(self) -> int:
        """Inline mode: process every queued job now, in order; returns how many ran."""
        if self.background:
            raise RuntimeError("run_pending() is for SmartSummarizer(background=False)")
        processed = 0
        while True:
            try:
                job = self._receive.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                return processed
            try:
                await self._process(job)
            finally:
                self._job_done()
            processed += 1

    async def compact_now(
        self,
        snapshot: tuple[Message, ...],
        first: int,
        last: int,
        at_iteration: int,
        *,
        prompt: SentPrompt | None = None,
        by: str = "compact",
    ) -> Summary | None:
        """Summarize now (the safety net), after any running job; None when it fails or times out."""
        if first < 0 or last < first:
            raise ValueError(f"invalid summary range {first}..{last}")
        return await self._process(SummaryJob(tuple(snapshot), first, last, at_iteration, prompt, by))

    async def _process(self, job: SummaryJob) -> Summary | None:
        async with self._lock:
            previous = self.latest
            if previous is not None and job.last <= previous.last:
                log.info("summary_job_stale", last=job.last, covered=previous.last)
                return None
            first = job.first if self._retry_first is None else min(job.first, self._retry_first)
            if previous is not None:
                first = min(first, previous.last + 1)
            summary = await self._attempt(previous, job, first)
            if summary is None:
                return None
            return self._land(dataclasses.replace(summary, created_at_iteration=job.at_iteration))

    async def _attempt(self, previous: Summary | None, job: SummaryJob, first: int) -> Summary | None:
        try:
            with anyio.fail_after(self.timeout_s):
                if self._takes_prompt is None:
                    self._takes_prompt = _accepts_prompt(self.summarizer)
                if self._takes_prompt:
                    summarize: Any = self.summarizer.summarize
                    summary: Summary = await summarize(
                        previous, job.snapshot, first, job.last, prompt=job.prompt
                    )
                else:
                    summary = await self.summarizer.summarize(previous, job.snapshot, first, job.last)
            if not summary.text.strip():
                raise ModelError("the summarizer returned an empty summary")
        except Exception as exc:  # TimeoutError included; cancellation (BaseException) propagates
            self.failures += 1
            self._retry_first = first
            log.warning(
                "summary_failed",
                first=first,
                last=job.last,
                error=f"{type(exc).__name__}: {exc}",
                failures=self.failures,
                timeout_s=self.timeout_s,
            )
            if self.on_failure is not None:
                self.on_failure(job, exc)
            return None
        return summary

    def seed(self, summary: Summary) -> None:
        """Adopt a summary made elsewhere (a digest fallback, a resumed trace) as the rolling base."""
        if self.latest is None or summary.last > self.latest.last:
            self.latest = summary
            self._retry_first = None

    def _land(self, summary: Summary) -> Summary:
        self.latest = summary
        self._retry_first = None
        self.completed += 1
        self._landed_usage += Usage(
            prompt_tokens=summary.input_tokens,
            completion_tokens=summary.output_tokens,
            requests=1 if summary.model is not None else 0,
        )
        log.debug("summary_landed", first=summary.first, last=summary.last, chars=len(summary.text))
        if self.on_summary is not None:
            self.on_summary(summary)
        return summary

    # ------------------------------------------------------------------ shutdown
    async def drain(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the queued jobs, then stop the worker; True if all landed."""
        with anyio.move_on_after(timeout_s):
            if self.background:
                while self._outstanding > 0:
                    await self._wait_progress()
            else:
                await self.run_pending()
        done = self._outstanding == 0
        if not done:
            log.warning("summary_drain_timeout", pending=self._outstanding, timeout_s=timeout_s)
        self.close()
        return done

    def close(self) -> None:
        """Stop the worker (cancelling a running job) and drop queued jobs. Idempotent."""
        if self._closed:
            return
        self._closed = True
        dropped = 0
        while True:
            try:
                self._receive.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                break
            dropped += 1
        self._outstanding -= dropped
        self.dropped += dropped
        self._send.close()
        if self._scope is not None:
            self._scope.cancel()
        else:
            self._receive.close()
        if dropped:  # inline mode (replay): a job queued after the last prompt is simply not needed
            (log.warning if self.background else log.info)("summary_jobs_dropped", dropped=dropped)
