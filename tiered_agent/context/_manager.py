"""The context seam: one object the agent loop (and the replay benchmark) asks for every prompt.

It owns the per-run state of the tiers (dedup cache, summarizer worker,
calibration) and delegates the prompt itself to the pure
:func:`~tiered_agent.context._pipeline.build_prompt`. The loop calls, per iteration:

1. :meth:`ContextManager.prepare` — queue a summary when one is due, run the
   safety net (synchronous compaction past ``compact_at`` of the window, refusal
   past ``hard_limit``), build the prompt, count it and the counterfactual;
2. :meth:`dispatch` with each reply's tool calls (dedup cache, batch rules, execution injected);
3. :meth:`observe_usage` with the provider's prompt tokens, to calibrate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup

from .._errors import ContextBudgetExceeded
from .._messages import Message, ToolCall, Usage
from .._tokens import Calibration, TokenCounter
from .._tools import Tool
from .._trace import Event, RetrievalEvent, SummaryEvent
from ._config import ContextConfig
from ._dedup import DedupCache
from ._digest import digest
from ._dispatch import Dispatched, Execute, ToolKind, dispatch_calls
from ._names import RETRIEVE_TOOL_NAME
from ._pipeline import build_prompt
from ._retrieve import make_retrieve_tool
from ._summarizer import DigestSummarizer, LLMSummarizer, SmartSummarizer, Summarizer
from ._types import BuiltPrompt, Summary

__all__ = ["ContextManager", "PreparedPrompt"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class PreparedPrompt:
    """A prompt ready to send, with its local token count and the counterfactual."""

    built: BuiltPrompt
    prompt_tokens: int  # local tokenizer: messages + per-message overhead + tool schemas
    counterfactual_tokens: int  # the same count for the full, unoptimized history
    estimated_tokens: int  # calibrated estimate of what the provider will bill
    compacted: bool = False
    truncated_tokens: int = 0  # tokens the truncation step cut from the outputs shown
    tools: tuple[Mapping[str, Any], ...] = ()  # the tool schemas to send with this prompt

    def record(self) -> dict[str, Any]:
        """What the trace records about this prompt's construction."""
        return self.built.stats.to_dict() | {
            "truncated_tokens": self.truncated_tokens,
            "compacted": self.compacted,
        }

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [m.to_openai() for m in self.built.messages]


