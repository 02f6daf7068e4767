"""Tier 2 summaries: the summarizers, and the background worker that runs them.

* :class:`DigestSummarizer` wraps the deterministic :func:`~._digest.digest`, the structured
  working memory (no LLM, cannot fail).
* :class:`LLMSummarizer` asks a litellm model for the working memory, riding the agent's own
  cached prompt when it is the same model.
* :class:`SmartSummarizer` runs either in the background, one job at a time, in
  FIFO order, over immutable snapshots of the history, so that the agent never
  waits for a summary unless it must (:meth:`SmartSummarizer.compact_now`).
  A failed or timed-out job never produces a summary: the previous one stays,
  and the next job covers the failed range too.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import structlog

from .._errors import ConfigurationError, ModelError
from .._messages import Message, Usage
from ._digest import MAX_DIGEST_CHARS, digest
from ._memory import prime
from ._memory_render import SECTIONS, header
from ._names import RETRIEVE_TOOL_NAME
from ._types import SentPrompt, Summary

__all__ = [
    "MEMORY_REQUEST",
    "SUMMARY_SYSTEM_PROMPT",
    "DigestSummarizer",
    "LLMSummarizer",
    "SmartSummarizer",
    "Summarizer",
    "SummaryJob",
    "memory_request",
    "render_range",
    "summary_messages",
]

log = structlog.get_logger(__name__)

_GOAL_CHARS = 1_000
_TEXT_CHARS = 2_000
_ARGS_CHARS = 300
_OUTPUT_CHARS = 1_500
_RENDER_CHARS = 48_000

SUMMARY_SYSTEM_PROMPT = """\
You maintain the working memory of an autonomous agent, so that it can continue after older \
iterations are removed from its context. Merge the previous working memory (if any) with the new \
iterations into one updated working memory, as these sections, in this order, each a title line \
followed by "- " items (omit empty sections):
{sections}
Keep exact paths, line numbers, identifiers, ids, amounts, commands, exit codes and test counts; \
drop chit-chat and raw outputs. Reply with the working memory only, starting with "Task:", in at \
most {words} words."""

# Appended to the agent's own last prompt (see LLMSummarizer): the one message that differs.
MEMORY_REQUEST = """\
[Working memory request. This turn is not part of the task: do not call any tool.]
{scope}
{extra}Write it as these sections, in this order, each a title line followed by "- " items (omit \
empty sections):
{sections}
Keep exact paths, line numbers, identifiers, ids, amounts, commands, exit codes and test counts; \
no raw outputs, no chit-chat. Reply with the working memory only, starting with "Task:", in at most \
{words} words."""


class Summarizer(Protocol):
    """Turns a range of iterations (plus the previous summary) into a new rolling summary.

    A summarizer whose ``summarize`` also takes ``prompt`` gets the agent's last prompt
    (:class:`~._types.SentPrompt`, or None before the first one), as :class:`LLMSummarizer` does.
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

    max_chars: int = MAX_DIGEST_CHARS

    def __init__(self, *, max_chars: int = MAX_DIGEST_CHARS) -> None:
        if max_chars < 1:
            raise ConfigurationError(f"DigestSummarizer: max_chars must be >= 1, got {max_chars}")
        self.max_chars = max_chars

    async def summarize(
        self, previous: Summary | None, snapshot: Sequence[Message], first: int, last: int
    ) -> Summary:
        return digest(previous, snapshot, first, last, max_chars=self.max_chars)

    def prime(self, messages: Sequence[Message]) -> None:
        """Parse the messages of one iteration ahead of the summary that will read them."""
        prime(messages)


