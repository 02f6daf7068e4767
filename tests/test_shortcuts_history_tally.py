"""The history tally's shortcut (speed round 16, docs/bench-speed.md) gives what the plain computation
gives, and takes the shortcut: the history tally does the iteration bookkeeping only where a message's
iteration differs from the previous message's (the others are only counted)."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st
from test_tally import COUNTER, messages, recount

from tiered_agent._messages import Message
from tiered_agent.context.pipeline._draft import HistoryFacts
from tiered_agent.context.pipeline._tally import HistoryTally

# ----------------------------------------------------------------------------- the history tally


def test_the_tally_enters_an_iteration_once_per_change() -> None:
    tally = HistoryTally(COUNTER)
    entered: list[int] = []
    plain_enter = tally._enter
    tally._enter = lambda iteration: (entered.append(iteration), plain_enter(iteration))[1]  # type: ignore[method-assign]
    history: list[Message] = []
    for iteration in (0, 1, 2, 3):
        history.extend(Message("user", f"m{iteration}-{k}", iteration=iteration) for k in range(3))
        tally.update(history)
    history.append(Message("user", "late", iteration=2))  # out of order: entered, not ordered
    tally.update(history)
    assert entered == [0, 1, 2, 3, 2]
    assert (tally.tokens, tally.iterations, tally.last_iteration) == recount(history)
    assert tally.facts == HistoryFacts.of(history) == HistoryFacts((1, 2, 3), False)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(messages(), max_size=6), max_size=20))
def test_the_tally_of_appended_runs_of_one_iteration_equals_a_recount(steps: list[list[Message]]) -> None:
    """Histories whose messages come in runs of one iteration (the loop's), appended step by step."""
    tally = HistoryTally(COUNTER)
    history: list[Message] = []
    for new in steps:
        same = [dataclasses.replace(m, iteration=new[0].iteration) for m in new[: len(new) // 2 + 1]]
        history.extend([*same, *new])
        tally.update(history)
        assert (tally.tokens, tally.iterations, tally.last_iteration) == recount(history)
        assert tally.facts == HistoryFacts.of(history)
