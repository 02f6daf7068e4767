"""Summarize: every N iterations, a rolling summary of all but the last ``keep`` is queued.

The summary is written in the background (an LLM, or the deterministic digest)
and lands before a later prompt; from then on it stands in for the iterations
it covers (see :func:`~..pipeline._draft.start`, and :class:`~..steps._elide.Elide` for the
layout that keeps the agent's own messages). Until it lands, those iterations
stay shown: there is never a coverage gap. ``overlap`` re-summarizes the last K
iterations the previous summary covered.

This step decides *when* and *what* to summarize (:meth:`Summarize.due`); its
runtime asks the run's summary state (:class:`~._state.Summaries`) to do it,
before each prompt. In a policy that ages old iterations (:class:`~..aging._step.Age`,
which decides the prompt's aging schedule first), the summary follows the aging
instead (:meth:`Summarize.due_aged`): it covers exactly the aged iterations and is
refreshed once they moved ``every`` iterations past it, so it changes when the
prompt is rewritten anyway, and ``keep`` is the aging window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from ..._messages import Message
from .._step import Run, Step, StepRuntime, Turn, require
from ._state import Summaries

__all__ = ["Summarize", "SummarizeRuntime"]


@dataclass(frozen=True, slots=True)
class Summarize(Step):
    """Every ``every`` iterations, summarize all but the last ``keep``, re-covering ``overlap``."""

    kind: ClassVar[str] = "summarize"
    summarizes: ClassVar[bool] = True
    every: int = 10
    keep: int = 5
    overlap: int = 0

    def __post_init__(self) -> None:
        ok = isinstance(self.every, int) and self.every >= 1
        require(ok, f"Summarize.every must be a positive integer, got {self.every!r}")
        require(
            isinstance(self.keep, int) and self.keep >= 0,
            f"Summarize.keep must be >= 0, got {self.keep!r}",
        )
        ok = isinstance(self.overlap, int) and 0 <= self.overlap < self.every
        require(ok, f"Summarize.overlap must be >= 0 and smaller than every, got {self.overlap!r}")

    def due(self, last: int, covered: int) -> tuple[int, int] | None:
        """The range ``(first, last)`` to summarize after iteration ``last``, or None.

        ``covered`` is the last iteration a summary covers or was queued for.
        """
        if last == 0 or last % self.every:
            return None
        through = last - self.keep
        first = max(1, covered + 1 - self.overlap)
        if through < first or through <= covered:
            return None
        return first, through

    def due_aged(self, aged_through: int, covered: int) -> tuple[int, int] | None:
        """With aging: the range to summarize once iterations ``1..aged_through`` aged, or None.

        Due when the aged region moved at least ``every`` iterations past ``covered``.
        """
        if aged_through - covered < self.every:
            return None
        return max(1, covered + 1 - self.overlap), aged_through

    def start(self, run: Run) -> SummarizeRuntime:
        return SummarizeRuntime(self, run.summaries)


class SummarizeRuntime(StepRuntime):
    """Queues the rolling summaries :class:`Summarize` asks for (the run's summary state writes them)."""

    def __init__(self, step: Summarize, summaries: Summaries) -> None:
        super().__init__(step)
        self.settings = step
        self.summaries = summaries

    async def act(self, turn: Turn) -> None:
        """Land what inline mode queued, let a background digest parse the newest iteration, then queue a
        rolling summary when one is due (with the agent's last prompt, for a summarizer that
        rides its cache)."""
        summaries = self.summaries
        await summaries.land()
        if summaries.primes:  # a background digest: spread its parsing over the iterations
            summaries.prime(_newest(turn.history, turn.last))
        covered = summaries.covered_through
        schedule = turn.schedule
        if schedule is None:
            due = self.settings.due(turn.last, covered)
        else:
            due = self.settings.due_aged(schedule.through, covered)
        if due is not None:
            first, through = due
            summaries.queue(turn.history, first, through, at=turn.last, prompt=turn.previous)


def _newest(history: Sequence[Message], last: int) -> list[Message]:
    """The messages of iteration ``last`` (at the end of the history)."""
    newest: list[Message] = []
    for message in reversed(history):
        if message.iteration < last:
            break
        newest.append(message)
    return newest[::-1]