# --------------------------------------------------------------------------- LLM summarizer
def _clip(text: str, limit: int) -> str:
    """Head and tail of ``text`` when longer than ``limit`` characters."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} chars omitted ...]\n{text[-half:]}"


def _goal(snapshot: Sequence[Message]) -> str | None:
    for message in snapshot:
        if message.iteration == 0 and message.role == "user" and message.text.strip():
            return _clip(message.text.strip(), _GOAL_CHARS)
    return None


def _render_message(message: Message, names: dict[str, str]) -> list[str]:
    prefix = f"[it {message.iteration}]"
    if message.role == "assistant":
        text = message.text.strip()
        lines = [f"{prefix} assistant: {_clip(text, _TEXT_CHARS)}"] if text else []
        for call in message.tool_calls:
            names[call.id] = call.name
            lines.append(f"{prefix} call {call.name} ({call.id}) {_clip(call.arguments, _ARGS_CHARS)}")
        return lines
    if message.role == "tool":
        name = message.name or names.get(message.tool_call_id or "", "tool")
        if name == RETRIEVE_TOOL_NAME:
            return [f"{prefix} {name} result omitted (older history, already covered)"]
        return [f"{prefix} {name} result ({message.tool_call_id}): {_clip(message.text, _OUTPUT_CHARS)}"]
    if message.role == "user":
        return [f"{prefix} user: {_clip(message.text.strip(), _TEXT_CHARS)}"]
    return []  # the system prompt is not part of the work


def render_range(snapshot: Sequence[Message], first: int, last: int, *, limit: int = _RENDER_CHARS) -> str:
    """Iterations ``first..last`` as compact text; outputs clipped, the most recent kept past ``limit``."""
    names: dict[str, str] = {}
    lines: list[str] = []
    for message in snapshot:
        if message.iteration > 0 and first <= message.iteration <= last:  # iteration 0: the goal
            lines.extend(_render_message(message, names))
    text = "\n".join(lines)
    if len(text) > limit:
        text = "[earlier lines omitted]\n" + text[-limit:]
    return text or "(no activity in this range)"


def _words(max_tokens: int) -> int:
    return max(50, int(max_tokens * 0.6))


def _sections() -> str:
    return "\n".join(f"{title}: {what}" for title, what in SECTIONS)


def summary_messages(
    previous: Summary | None, snapshot: Sequence[Message], first: int, last: int, *, max_tokens: int = 500
) -> list[dict[str, str]]:
    """The standalone request asking a model for the updated working memory (no cache to ride)."""
    parts: list[str] = []
    goal = _goal(snapshot)
    if goal:
        parts.append(f"Goal (the task):\n{goal}")
    if previous is not None:
        parts.append(
            f"Previous working memory (iterations {previous.first}-{previous.last}):\n{previous.text}"
        )
    parts.append(f"New iterations {first}-{last}:\n{render_range(snapshot, first, last)}")
    system = SUMMARY_SYSTEM_PROMPT.format(sections=_sections(), words=_words(max_tokens))
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def memory_request(
    prompt: SentPrompt,
    previous: Summary | None,
    snapshot: Sequence[Message],
    first: int,
    last: int,
    *,
    max_tokens: int = 500,
) -> str:
    """The instruction appended to the agent's last prompt: the working memory of ``first..last``.

    What the prompt does not show is added: the previous working memory when the prompt was
    built before it landed, and the iterations of the range it does not hold (with ``keep=0``,
    the newest one). Iterations after ``last`` that it shows are named, to be left out.
    """
    shown = {m.iteration for m in prompt.messages if m.role in ("assistant", "tool")}
    later = len({m.iteration for m in prompt.messages if m.role == "assistant" and m.iteration > last})
    previous_shown = previous is not None and any(previous.text in m.text for m in prompt.messages)
    scope = f"Write the working memory of iterations {first}-{last} of the work above"
    if previous is not None:
        scope = f"Write the working memory of iterations {previous.first}-{last} of the work above"
        if previous_shown:
            shown_range = f"iterations {previous.first}-{previous.last}"
            scope += f", folding in the previous working memory shown above ({shown_range})"
    if later:
        scope += f"; leave out the last {later} assistant turn{'s' if later > 1 else ''} and their results"
    extra: list[str] = []
    if previous is not None and not previous_shown:
        covered = f"iterations {previous.first}-{previous.last}"
        extra.append(f"Previous working memory ({covered}), to fold in:\n{previous.text}")
    missing = {k for k in range(first, last + 1) if k not in shown}
    if missing:
        rendered = render_range([m for m in snapshot if m.iteration in missing], min(missing), max(missing))
        extra.append(f"Iterations not shown above:\n{rendered}")
    return MEMORY_REQUEST.format(
        scope=scope + ".",
        extra="".join(f"{part}\n\n" for part in extra),
        sections=_sections(),
        words=_words(max_tokens),
    )


def _stamped(first: int, last: int, text: str) -> str:
    """The reply under the working memory's range line (a range line of the model's own replaced)."""
    lines = text.strip().splitlines()
    if lines and lines[0].lower().startswith("working memory"):
        lines = lines[1:]
    return "\n".join([header(first, last), *lines]).strip()


def _accepts_prompt(summarizer: Summarizer) -> bool:
    """Whether ``summarizer.summarize`` takes the agent's last prompt (``prompt=``)."""
    try:
        return "prompt" in inspect.signature(summarizer.summarize).parameters
    except (TypeError, ValueError):
        return False