class ContextManager:
    """Per-run context state. Use ``async with`` so the background summarizer runs and is awaited."""

    def __init__(
        self,
        config: ContextConfig,
        *,
        counter: TokenCounter,
        context_window: int | None = None,
        summarizer: Summarizer | None = None,
        background: bool = True,
        enforce_hard_limit: bool = True,
        on_event: Callable[[Event], None] | None = None,
    ) -> None:
        self.config = config
        self.counter = counter
        self.context_window = config.context_window or context_window
        self.calibration = Calibration()
        self._summarizer = summarizer
        self._background = background
        self._enforce = enforce_hard_limit
        self._on_event = on_event
        self._dedup = DedupCache(config.dedup_cache_size) if config.dedup else None
        self._smart: SmartSummarizer | None = None
        self._task_group: TaskGroup | None = None
        self._queued_through = 0
        self._fallback: Summary | None = None
        self._iteration = 0

    # ------------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> ContextManager:
        if self.config.summarizes:
            self._smart = SmartSummarizer(
                self._summarizer or self._default_summarizer(),
                timeout_s=self.config.summary_timeout_s,
                background=self._background,
                on_summary=self._summary_landed,
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
            await self._smart.drain(self.config.summary_timeout_s)
        self._smart.close()
        self._task_group.cancel_scope.cancel()
        # The worker is cancelled on purpose; an exception leaving the ``async with``
        # propagates by itself and must not be wrapped in an ExceptionGroup.
        group, self._task_group = self._task_group, None
        await group.__aexit__(None, None, None)

    def _default_summarizer(self) -> Summarizer:
        if self.config.summary_model:
            return LLMSummarizer(
                self.config.summary_model,
                max_tokens=self.config.summary_max_tokens,
                timeout_s=self.config.summary_timeout_s,
            )
        return DigestSummarizer()

    # ------------------------------------------------------------------ tools
    def tools(self, history: Callable[[], Sequence[Message]]) -> list[Tool]:
        """Runtime tools this policy needs: ``context_retrieve`` whenever something is hidden."""
        if not self.config.retrieval_active:
            return []
        return [
            make_retrieve_tool(
                history,
                counter=self.counter,
                page_tokens=self.config.retrieve_page_tokens,
                on_retrieval=self._retrieval_done,
            )
        ]

    # ------------------------------------------------------------------ dedup
    @property
    def dedup_hits(self) -> int:
        return self._dedup.hits if self._dedup else 0

    @property
    def dedup_cache(self) -> DedupCache | None:
        """The run's dedup cache (None when the policy does not deduplicate)."""
        return self._dedup

    async def dispatch(
        self,
        calls: Sequence[ToolCall],
        kind: Callable[[ToolCall], ToolKind],
        execute: Execute,
        *,
        iteration: int,
    ) -> tuple[Dispatched, ...]:
        """Serve one reply's tool calls: :func:`~._dispatch.dispatch_calls` over this run's dedup cache."""
        return await dispatch_calls(self._dedup, calls, kind, execute, iteration=iteration)

    # ------------------------------------------------------------------ prompts
    @property
    def summary(self) -> Summary | None:
        """The newest summary that has landed (background, or from a compaction)."""
        landed = self._smart.latest if self._smart else None
        candidates = [s for s in (landed, self._fallback) if s is not None]
        return max(candidates, key=lambda s: s.last) if candidates else None

    def restore_summary(self, summary: Summary) -> None:
        """Start from a summary recorded earlier (resuming a run from its trace)."""
        self._fallback = summary
        self._queued_through = max(self._queued_through, summary.last)
        if self._smart is not None:
            self._smart.seed(summary)

    @property
    def summary_usage(self) -> Usage:
        """Tokens the summarizer spent so far (0 for the deterministic digest)."""
        return self._smart.usage if self._smart else Usage()

    async def prepare(
        self,
        history: Sequence[Message],
        tool_schemas: Sequence[Mapping[str, Any]] = (),
        *,
        force_compact: bool = False,
    ) -> PreparedPrompt:
        """Build the next prompt from the full ``history`` (see the module docstring)."""
        last = max((m.iteration for m in history), default=0)
        self._iteration = last + 1
        if self._smart is not None and not self._background:
            await self._smart.run_pending()
        self._maybe_queue_summary(history, last)
        prepared = self._build(history, tool_schemas)
        due = force_compact or self._over(prepared.estimated_tokens, self.config.compact_at)
        if due and await self._compact(history, last, emergency=force_compact):
            prepared = self._build(history, tool_schemas, compacted=True)
        if self._enforce and self._over(prepared.estimated_tokens, self.config.hard_limit):
            raise ContextBudgetExceeded(
                f"the next prompt is ~{prepared.estimated_tokens:,} tokens, over "
                f"{self.config.hard_limit:.0%} of the {self.context_window:,}-token context window, "
                "even after compaction; refusing to send it"
            )
        return prepared

    def observe_usage(self, provider_prompt_tokens: int | None, local_prompt_tokens: int) -> None:
        self.calibration.observe(provider_prompt_tokens, local_prompt_tokens)

    def _build(
        self, history: Sequence[Message], tool_schemas: Sequence[Mapping[str, Any]], compacted: bool = False
    ) -> PreparedPrompt:
        built = build_prompt(history, self.config, summary=self.summary, counter=self.counter)
        tools = tuple(tool_schemas)
        local = self.counter.count_prompt(built.messages, tools)
        # The counterfactual is the unmanaged prompt: full history, no context_retrieve schema.
        full = self.counter.count_prompt(history, [t for t in tool_schemas if not _is_retrieve(t)])
        cut = self._truncated_tokens(history, built)
        return PreparedPrompt(built, local, full, self.calibration.estimate(local), compacted, cut, tools)

    def _truncated_tokens(self, history: Sequence[Message], built: BuiltPrompt) -> int:
        ids = {t.tool_call_id for t in built.stats.truncations}
        if not ids:
            return 0
        count = self.counter.count_text
        original = sum(count(m.text) for m in history if m.role == "tool" and m.tool_call_id in ids)
        shown = sum(count(m.text) for m in built.messages if m.role == "tool" and m.tool_call_id in ids)
        return original - shown

    def _over(self, tokens: int, share: float | None) -> bool:
        return share is not None and self.context_window is not None and tokens > share * self.context_window

    # ------------------------------------------------------------------ summaries
    def _covered_through(self) -> int:
        summary = self.summary
        return max(self._queued_through, summary.last if summary else 0)

    def _maybe_queue_summary(self, history: Sequence[Message], last: int) -> None:
        every = self.config.summary_every
        if self._smart is None or every is None or last == 0 or last % every:
            return
        keep = self.config.window_iterations or 0
        through = last - keep
        first = max(1, self._covered_through() + 1 - self.config.summary_overlap)
        if through < first or through <= self._covered_through():
            return
        snapshot = tuple(m for m in history if m.iteration <= through)
        self._smart.submit(snapshot, first, through, at_iteration=last)
        self._queued_through = through

    async def _compact(self, history: Sequence[Message], last: int, *, emergency: bool) -> bool:
        """Summarize synchronously everything but the last ``compact_keep_iterations``."""
        keep = min(
            self.config.compact_keep_iterations, 1 if emergency else self.config.compact_keep_iterations
        )
        through = last - keep
        covered = self.summary.last if self.summary else 0
        if through <= covered:
            return False
        snapshot = tuple(m for m in history if m.iteration <= through)
        summary: Summary | None = None
        if self._smart is not None:
            summary = await self._smart.compact_now(snapshot, covered + 1, through, at_iteration=last)
        if summary is None:  # no summarizer, or it failed: the digest cannot fail
            summary = digest(self.summary, snapshot, covered + 1, through)
            self._summary_landed(summary)
            if self._smart is not None:
                self._smart.seed(summary)
        self._fallback = summary
        self._queued_through = max(self._queued_through, through)
        log.info("context.compacted", through=through, emergency=emergency)
        return True

    def _summary_landed(self, summary: Summary) -> None:
        if self._on_event is not None:
            self._on_event(
                SummaryEvent(
                    first_iteration=summary.first,
                    last_iteration=summary.last,
                    text=summary.text,
                    model=summary.model,
                    input_tokens=summary.input_tokens,
                    output_tokens=summary.output_tokens,
                    created_at_iteration=summary.created_at_iteration,
                )
            )

    def _retrieval_done(self, info: dict[str, Any]) -> None:
        if self._on_event is not None:
            self._on_event(
                RetrievalEvent(
                    iteration=self._iteration,
                    filters=dict(info.get("filters", {})),
                    matched=int(info.get("matched", 0)),
                    page=int(info.get("page", 1)),
                    pages=int(info.get("pages", 1)),
                )
            )


def _is_retrieve(schema: Mapping[str, Any]) -> bool:
    function = schema.get("function")
    return isinstance(function, Mapping) and function.get("name") == RETRIEVE_TOOL_NAME
