"""The aging schedule: which iterations aged at which epoch. A small frozen value.

An :class:`Epoch` records one decision of the run's aging state
(:mod:`._state`): when the newest iteration was ``at``, iterations
``1..through`` were aged (shown in the form :mod:`._forms` fixes for them) and
``1..condensed`` condensed (one line each, level 2), and the notes of the
condensed chunks through ``faded`` faded (level 3: their iteration lines and
the kept lines naming what the agent named since, :func:`~._condense.faded_note`). The forms of the
iterations a given epoch aged depend only on the history up to its ``at``, so
a prompt is a pure function of (history, schedule, summary): the live loop and
the replay build the same prompts from the same schedule, and between two
epochs the aged part of the prompt never changes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["AgingSchedule", "Epoch"]


@dataclass(frozen=True, slots=True)
class Epoch:
    """At newest iteration ``at``: iterations ``<= through`` aged, ``<= condensed`` condensed,
    the chunks through ``faded`` faded."""

    at: int
    through: int
    condensed: int = 0
    faded: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.faded <= self.condensed <= self.through <= self.at:
            raise ValueError(f"invalid aging epoch {self!r}: need 0 <= faded <= condensed <= through <= at")

    def to_dict(self) -> dict[str, int]:
        """The epoch's fields (``faded`` only when some chunk faded: older records have none)."""
        fields = {"at": self.at, "through": self.through, "condensed": self.condensed}
        return fields | {"faded": self.faded} if self.faded else fields


@dataclass(frozen=True, slots=True)
class AgingSchedule:
    """The epochs of a run, oldest first (each ages at least as far as the one before)."""

    epochs: tuple[Epoch, ...] = ()

    def __post_init__(self) -> None:
        for before, after in zip(self.epochs, self.epochs[1:], strict=False):
            if (
                after.at < before.at
                or after.through < before.through
                or after.condensed < before.condensed
                or after.faded < before.faded
            ):
                raise ValueError(f"aging epochs must not go back: {before!r} then {after!r}")

    @property
    def through(self) -> int:
        """Iterations ``1..through`` are aged (0: none)."""
        return self.epochs[-1].through if self.epochs else 0

    @property
    def condensed(self) -> int:
        """Iterations ``1..condensed`` are condensed (0: none)."""
        return self.epochs[-1].condensed if self.epochs else 0

    @property
    def faded(self) -> int:
        """The chunks through iteration ``faded`` are faded (0: none)."""
        return self.epochs[-1].faded if self.epochs else 0

    def upto(self, limit: int) -> AgingSchedule:
        """This schedule with nothing aged or condensed past iteration ``limit`` (itself when it holds)."""
        if self.through <= limit:
            return self
        bound = max(limit, 0)
        return AgingSchedule(
            tuple(
                Epoch(e.at, min(e.through, bound), min(e.condensed, bound), min(e.faded, bound))
                for e in self.epochs
            )
        )

    def then(self, epoch: Epoch) -> AgingSchedule:
        """This schedule with one more epoch."""
        return AgingSchedule((*self.epochs, epoch))

    def batches(self) -> Iterator[tuple[int, int, int]]:
        """``(first, last, at)`` of the iterations each epoch aged."""
        done = 0
        for epoch in self.epochs:
            if epoch.through > done:
                yield done + 1, epoch.through, epoch.at
                done = epoch.through

    def chunks(self) -> Iterator[tuple[int, int, int]]:
        """``(first, last, at)`` of the iterations each epoch condensed."""
        done = 0
        for epoch in self.epochs:
            if epoch.condensed > done:
                yield done + 1, epoch.condensed, epoch.at
                done = epoch.condensed

    def fades(self) -> Iterator[tuple[int, int]]:
        """``(last, at)`` of each condensed chunk (its last iteration) that faded, and when."""
        ends = [last for _, last, _ in self.chunks()]
        done = 0
        for epoch in self.epochs:
            if epoch.faded > done:
                yield from ((last, epoch.at) for last in ends if done < last <= epoch.faded)
                done = epoch.faded

    def to_list(self) -> list[dict[str, int]]:
        return [epoch.to_dict() for epoch in self.epochs]

    @classmethod
    def from_list(cls, data: Sequence[Mapping[str, Any]]) -> AgingSchedule:
        return cls(
            tuple(
                Epoch(int(e["at"]), int(e["through"]), int(e.get("condensed", 0)), int(e.get("faded", 0)))
                for e in data
            )
        )
