"""Context management: the policies that decide what the model sees.

A :class:`Policy` is a name and an ordered sequence of small steps; :data:`PRESETS` are the
named ones. Each step is frozen settings that start a per-run :class:`StepRuntime`
(``_step``); :class:`ContextManager` is the loop over a run's runtimes that the agent loop and
the replay benchmark share (``_manager``). The folders hold the concepts: ``pipeline/`` (the
draft of a prompt, its build, its values), ``steps/`` (the steps that only reshape the
prompt), ``dedup/``, ``summary/`` (with the working memory), ``aging/``, ``retrieve/``
(``context_retrieve``). ``docs/context.md`` has the layout and how to write a step. Names are
imported lazily, so the CLI can read the presets without loading the whole pipeline.
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
    "Cut",
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
    "Run",
    "SentPrompt",
    "SmartSummarizer",
    "Step",
    "StepFailure",
    "StepRuntime",
    "Summarize",
    "Summarizer",
    "Summary",
    "Truncate",
    "Turn",
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
    "DedupCache": ".dedup._cache",
    "DedupHit": ".dedup._cache",
    "digest": ".summary._digest",
    "ContextManager": "._manager",
    "PreparedPrompt": "._manager",
    "build_prompt": ".pipeline._build",
    "validate_pairs": ".pipeline._build",
    "RetrievalResult": ".retrieve._tool",
    "make_retrieve_tool": ".retrieve._tool",
    "retrieve": ".retrieve._tool",
    "DigestSummarizer": ".summary._summarizer",
    "LLMSummarizer": ".summary._llm",
    "SmartSummarizer": ".summary._worker",
    "Summarizer": ".summary._summarizer",
    "truncate_output": ".steps._truncate",
    "AgingSchedule": ".aging._schedule",
    "Epoch": ".aging._schedule",
    "CacheTerms": ".aging._breakeven",
    "BuiltPrompt": ".pipeline._types",
    "ContextStats": ".pipeline._types",
    "Summary": ".pipeline._types",
    "SentPrompt": ".pipeline._types",
    "Cut": "tiered_agent._trace",
    "StepFailure": ".pipeline._types",
    "StepRuntime": "._step",
    "Run": "._step",
    "Turn": "._step",
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
    from .._trace import Cut
    from ._config import ContextConfig
    from ._manager import ContextManager, PreparedPrompt
    from ._policy import Policy
    from ._presets import PRESETS, as_policy, preset
    from ._step import Run, StepRuntime, Turn
    from .aging._breakeven import CacheTerms
    from .aging._schedule import AgingSchedule, Epoch
    from .dedup._cache import DedupCache, DedupHit
    from .pipeline._build import build_prompt, validate_pairs
    from .pipeline._types import BuiltPrompt, ContextStats, SentPrompt, StepFailure, Summary
    from .retrieve._tool import RetrievalResult, make_retrieve_tool, retrieve
    from .steps import Age, Clear, Compact, Dedup, Elide, Mask, Step, Summarize, Truncate, Window
    from .steps._truncate import truncate_output
    from .summary._digest import digest
    from .summary._llm import LLMSummarizer
    from .summary._summarizer import DigestSummarizer, Summarizer
    from .summary._worker import SmartSummarizer


__getattr__ = lazy_exports(__name__, _LOCATIONS, globals())
