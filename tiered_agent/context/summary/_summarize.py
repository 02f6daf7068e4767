"""Summarize: every N iterations, a rolling summary of all but the last ``keep`` is queued.

The summary is written in the background (an LLM, or the deterministic digest)
and lands before a later prompt; from then on it stands in for the iterations
it covers (see :func:`~.._draft.start`, and :class:`~._elide.Elide` for the
layout that keeps the agent's own messages). Until it lands, those iterations
stay shown: there is never a coverage gap. ``overlap`` re-summarizes the last K
iterations the previous summary covered.

This step decides *when* and *what* to summarize (:meth:`Summarize.due`); the
run's summary state (:class:`~.._summaries.Summaries`) does it. In a policy that
ages old iterations (:class:`~._age.Age`), the summary follows the aging instead
(:meth:`Summarize.due_aged`): it covers exactly the aged iterations and is
refreshed once they moved ``every`` iterations past it, so it changes when the
prompt is rewritten anyway, and ``keep`` is the aging window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .._step import Step, require

__all__ = ["Summarize"]


@dataclass(frozen=True, slots=True)
class Summarize(Step):
    """Every ``every`` iterations, summarize all but the last ``keep``, re-covering ``overlap``."""

    kind: ClassVar[str] = "summarize"
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
