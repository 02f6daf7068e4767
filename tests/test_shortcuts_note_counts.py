"""The aging decision counts the candidate note and the files note once per prompt and arguments
(the condensing decision and the level-1 decision of one prompt asked for the same ones twice), and
decides what it decided counting them again (speed round 15, docs/bench-speed.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from test_aging_written import COUNTER, _run

from tiered_agent._messages import Message
from tiered_agent.context.aging._breakeven import CacheTerms
from tiered_agent.context.aging._state import AgingState
from tiered_agent.context.steps import Age

# ----------------------------------------------------------------------------- the aging decision


class _Plain(AgingState):
    """The aging state without its per-update memo of the two notes (each asked for is counted)."""

    def _condense_saving(self, due: int, last: int) -> tuple[int, int]:
        self._saving_at = (-1, -1, 0, 0)
        return super()._condense_saving(due, last)

    def _written_net(self, last: int, through: int, saving: int) -> tuple[int, int]:
        self._written_at = (-1, -1, 0)
        return super()._written_net(last, through, saving)


def _decided(state: AgingState, iterations: int) -> Iterator[tuple[object, ...]]:
    history = _run(iterations)
    for last in range(1, iterations + 1):
        state.update([m for m in history if m.iteration <= last], last)
        yield state.schedule, state.record(), state.new_epoch


def test_each_note_is_counted_once_per_prompt_and_the_decisions_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    """A prompt whose level-1 epoch pays while a chunk is due asks for the candidate note (condensing
    and condensing along) and for the files note (condensing and the level-1 rule) twice with the
    same arguments: each is rendered once now; the schedule and records are those of the plain state."""
    calls: Counter[tuple[object, ...]] = Counter()
    deciding = [0]
    note, written, decide = Age.note, Age.written, AgingState._decide

    def counted_note(self: Age, groups: Any, chunk: Any, *args: Any, **kwargs: Any) -> Message | None:
        if deciding[0]:
            calls["note", deciding[0], chunk] += 1
        return note(self, groups, chunk, *args, **kwargs)

    def counted_written(self: Age, groups: Any, through: int, at: int, *args: Any, **kwargs: Any) -> Any:
        if deciding[0]:
            calls["written", deciding[0], through, at] += 1
        return written(self, groups, through, at, *args, **kwargs)

    def counted_decide(self: AgingState, last: int, *args: Any, **kwargs: Any) -> Any:
        deciding[0] = last
        try:
            return decide(self, last, *args, **kwargs)
        finally:
            deciding[0] = 0

    monkeypatch.setattr(Age, "note", counted_note)
    monkeypatch.setattr(Age, "written", counted_written)
    monkeypatch.setattr(AgingState, "_decide", counted_decide)
    plain = list(_decided(_Plain(Age(), counter=COUNTER, terms=CacheTerms(read=0.1), retrieval=True), 60))
    twice = sum(1 for count in calls.values() if count > 1)
    assert twice >= 10  # the plain state asks twice at every such prompt (7 epochs over 60 iterations)
    calls.clear()
    state = AgingState(Age(), counter=COUNTER, terms=CacheTerms(read=0.1), retrieval=True)
    assert list(_decided(state, 60)) == plain
    assert calls and max(calls.values()) == 1  # main rendered 15 of them twice
    assert len(state.schedule.epochs) == 7 and state.schedule.condensed == 44
