"""One frozen, validated configuration for the whole context pipeline, and named presets."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from .._errors import ConfigurationError

__all__ = ["DEFAULT_PRESET", "PRESETS", "ContextConfig", "preset"]

TruncationMode = Literal["head", "head_tail"]


@dataclass(frozen=True, slots=True)
class ContextConfig:
    """Every knob of the tiered context pipeline. ``None`` switches a step off.

    Tier 1 (no LLM):
      * ``max_output_chars`` / ``max_output_lines``: cut tool outputs longer than this;
        ``truncation_mode`` keeps the ``head`` or the ``head_tail``.
      * ``dedup``: serve identical calls to read-only tools from a bounded cache.
      * ``window_iterations``: show only the last N iterations verbatim.
      * ``window_keep_actions``: iterations covered by the summary keep their assistant
        messages (reasoning and calls); only their outputs become one-line retrieval
        placeholders, and the summary follows them instead of preceding them, so the
        cached prompt prefix survives up to the previous summary's range. Outputs shorter than
        ``elide_min_chars`` stay verbatim: they cost little and often hold what is needed later.
      * ``mask_keep_outputs``: observation masking, keep the last N tool outputs,
        replace older ones with a placeholder.
      * ``clear_trigger_tokens`` / ``clear_keep_outputs``: when the prompt exceeds the
        trigger, clear all tool outputs but the last few (Anthropic's context editing).
    Tier 2:
      * ``summary_every``: queue a rolling summary every N iterations (background);
        ``summary_overlap`` re-summarizes the last K already-covered iterations.
      * ``summary_model``: litellm model for summaries; ``None`` uses the deterministic digest.
      * ``compact_at``: share of the context window at which compaction runs synchronously
        before the call, keeping ``compact_keep_iterations`` verbatim; ``hard_limit``: share
        at which the run stops rather than send the request.
      * ``retrieval``: register ``context_retrieve``; ``retrieve_page_tokens``: its page size.
    """

    name: str = "custom"
    max_output_chars: int | None = 500
    max_output_lines: int | None = None
    truncation_mode: TruncationMode = "head_tail"
    dedup: bool = True
    dedup_cache_size: int = 256
    window_iterations: int | None = 5
    window_keep_actions: bool = False
    elide_min_chars: int = 0
    mask_keep_outputs: int | None = None
    clear_trigger_tokens: int | None = None
    clear_keep_outputs: int = 3
    summary_every: int | None = 10
    summary_overlap: int = 0
    summary_model: str | None = None
    summary_max_tokens: int = 500
    summary_timeout_s: float = 60.0
    compact_at: float | None = 0.70
    compact_keep_iterations: int = 5
    hard_limit: float = 0.95
    context_window: int | None = None  # tokens; None: ask litellm.get_model_info
    retrieval: bool = True
    retrieve_page_tokens: int = 4000

    def __post_init__(self) -> None:
        positive_or_none = (
            "max_output_chars",
            "max_output_lines",
            "window_iterations",
            "mask_keep_outputs",
            "clear_trigger_tokens",
            "summary_every",
            "context_window",
        )
        for name in positive_or_none:
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigurationError(
                    f"ContextConfig.{name} must be a positive integer or None, got {value!r}"
                )
        if self.truncation_mode not in ("head", "head_tail"):
            raise ConfigurationError(
                f"ContextConfig.truncation_mode must be 'head' or 'head_tail', got {self.truncation_mode!r}"
            )
        for name in ("dedup_cache_size", "summary_max_tokens", "retrieve_page_tokens"):
            if getattr(self, name) < 1:
                raise ConfigurationError(f"ContextConfig.{name} must be >= 1")
        for name in ("clear_keep_outputs", "summary_overlap", "compact_keep_iterations", "elide_min_chars"):
            if getattr(self, name) < 0:
                raise ConfigurationError(f"ContextConfig.{name} must be >= 0")
        if self.compact_at is not None and not 0 < self.compact_at < 1:
            raise ConfigurationError("ContextConfig.compact_at must be in (0, 1) or None")
        if not 0 < self.hard_limit <= 1:
            raise ConfigurationError("ContextConfig.hard_limit must be in (0, 1]")
        if self.compact_at is not None and self.compact_at >= self.hard_limit:
            raise ConfigurationError("ContextConfig.compact_at must be below hard_limit")
        if self.summary_timeout_s <= 0:
            raise ConfigurationError("ContextConfig.summary_timeout_s must be > 0")
        if self.summary_every is not None and self.summary_overlap >= self.summary_every:
            raise ConfigurationError("ContextConfig.summary_overlap must be smaller than summary_every")

    @property
    def truncates(self) -> bool:
        return self.max_output_chars is not None or self.max_output_lines is not None

    @property
    def summarizes(self) -> bool:
        return self.summary_every is not None or self.compact_at is not None

    @property
    def retrieval_active(self) -> bool:
        """``context_retrieve`` is registered whenever something can hide history from the model."""
        hides = (
            self.truncates
            or self.window_iterations is not None
            or self.mask_keep_outputs is not None
            or self.clear_trigger_tokens is not None
            or self.summarizes
        )
        return self.retrieval and hides

    def replace(self, **changes: Any) -> ContextConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_FULL = ContextConfig(
    name="full",
    max_output_chars=None,
    dedup=False,
    window_iterations=None,
    summary_every=None,
    compact_at=None,
    retrieval=False,
)

PRESETS: dict[str, ContextConfig] = {
    # Our default, tuned on the replay benchmark (benchmarks/tune_tiered.py, README "Benchmark"):
    # the lowest cached cost at a miss rate no worse than masking. Under prompt caching every
    # rewrite of the prompt's middle re-sends the tail uncached, so the tuned policy hides little
    # and rarely: outputs over 8,000 chars are cut (head+tail), and every 25 iterations the outputs
    # of all but the last iteration are elided behind retrieval placeholders while the agent's own
    # messages (reasoning and calls) stay, followed by the rolling summary.
    "tiered": ContextConfig(
        name="tiered",
        max_output_chars=8000,
        window_iterations=1,
        window_keep_actions=True,
        summary_every=25,
    ),
    # The original TypeScript design's defaults: 500 chars head-only, window 5, summary every 10.
    "kb-labs-adr": ContextConfig(name="kb-labs-adr", truncation_mode="head", compact_at=None),
    # No optimization at all: the baseline.
    "full": _FULL,
    # The peers' published strategies, run on our pipeline as published: none of them has a
    # retrieval tool, so they neither pay for nor benefit from context_retrieve.
    # Observation masking (Lindenbauer et al., "The Complexity Trap"): keep the last 10 outputs.
    "masking": _FULL.replace(name="masking", mask_keep_outputs=10),
    # Anthropic context editing (clear_tool_uses): past 100k input tokens keep the last 3 tool results.
    "anthropic-clear": _FULL.replace(
        name="anthropic-clear", clear_trigger_tokens=100_000, clear_keep_outputs=3
    ),
    # OpenAI Codex CLI: head+tail 10 KiB / 256 lines per output, auto-compaction at 90% of the window.
    "codex": _FULL.replace(
        name="codex",
        max_output_chars=10 * 1024,
        max_output_lines=256,
        truncation_mode="head_tail",
        compact_at=0.90,
        compact_keep_iterations=0,
    ),
    # Google ADK code agents: head+tail 128+128 lines, 10 KiB; compaction at 70% keeping the last 10
    # messages (5 iterations of call + result).
    "adk-code": _FULL.replace(
        name="adk-code",
        max_output_chars=10 * 1024,
        max_output_lines=256,
        truncation_mode="head_tail",
        compact_at=0.70,
        compact_keep_iterations=5,
    ),
    # Google ADK events compaction: summarize every 5 invocations with an overlap of 2.
    "adk-compaction": _FULL.replace(name="adk-compaction", summary_every=5, summary_overlap=2),
}
DEFAULT_PRESET = "tiered"


def preset(name: str) -> ContextConfig:
    """The named preset; raises :class:`ConfigurationError` listing the valid names."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigurationError(
            f"unknown context policy {name!r}; choose one of {', '.join(PRESETS)}"
        ) from None
