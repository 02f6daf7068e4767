"""Context management: the tiers that decide what the model sees.

``build_prompt`` is the pure Tier-1 pipeline (truncation, window, masking); ``ContextManager``
is the per-run seam the agent loop and the replay benchmark share (dedup cache, summaries,
safety net, counting); ``retrieve`` is what the ``context_retrieve`` tool runs.
"""

from ._config import PRESETS, ContextConfig, preset
from ._dedup import DedupCache, DedupHit
from ._digest import digest
from ._manager import ContextManager, PreparedPrompt
from ._pipeline import build_prompt, validate_pairs
from ._retrieve import RetrievalResult, make_retrieve_tool, retrieve
from ._summarizer import DigestSummarizer, LLMSummarizer, SmartSummarizer, Summarizer
from ._truncation import truncate_output
from ._types import BuiltPrompt, ContextStats, Summary, Truncation

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
