"""Context management: the policies that decide what the model sees.

A :class:`Policy` is a name and an ordered sequence of small steps
(:mod:`tiered_agent.context.steps`); :data:`PRESETS` are the named ones.
``build_prompt`` is the pure pipeline (the steps in order over the full history);
``ContextManager`` is the per-run seam the agent loop and the replay benchmark
share (dedup dispatch, summaries, safety net, counting); ``retrieve`` is what the
``context_retrieve`` tool runs. Names are imported lazily, so the CLI can read the
presets without loading the whole pipeline.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

__all__ = [
    "PRESETS",
    "Age",
    "AgingSchedule",
    "BuiltPrompt",
    "CacheTerms",
    "Clear",
    "Compact",
    "ContextConfig",
    "ContextManager",
    "ContextStats",
    "Dedup",
    "DedupCache",
    "DedupHit",
    "DigestSummarizer",
    "Elide",
    "Epoch",
    "LLMSummarizer",
    "Mask",
    "Policy",
    "PreparedPrompt",
    "RetrievalResult",
    "SentPrompt",
    "SmartSummarizer",
    "Step",
    "Summarize",
    "Summarizer",
    "Summary",
    "Truncate",
    "Truncation",
    "Window",
    "as_policy",
    "build_prompt",
    "digest",
    "make_retrieve_tool",
    "preset",
    "retrieve",
    "truncate_output",
    "validate_pairs",
]

_LOCATIONS = {
    "PRESETS": "._presets",
    "preset": "._presets",
    "as_policy": "._presets",
    "ContextConfig": "._config",
    "Policy": "._policy",
    "DedupCache": "._dedup",
    "DedupHit": "._dedup",
    "digest": "._digest",
    "ContextManager": "._manager",
    "PreparedPrompt": "._manager",
    "build_prompt": "._pipeline",
    "validate_pairs": "._pipeline",
    "RetrievalResult": "._retrieve",
    "make_retrieve_tool": "._retrieve",
    "retrieve": "._retrieve",
    "DigestSummarizer": "._summarizer",
    "LLMSummarizer": "._summarizer",
    "SmartSummarizer": "._summarizer",
    "Summarizer": "._summarizer",
    "truncate_output": ".steps._truncate",
    "AgingSchedule": "._schedule",
    "Epoch": "._schedule",
    "CacheTerms": "._breakeven",
    "BuiltPrompt": "._types",
    "ContextStats": "._types",
    "Summary": "._types",
    "SentPrompt": "._types",
    "Truncation": "._types",
}
_LOCATIONS.update(
    {
        name: ".steps"
        for name in (
            "Age",
            "Clear",
            "Compact",
            "Dedup",
            "Elide",
            "Mask",
            "Step",
            "Summarize",
            "Truncate",
            "Window",
        )
    }
)

if TYPE_CHECKING:
    from ._breakeven import CacheTerms
    from ._config import ContextConfig
    from ._dedup import DedupCache, DedupHit
    from ._digest import digest
    from ._manager import ContextManager, PreparedPrompt
    from ._pipeline import build_prompt, validate_pairs
    from ._policy import Policy
    from ._presets import PRESETS, as_policy, preset
    from ._retrieve import RetrievalResult, make_retrieve_tool, retrieve
    from ._schedule import AgingSchedule, Epoch
    from ._summarizer import DigestSummarizer, LLMSummarizer, SmartSummarizer, Summarizer
    from ._types import BuiltPrompt, ContextStats, SentPrompt, Summary, Truncation
    from .steps import Age, Clear, Compact, Dedup, Elide, Mask, Step, Summarize, Truncate, Window
    from .steps._truncate import truncate_output


__getattr__ = lazy_exports(__name__, _LOCATIONS, globals())
