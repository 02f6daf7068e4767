"""Totals of one iteration, one run or many runs: one value type, summed with ``+``.

Only quantities that add up are here: tokens, costs, calls, and per-prompt counts (an output cut
in five prompts counts five cuts). Positions a prompt record holds (how far iterations aged) and
numbers a newer pipeline records under keys this reader does not know stay per iteration
(:class:`~tiered_agent.inspect._record.PromptRecord`): a sum of them would mean nothing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

__all__ = ["Totals"]


@dataclass(frozen=True, slots=True)
class Totals:
    """Token, cost and context-pipeline totals.

    ``sent_tokens`` / ``full_tokens`` are the local counts of what was sent and
    of what the full, unoptimized history would have cost (the counterfactual),
    so ``savings`` compares like with like. ``prompt_tokens`` is what the
    provider reported. ``cost`` is None when no call reported one.
    """

    runs: int = 0
    iterations: int = 0
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    sent_tokens: int = 0
    full_tokens: int = 0
    cost: float | None = None
    tool_calls: int = 0
    tool_errors: int = 0
    errors: int = 0
    truncated_outputs: int = 0  # summed over prompts: an output cut in 5 prompts counts 5 times
    truncated_chars: int = 0
    outputs_truncated: int = 0  # distinct tool outputs cut at least once (run level)
    masked_outputs: int = 0
    masked_chars: int = 0
    dedup_hits: int = 0
    retrievals: int = 0
    summaries: int = 0
    summary_tokens: int = 0
    dedup_pointers: int = 0  # repeated outputs shown as pointers, summed over prompts
    dedup_pointer_chars: int = 0
    aging_epochs: int = 0  # prompts that aged iterations further

    @property
    def saved_tokens(self) -> int:
        return self.full_tokens - self.sent_tokens

    @property
    def savings(self) -> float:
        """Share of prompt tokens saved against the full history (0.0 when nothing was sent)."""
        return 0.0 if self.full_tokens <= 0 else 1 - self.sent_tokens / self.full_tokens

    def __add__(self, other: Totals) -> Totals:
        values: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if f.name == "cost":
                values[f.name] = None if mine is None and theirs is None else (mine or 0.0) + (theirs or 0.0)
            else:
                values[f.name] = mine + theirs
        return Totals(**values)

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["saved_tokens"] = self.saved_tokens
        out["savings"] = round(self.savings, 6)
        return out
