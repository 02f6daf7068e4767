"""The prompt build's prefix sums (speed round 9, docs/bench-speed.md): each shortcut against the rule
it replaces."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent.context.pipeline._tally import PrefixSums


class _Boom(Exception):
    pass


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.tuples(st.integers(0, 40), st.integers(0, 99)), max_size=6),  # replacements
            st.integers(0, 6),  # items dropped from the end
            st.lists(st.integers(0, 99), max_size=4),  # items appended
            st.booleans(),  # passed as a tuple (else a list)
            st.booleans(),  # a failing sequence first
            st.booleans(),  # equal copies of the previous items rather than the same objects
        ),
        max_size=20,
    )
)
def test_prefix_sums_equal_the_plain_sum_over_replacements(
    steps: list[tuple[list[tuple[int, int]], int, list[int], bool, bool, bool]],
) -> None:
    """Items replaced anywhere, dropped and appended, equal copies, lists and tuples, and a value that
    raises midway: the total is always the plain sum."""

    def value(item: list[int]) -> int:
        if item[0] >= 1000:
            raise _Boom
        return item[0] * 3 + 1

    sums: PrefixSums[list[int]] = PrefixSums(value)
    previous: list[list[int]] = []
    for replaced, dropped, appended, as_tuple, fail, copies in steps:
        items = [list(item) for item in previous] if copies else list(previous)
        for position, number in replaced:
            if position < len(items):
                items[position] = [number]
        items = items[: max(len(items) - dropped, 0)] + [[n] for n in appended]
        if fail:
            failing = [*([500 + n] for n in range(len(previous) + 2)), [1000]]
            with pytest.raises(_Boom):
                sums.total(tuple(failing) if as_tuple else failing)
        assert sums.total(tuple(items) if as_tuple else items) == sum(i[0] * 3 + 1 for i in items)
        previous = items
