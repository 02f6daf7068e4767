"""``ContextConfig``: the flat, one-dataclass way to write a policy, kept as a convenience.

Every knob of the original design in one frozen, validated dataclass; it builds
the equivalent :class:`~._policy.Policy` (:meth:`ContextConfig.to_policy`), in
the canonical step order. ``Agent(context=ContextConfig(...))`` keeps working,
and a grid of candidates is one ``replace`` away (``benchmarks/tune_tiered.py``).
New strategies are steps (:mod:`.steps`), not knobs here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .._errors import ConfigurationError
from ._policy import Policy
from .steps import Clear, Compact, Dedup, Elide, Mask, Step, Summarize, Truncate, Window
from .steps._truncate import TruncationMode

__all__ = ["ContextConfig", "TruncationMode"]

_POSITIVE_OR_NONE = (
    "max_output_chars",
    "max_output_lines",
    "window_iterations",
    "mask_keep_outputs",
    "clear_trigger_tokens",
    "summary_every",
    "context_window",
)
_AT_LEAST_ONE = ("dedup_cache_size", "summary_max_tokens", "retrieve_page_tokens")
_NOT_NEGATIVE = ("clear_keep_outputs", "summary_overlap", "compact_keep_iterations", "elide_min_chars")


@dataclass(frozen=True, slots=True)
class ContextConfig:
    """Every knob of the context pipeline in one place. ``None`` switches a step off.

    * ``max_output_chars`` / ``max_output_lines`` / ``truncation_mode``: :class:`~.steps.Truncate`.
    * ``dedup`` / ``dedup_cache_size``: :class:`~.steps.Dedup`.
    * ``window_iterations``: the last N iterations verbatim; with summaries it is
      :class:`~.steps.Summarize`'s ``keep``, without them a :class:`~.steps.Window`.
    * ``window_keep_actions`` / ``elide_min_chars``: :class:`~.steps.Elide`.
    * ``mask_keep_outputs``: :class:`~.steps.Mask`.
    * ``clear_trigger_tokens`` / ``clear_keep_outputs``: :class:`~.steps.Clear`.
    * ``summary_every`` / ``summary_overlap``: :class:`~.steps.Summarize`.
    * ``compact_at`` / ``compact_keep_iterations``: :class:`~.steps.Compact` (the keep
      only matters with ``compact_at``).
    * the rest are the policy's run settings (:class:`~._policy.Policy`).
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
        _check_counts(self)
        _check_shares(self)

    @property
    def truncates(self) -> bool:
        return self.max_output_chars is not None or self.max_output_lines is not None

    @property
    def summarizes(self) -> bool:
        return self.summary_every is not None or self.compact_at is not None

    @property
    def retrieval_active(self) -> bool:
        return self.to_policy().retrieval_active

    def replace(self, **changes: Any) -> ContextConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_policy(self) -> Policy:
        """The equivalent policy: its steps in the canonical order, the same run settings."""
        return Policy(
            self.name,
            _steps(self),
            summary_model=self.summary_model,
            summary_max_tokens=self.summary_max_tokens,
            summary_timeout_s=self.summary_timeout_s,
            hard_limit=self.hard_limit,
            context_window=self.context_window,
            retrieval=self.retrieval,
            retrieve_page_tokens=self.retrieve_page_tokens,
        )


def _steps(c: ContextConfig) -> tuple[Step, ...]:
    """The steps in the canonical order: run-time steps, then layout, hiding, cutting, clearing."""
    steps: list[Step] = []
    if c.dedup:
        steps.append(Dedup(c.dedup_cache_size))
    if c.summary_every is not None:
        steps.append(Summarize(c.summary_every, c.window_iterations or 0, c.summary_overlap))
    if c.compact_at is not None:
        steps.append(Compact(c.compact_at, c.compact_keep_iterations))
    if c.window_keep_actions:
        steps.append(Elide(c.elide_min_chars))
    if c.window_iterations is not None and not c.summarizes:
        steps.append(Window(c.window_iterations))
    if c.mask_keep_outputs is not None:
        steps.append(Mask(c.mask_keep_outputs))
    if c.truncates:
        steps.append(Truncate(c.max_output_chars, c.max_output_lines, c.truncation_mode))
    if c.clear_trigger_tokens is not None:
        steps.append(Clear(c.clear_trigger_tokens, c.clear_keep_outputs))
    return tuple(steps)


def _check_counts(config: ContextConfig) -> None:
    for name in _POSITIVE_OR_NONE:
        value = getattr(config, name)
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ConfigurationError(
                f"ContextConfig.{name} must be a positive integer or None, got {value!r}"
            )
    for name in _AT_LEAST_ONE:
        if getattr(config, name) < 1:
            raise ConfigurationError(f"ContextConfig.{name} must be >= 1")
    for name in _NOT_NEGATIVE:
        if getattr(config, name) < 0:
            raise ConfigurationError(f"ContextConfig.{name} must be >= 0")
    if config.truncation_mode not in ("head", "head_tail"):
        raise ConfigurationError(
            f"ContextConfig.truncation_mode must be 'head' or 'head_tail', got {config.truncation_mode!r}"
        )


def _check_shares(config: ContextConfig) -> None:
    if config.compact_at is not None and not 0 < config.compact_at < 1:
        raise ConfigurationError("ContextConfig.compact_at must be in (0, 1) or None")
    if not 0 < config.hard_limit <= 1:
        raise ConfigurationError("ContextConfig.hard_limit must be in (0, 1]")
    if config.compact_at is not None and config.compact_at >= config.hard_limit:
        raise ConfigurationError("ContextConfig.compact_at must be below hard_limit")
    if config.summary_timeout_s <= 0:
        raise ConfigurationError("ContextConfig.summary_timeout_s must be > 0")
    if config.summary_every is not None and config.summary_overlap >= config.summary_every:
        raise ConfigurationError("ContextConfig.summary_overlap must be smaller than summary_every")
