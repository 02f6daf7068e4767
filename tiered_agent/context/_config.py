"""``ContextConfig``: the original design's flat knobs, as a thin constructor of a :class:`~._policy.Policy`.

A policy is the one configuration language (an ordered list of steps plus the run's
settings). ``ContextConfig(...)`` is kept for the flat, one-call way of writing the
original design's knobs: it *returns the equivalent Policy*, its steps in the canonical
order, so anything that takes a policy takes it, and each step validates its own value (a
bad knob fails with the step's sentence, e.g. ``Truncate.max_chars must be ...``). ``None``
switches a step off:

=============================================  ==========================================
knobs                                          step
=============================================  ==========================================
``dedup``, ``dedup_cache_size``                ``Dedup``
``summary_every``, ``window_iterations``,      ``Summarize(every, keep=window, overlap)``
``summary_overlap``
``compact_at``, ``compact_keep_iterations``    ``Compact``
``window_keep_actions``, ``elide_min_chars``   ``Elide`` (with summaries)
``window_iterations`` (without summaries)      ``Window``
``mask_keep_outputs``                          ``Mask``
``max_output_chars``, ``max_output_lines``,    ``Truncate``
``truncation_mode``
``clear_trigger_tokens``,                      ``Clear``
``clear_keep_outputs``
=============================================  ==========================================

The rest are the policy's run settings. New strategies are steps, not knobs here.
"""

from __future__ import annotations

from ._policy import Policy
from ._step import Step
from .steps import Clear, Compact, Dedup, Elide, Mask, Summarize, Truncate, Window
from .steps._truncate import TruncationMode

__all__ = ["ContextConfig", "TruncationMode"]


def ContextConfig(
    name: str = "custom",
    *,
    max_output_chars: int | None = 500,
    max_output_lines: int | None = None,
    truncation_mode: TruncationMode = "head_tail",
    dedup: bool = True,
    dedup_cache_size: int = 256,
    window_iterations: int | None = 5,
    window_keep_actions: bool = False,
    elide_min_chars: int = 0,
    mask_keep_outputs: int | None = None,
    clear_trigger_tokens: int | None = None,
    clear_keep_outputs: int = 3,
    summary_every: int | None = 10,
    summary_overlap: int = 0,
    summary_model: str | None = None,
    summary_max_tokens: int = 500,
    summary_timeout_s: float = 60.0,
    compact_at: float | None = 0.70,
    compact_keep_iterations: int = 5,
    hard_limit: float = 0.95,
    context_window: int | None = None,
    retrieval: bool = True,
    retrieve_page_tokens: int = 4000,
) -> Policy:
    """The policy of the original design's flat knobs (the defaults: 500-char outputs, window 5, a
    summary every 10 iterations, compaction at 70%); see the module docstring."""
    summarizes = summary_every is not None or compact_at is not None
    steps: list[Step] = []
    if dedup:
        steps.append(Dedup(dedup_cache_size))
    if summary_every is not None:
        steps.append(Summarize(summary_every, window_iterations or 0, summary_overlap))
    if compact_at is not None:
        steps.append(Compact(compact_at, compact_keep_iterations))
    if window_keep_actions:
        steps.append(Elide(elide_min_chars))
    if window_iterations is not None and not summarizes:
        steps.append(Window(window_iterations))
    if mask_keep_outputs is not None:
        steps.append(Mask(mask_keep_outputs))
    if max_output_chars is not None or max_output_lines is not None:
        steps.append(Truncate(max_output_chars, max_output_lines, truncation_mode))
    if clear_trigger_tokens is not None:
        steps.append(Clear(clear_trigger_tokens, clear_keep_outputs))
    return Policy(
        name,
        tuple(steps),
        summary_model=summary_model,
        summary_max_tokens=summary_max_tokens,
        summary_timeout_s=summary_timeout_s,
        hard_limit=hard_limit,
        context_window=context_window,
        retrieval=retrieval,
        retrieve_page_tokens=retrieve_page_tokens,
    )