class LLMSummarizer:
    """A rolling working memory written by a litellm model.

    When the agent's last prompt was sent to this same model (``prompt.model == model``),
    the request *is* that prompt, byte for byte (messages and tool schemas), plus one
    instruction message (:func:`memory_request`): the provider serves the prefix from the
    cache the agent's own request just filled, so its input is billed as cache reads.
    What keeps such a request a cache hit:

    * OpenAI caches prompts of 1,024+ tokens automatically; a hit needs an exact prefix
      match, and the cached prefix covers messages *and* tools, so the tool list must be
      identical (https://platform.openai.com/docs/guides/prompt-caching; cookbook
      "Prompt Caching 201").
    * Anthropic caches up to explicit breakpoints, in the order tools → system → messages;
      changing the tools invalidates everything, and changing ``tool_choice`` (or images,
      or thinking parameters) invalidates the message blocks
      (https://platform.claude.com/docs/en/build-with-claude/prompt-caching,
      https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-use-with-prompt-caching).
      So this request sends the same tools and no ``tool_choice``, and puts its
      breakpoints on the system prompt and on the last message of the agent's prompt
      (``index=-2``), where the agent's request wrote the cache: a read, and no write for
      the instruction (Claude Code's compaction does the same).
    * Gemini 2.5+ caches implicitly, best effort, for prompts above a minimum size
      (1,024-4,096 tokens by model), when requests share a prefix within a short time
      (https://ai.google.dev/gemini-api/docs/caching).

    Hence no ``tool_choice`` to forbid tools: a reply that calls a tool is a failed summary
    (:class:`ModelError`; the worker retries at the next trigger and never stores it), as
    are a failed request and an empty reply. Without a prompt from the same model (none
    sent yet, or another model whose cache this one cannot read), the standalone request
    of :func:`summary_messages` is sent instead. ``usage`` counts every request, with the
    provider's cached and cache-write tokens (:func:`~tiered_agent._model.map_usage`).
    Extra keyword arguments go to ``litellm.acompletion`` unchanged (tests pass
    ``mock_response=``); pass the agent model's own (reasoning, thinking) to keep its cache.
    """

    def __init__(
        self,
        model: str,
        *,
        max_tokens: int = 500,
        timeout_s: float = 60.0,
        api_base: str | None = None,
        **completion_kwargs: Any,
    ) -> None:
        if not model:
            raise ConfigurationError("LLMSummarizer needs a model name")
        if max_tokens < 1 or timeout_s <= 0:
            raise ConfigurationError("LLMSummarizer: max_tokens must be >= 1 and timeout_s > 0")
        from .._model import LiteLLMModel, RetryPolicy, needs_cache_breakpoints

        self.model = model
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.api_base = api_base
        self.completion_kwargs = completion_kwargs
        extra = dict(completion_kwargs)
        if needs_cache_breakpoints(model):
            extra.setdefault("cache_control_injection_points", [dict(p) for p in _SUMMARY_BREAKPOINTS])
        # One attempt: a failed summary is retried at the next trigger, not here.
        self._client = LiteLLMModel(
            model,
            api_base=api_base,
            max_tokens=max_tokens,
            timeout_s=timeout_s,
            retry=RetryPolicy(max_attempts=1),
            extra_kwargs=extra,
            cache_breakpoints=False,
        )
        self.usage = Usage()

    def request(
        self,
        previous: Summary | None,
        snapshot: Sequence[Message],
        first: int,
        last: int,
        prompt: SentPrompt | None = None,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The messages and tools this summarizer sends for ``first..last``."""
        if prompt is None or prompt.model != self.model:
            return summary_messages(previous, snapshot, first, last, max_tokens=self.max_tokens), []
        instruction = memory_request(prompt, previous, snapshot, first, last, max_tokens=self.max_tokens)
        messages = [m.to_openai() for m in prompt.messages]
        return [*messages, {"role": "user", "content": instruction}], [dict(t) for t in prompt.tools]

    async def summarize(
        self,
        previous: Summary | None,
        snapshot: Sequence[Message],
        first: int,
        last: int,
        prompt: SentPrompt | None = None,
    ) -> Summary:
        messages, tools = self.request(previous, snapshot, first, last, prompt)
        reply = await self._client.complete(messages, tools)  # ModelError on failure
        self.usage += reply.usage
        if reply.message.tool_calls:
            names = ", ".join(call.name for call in reply.message.tool_calls)
            raise ModelError(
                f"summary model {self.model!r} called a tool ({names}) instead of writing the summary"
            )
        text = reply.message.text.strip()
        if not text:
            raise ModelError(f"summary model {self.model!r} returned an empty reply")
        lo = min(previous.first, first) if previous is not None else first
        usage = reply.usage
        return Summary(
            lo, last, _stamped(lo, last, text), self.model, usage.prompt_tokens, usage.completion_tokens
        )


_SUMMARY_BREAKPOINTS: tuple[dict[str, Any], ...] = (
    {"location": "message", "role": "system"},
    {"location": "message", "index": -2},  # the agent's last message: where its own request wrote the cache
)


# --------------------------------------------------------------------------- background worker
@dataclass(frozen=True, slots=True)
class SummaryJob:
    """One queued request: summarize ``first..last`` of an immutable history snapshot."""

    snapshot: tuple[Message, ...]
    first: int
    last: int
    at_iteration: int
    prompt: SentPrompt | None = None  # the agent's last prompt when the job was queued


class SmartSummarizer:
    """Runs a :class:`Summarizer` off the agent's critical path, one job at a time, FIFO.

    Background mode: the owner starts :meth:`run` in a task group; :meth:`submit`
    queues and returns at once. Inline mode (``background=False``): :meth:`submit`
    only queues and :meth:`run_pending` processes the queue on the spot, so
    summaries land deterministically (replay benchmark, tests).

    Summaries are rolling: each job gets the latest landed summary as
    ``previous`` and starts no later than the iteration after it. A job that
    fails or exceeds ``timeout_s`` is logged and counted in ``failures``; the
    previous summary stays, and the next job also covers the failed range.
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
    ) -> None:
        if timeout_s <= 0:
            raise ConfigurationError(f"SmartSummarizer: timeout_s must be > 0, got {timeout_s}")
        if max_queue < 1:
            raise ConfigurationError(f"SmartSummarizer: max_queue must be >= 1, got {max_queue}")
        self.summarizer = summarizer
        self._takes_prompt = _accepts_prompt(summarizer)
        self.timeout_s = timeout_s
        self.background = background
        self.on_summary = on_summary
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
    ) -> Summary | None:
        """Summarize now (the safety net), after any running job; None when it fails or times out."""
        if first < 0 or last < first:
            raise ValueError(f"invalid summary range {first}..{last}")
        return await self._process(SummaryJob(tuple(snapshot), first, last, at_iteration, prompt))

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
