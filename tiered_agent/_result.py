"""What a run returns: output, stop reason, per-iteration and total usage, savings."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from ._messages import Usage

__all__ = ["IterationStats", "RunResult", "StopReason"]


class StopReason(StrEnum):
    ANSWERED = "answered"
    MAX_ITERATIONS = "max_iterations"
    TOKEN_BUDGET = "token_budget"
    CANCELLED = "cancelled"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class IterationStats:
    """One iteration: the model call's usage and what the prompt cost against the full history."""

    iteration: int
    usage: Usage
    prompt_tokens_local: int
    counterfactual_tokens: int
    tool_calls: tuple[str, ...] = ()
    dedup_hits: int = 0

    @property
    def saved_tokens(self) -> int:
        return self.counterfactual_tokens - self.prompt_tokens_local


@dataclass(frozen=True, slots=True)
class RunResult:
    """The outcome of :meth:`Agent.run`.

    ``usage`` sums the agent's model calls; ``summary_usage`` what the
    summarizer spent. ``counterfactual_tokens`` is what the prompts would have
    cost with the full, unoptimized history (local tokenizer, like
    ``prompt_tokens_local``), so ``savings`` compares like with like.
    """

    output: str | None
    stop_reason: StopReason
    iterations: tuple[IterationStats, ...]
    usage: Usage
    trace_path: Path
    summary_usage: Usage = field(default_factory=Usage)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.stop_reason is StopReason.ANSWERED

    @property
    def prompt_tokens_local(self) -> int:
        return sum(i.prompt_tokens_local for i in self.iterations)

    @property
    def counterfactual_tokens(self) -> int:
        return sum(i.counterfactual_tokens for i in self.iterations)

    @property
    def savings(self) -> float:
        """Share of prompt tokens saved against the full history (0.0 when nothing was sent)."""
        full = self.counterfactual_tokens
        return 0.0 if full == 0 else 1 - self.prompt_tokens_local / full
