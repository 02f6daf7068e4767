"""The named policies: ours, the original design, the baseline, and the peers' as published.

Presets are data, a name and its steps (plus run settings); the bench JSON and
the trace record them as such. ``tiered-agent run --policy NAME`` and
``Agent(context=NAME)`` pick one by name.
"""

from __future__ import annotations

from ._policy import Policy
from .steps import Age, Clear, Compact, Dedup, Mask, Summarize, Tidy, Truncate

__all__ = ["DEFAULT_PRESET", "PRESETS", "as_policy", "preset"]

PRESETS: dict[str, Policy] = {
    # Our default, tuned on the replay benchmark (benchmarks/tune_tiered.py, README "Benchmark"):
    # the last 2 iterations verbatim; older ones aged into a form fixed when they aged (outputs keep
    # their first lines and the lines naming something not shown later, reasoning its first sentence
    # and the sentences naming something not shown later, calls their arguments up to 200 chars),
    # iterations older than 4 condensed 2 at a time into one line each plus up to 8 output lines the
    # agent referred to afterwards and up to 5 naming the most things shown nowhere later (outputs of
    # 5 lines or fewer whole); when to age is the break-even rule under the run's cache and price
    # model (aging/_step.py). Outputs are cut when they arrive only past 50,000 chars (about 12k
    # tokens, under a tenth of a 128k window; issue 18: a cut at arrival hides what the very next
    # action reads, where aging hides it once the agent has acted on it), and while the cut would be
    # the first thing hidden only when it spares more than the rest of the prompt: it would send
    # context_retrieve's schema, re-sending the whole prompt, a rewrite the aging's break-even rule
    # weighs and a cut at arrival cannot; compaction past 70% of the window stays the safety net.
    # Last, Tidy: the padding before a listing's line numbers goes, and a long tagged block (a
    # harness's <system-reminder>) shown verbatim above is a one-line pointer (issue 18).
    # On a request that finds nothing cached (after an idle gap past the cache's lifetime, when
    # the whole prompt is written again anyway), condensed chunks 5+ iterations behind the condensed
    # boundary fade to their iteration lines and up to 4 kept lines naming what the agent named since.
    # An aged output keeps its lines naming what no later output shows: the agent's own mention of a
    # name is not the line that held it (shown_by="outputs"). The note of the files the agent wrote
    # holds up to 24,000 chars (the step's default 16,000): Codex patches many files in many hunks.
    # A read of a file the agent named in its last 3 iterations stays whole when it ages
    # (focus_reads=3): the lines its next patch quotes (results.md, round 25).
    "tiered": Policy(
        "tiered",
        (
            Dedup(),
            Compact(at=0.70, keep=5),
            Age(
                reasoning="novel",
                fade_after=5,
                fade_keep=4,
                fade_cold=True,
                shown_by="outputs",
                written_chars=24_000,
                focus_reads=3,
            ),
            Truncate(max_chars=50_000, defer_max_chars=50_000),
            Tidy(),
        ),
        retrieval_schema="when_shown",
    ),
    # The original TypeScript design: dedup, 500 chars head-only with retrieval hints, window 5,
    # a background summary every 10 iterations, context_retrieve.
    "kb-labs-adr": Policy(
        "kb-labs-adr", (Dedup(), Summarize(every=10, keep=5), Truncate(max_chars=500, mode="head"))
    ),
    # No optimization at all: the baseline.  The peers' policies below run as published, without
    # context_retrieve (retrieval=False): they neither pay for nor benefit from it.
    "full": Policy("full", (), retrieval=False),
    # Observation masking (Lindenbauer et al., "The Complexity Trap"): keep the last 10 outputs.
    "masking": Policy("masking", (Mask(keep=10),), retrieval=False),
    # Anthropic context editing (clear_tool_uses): past 100k input tokens keep the last 3 tool results.
    "anthropic-clear": Policy("anthropic-clear", (Clear(trigger_tokens=100_000, keep=3),), retrieval=False),
    # OpenAI Codex CLI: head+tail 10 KiB / 256 lines per output, auto-compaction at 90% of the window.
    "codex": Policy(
        "codex", (Compact(at=0.90, keep=0), Truncate(max_chars=10 * 1024, max_lines=256)), retrieval=False
    ),
    # Google ADK code agents: head+tail 128+128 lines, 10 KiB; compaction at 70% keeping the last 10
    # messages (5 iterations of call + result).
    "adk-code": Policy(
        "adk-code", (Compact(at=0.70, keep=5), Truncate(max_chars=10 * 1024, max_lines=256)), retrieval=False
    ),
    # Google ADK events compaction: summarize every 5 invocations with an overlap of 2.
    "adk-compaction": Policy("adk-compaction", (Summarize(every=5, keep=0, overlap=2),), retrieval=False),
}
DEFAULT_PRESET = "tiered"


def preset(name: str) -> Policy:
    """The named preset; raises :class:`ConfigurationError` listing the valid names."""
    from .._errors import ConfigurationError

    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigurationError(
            f"unknown context policy {name!r}; choose one of {', '.join(PRESETS)}"
        ) from None


def as_policy(context: Policy | str) -> Policy:
    """A policy from a preset name, or the policy itself."""
    if isinstance(context, str):
        return preset(context)
    return context
