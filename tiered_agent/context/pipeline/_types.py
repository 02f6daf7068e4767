"""Values passed between the context tiers: summaries, the built prompt and what each step did to it.

A cut output is recorded as the trace's own :class:`~tiered_agent._trace.Cut` (the prompt's record
holds it as is).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from ..._messages import Message
from ..._trace import Cut

__all__ = ["BuiltPrompt", "ContextStats", "SentPrompt", "StepEffects", "StepFailure", "Summary"]

_ORIGINAL_CHARS = attrgetter("original_chars")
_KEPT_CHARS = attrgetter("kept_chars")


@dataclass(frozen=True, slots=True)
class Summary:
    """A rolling summary of iterations ``first..last`` (inclusive), ready to show the model."""

    first: int
    last: int
    text: str
    model: str | None = None  # None: deterministic digest
    input_tokens: int = 0
    output_tokens: int = 0
    created_at_iteration: int = 0
    # The deterministic digest's structured working memory (``_memory.Memory``), which the next
    # digest folds on from; not part of the value (equality, hash) and not traced.
    state: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class SentPrompt:
    """The last request the agent sent: its messages and tool schemas, and the model they went to.

    An LLM summarizer of the same model sends these again, byte for byte, plus one instruction,
    so that the provider serves them from its prompt cache.
    """

    messages: tuple[Message, ...]
    tools: tuple[Mapping[str, Any], ...] = ()
    model: str | None = None


@dataclass(frozen=True, slots=True)
class ContextStats:
    """What the pipeline did to build one prompt (recorded in the trace every iteration)."""

    truncations: tuple[Cut, ...] = ()
    masked_outputs: int = 0  # observations replaced by a placeholder (masking / clearing)
    masked_chars: int = 0
    windowed_out: tuple[int, ...] = ()  # iterations not shown verbatim (covered by the summary)
    summary_range: tuple[int, int] | None = None
    shown_iterations: tuple[int, ...] = ()
    pointed_outputs: int = 0  # duplicate outputs shown as a pointer to an identical one above (dedup)
    pointed_chars: int = 0

    @property
    def truncated_chars(self) -> int:
        """The chars the cuts left out: ``sum(t.omitted_chars for t in truncations)``, summed in C (the
        replay asks at every step, and a policy like ``kb-labs-adr`` cuts hundreds of outputs)."""
        truncations = self.truncations
        if not truncations:
            return 0
        original: int = sum(map(_ORIGINAL_CHARS, truncations))
        kept: int = sum(map(_KEPT_CHARS, truncations))
        return original - kept


@dataclass(frozen=True, slots=True)
class StepEffects:
    """What one step did to the prompt as sent: outputs it hid behind a placeholder or a shorter
    form (and their chars), outputs it cut (and, per cut, the output and how it is shown),
    repeated outputs it showed as a pointer, iterations it left out behind a note."""

    hidden: int = 0
    hidden_chars: int = 0
    cuts: tuple[Cut, ...] = ()
    cut: tuple[tuple[Message, Message], ...] = ()
    pointers: int = 0
    pointer_chars: int = 0
    dropped: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class StepFailure:
    """A step that raised: skipped for that prompt (or batch of tool calls), the run went on.

    ``phase`` is the hook that raised (``apply``, ``decide``, ``serve``, ``summary`` ...);
    ``error`` the exception's type, ``message`` its text (secrets redacted, clipped).
    """

    step: str
    phase: str
    error: str
    message: str


@dataclass(frozen=True, slots=True)
class BuiltPrompt:
    """The messages the model will see, and how they were obtained."""

    messages: tuple[Message, ...]
    stats: ContextStats = field(default_factory=ContextStats)
    # Per truncation (in the order of ``stats.truncations``): the output and how it is shown.
    cut: tuple[tuple[Message, Message], ...] = ()
    failures: tuple[StepFailure, ...] = ()  # steps skipped because they raised
    names_retrieval: bool = False  # shows a retrieval call besides its cuts, placeholders and notes
    effects: Mapping[str, StepEffects] = field(default_factory=dict)  # by step kind: what each did
    # Message counts k, preferred first, whose first k messages the next prompts repeat until the
    # policy changes them again (aging's next epoch): where an explicit cache breakpoint keeps what
    # that change leaves intact (``_model.stable_breakpoints``; empty: the policy knows none).
    stable: tuple[int, ...] = ()

    @property
    def shows_retrieval(self) -> bool:
        """Whether the prompt names a retrieval call: something was cut, hidden, left out, summarized
        or aged (``retrieval_schema="when_shown"`` sends the tool's schema from then on)."""
        stats = self.stats
        return bool(
            self.names_retrieval
            or stats.truncations
            or stats.masked_outputs
            or stats.windowed_out
            or stats.summary_range
        )
