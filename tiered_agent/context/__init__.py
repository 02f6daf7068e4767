"""Context management: the tiers that decide what the model sees.

``build_prompt`` is the pure Tier-1 pipeline (truncation, window, masking); ``ContextManager``
is the per-run seam the agent loop and the replay benchmark share (dedup cache, summaries,
safety net, counting); ``retrieve`` is what the ``context_retrieve`` tool runs. Names are
imported lazily, so the CLI can read the presets without loading the whole pipeline.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

__all__ = [
    "PRESETS",
    "BuiltPrompt",
    "ContextConfig",
    "ContextManager",
    "ContextStats",
    "DedupCache",
    "DedupHit",
    "DigestSummarizer",
    "LLMSummarizer",
    "PreparedPrompt",
    "RetrievalResult",
    "SmartSummarizer",
    "Summarizer",
    "Summary",
    "Truncation",
    "build_prompt",
    "digest",
    "make_retrieve_tool",
    "preset",
    "retrieve",
    "truncate_output",
    "validate_pairs",
]

_LOCATIONS = {
    "PRESETS": "._config",
    "ContextConfig": "._config",
    "preset": "._config",
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
    "truncate_output": "._truncation",
    "BuiltPrompt": "._types",
    "ContextStats": "._types",
    "Summary": "._types",
    "Truncation": "._types",
}

if TYPE_CHECKING:
    from ._config import PRESETS, ContextConfig, preset
    from ._dedup import DedupCache, DedupHit
    from ._digest import digest
    from ._manager import ContextManager, PreparedPrompt
    from ._pipeline import build_prompt, validate_pairs
    from ._retrieve import RetrievalResult, make_retrieve_tool, retrieve
    from ._summarizer import DigestSummarizer, LLMSummarizer, SmartSummarizer, Summarizer
    from ._truncation import truncate_output
    from ._types import BuiltPrompt, ContextStats, Summary, Truncation


__getattr__ = lazy_exports(__name__, _LOCATIONS, globals())
