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

from .._step import PolicyView, Run, Step, StepRuntime, Turn, require
from ._state import Summaries

__all__ = ["EMERGENCY_KEEP", "Compact", "CompactRuntime", "compaction_keep"]

EMERGENCY_KEEP = 1  # iterations kept verbatim by the compaction after a context-window error


@dataclass(frozen=True, slots=True)
class Compact(Step):
    """Past ``at`` (a share) of the context window, summarize all but the last ``keep`` iterations."""

    kind: ClassVar[str] = "compact"
    summarizes: ClassVar[bool] = True
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

    def check(self, policy: PolicyView) -> None:
        require(self.at < policy.hard_limit, "Compact.at must be below the policy's hard_limit")

    def start(self, run: Run) -> CompactRuntime:
        return CompactRuntime(self, run.summaries, run.context_window)


class CompactRuntime(StepRuntime):
    """Compacts through the run's summary state when a built prompt is over :attr:`Compact.at` of
    the window, or when the provider rejected the last prompt as too long (then it keeps at most
    one iteration)."""

    def __init__(self, step: Compact, summaries: Summaries, context_window: int | None) -> None:
        super().__init__(step)
        self.settings = step
        self.summaries = summaries
        self.context_window = context_window

    async def after(self, turn: Turn, tokens: int) -> bool:
        emergency = turn.emergency
        if not emergency and not self.settings.due(tokens, self.context_window):
            return False
        turn.emergency = False  # handled here
        # After a context-window error the last prompt is the one that did not fit: not to be re-sent.
        ride = None if emergency else turn.previous
        keep = compaction_keep(self.settings, emergency=emergency)
        return await self.summaries.compact(
            turn.history, turn.last, keep=keep, emergency=emergency, prompt=ride
        )


def compaction_keep(step: Compact | None, *, emergency: bool) -> int:
    """Iterations a compaction keeps verbatim: ``keep``, at most one after a context-window error."""
    keep = step.keep if step is not None else EMERGENCY_KEEP
    return min(keep, EMERGENCY_KEEP) if emergency else keep
