"""Compact: past a share of the context window, summarize synchronously before the call.

The safety net: when the next prompt is estimated above ``at`` of the model's
context window, everything but the last ``keep`` iterations is summarized on
the spot (the run waits) and the prompt is rebuilt. A provider's
context-window error triggers the same compaction once, keeping at most one
iteration, whether or not the policy has this step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .._step import Step, require

__all__ = ["Compact"]

EMERGENCY_KEEP = 1  # iterations kept verbatim by the compaction after a context-window error


@dataclass(frozen=True, slots=True)
class Compact(Step):
    """Past ``at`` (a share) of the context window, summarize all but the last ``keep`` iterations."""

    kind: ClassVar[str] = "compact"
    at: float = 0.70
    keep: int = 5

    def __post_init__(self) -> None:
        require(
            isinstance(self.at, int | float) and 0 < self.at < 1,
            f"Compact.at must be in (0, 1), got {self.at!r}",
        )
        require(
            isinstance(self.keep, int) and self.keep >= 0, f"Compact.keep must be >= 0, got {self.keep!r}"
        )

    def due(self, tokens: int, context_window: int | None) -> bool:
        """Whether a prompt of ``tokens`` must be compacted first."""
        return context_window is not None and tokens > self.at * context_window


def compaction_keep(step: Compact | None, *, emergency: bool) -> int:
    """Iterations a compaction keeps verbatim: ``keep``, at most one after a context-window error."""
    keep = step.keep if step is not None else EMERGENCY_KEEP
    return min(keep, EMERGENCY_KEEP) if emergency else keep
