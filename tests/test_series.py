"""Per-item values of consecutive sequences, derived only past what a sequence shares with the last."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent.bench._series import (
    IdSets,
    Joined,
    Series,
    SparseSeries,
    Stretches,
    identical_prefix,
    stretch_key,
)


class Item:
    def __init__(self, name: str) -> None:
        self.name = name


def test_identical_prefix_counts_the_same_objects() -> None:
    a, b, c = Item("a"), Item("b"), Item("c")
    assert identical_prefix([a, b, c], [a, b, Item("c")]) == 2
    assert identical_prefix([a, b], [a, b, c]) == 2
    assert identical_prefix([a, b, c], [a]) == 1
    assert identical_prefix([], [a]) == identical_prefix([b], [a]) == 0


def test_values_are_derived_once_per_object_past_the_shared_prefix() -> None:
    derived: list[str] = []

    def derive(item: Item) -> str | None:
        derived.append(item.name)
        return None if item.name.startswith("_") else item.name.upper()

    dense, sparse = Series(derive), SparseSeries(derive)
    a, hidden, b, c = Item("a"), Item("_x"), Item("b"), Item("c")
    assert sparse([a, hidden, b]) == ["A", "B"]
    assert derived == ["a", "_x", "b"]
    assert sparse([a, hidden, b, c]) == ["A", "B", "C"]
    assert derived[3:] == ["c"]  # the shared prefix is not derived again
    b2 = Item("b")
    assert sparse([a, hidden, b2, c]) == ["A", "B", "C"]
    assert derived[4:] == ["b", "c"]  # from the first changed object on
    assert sparse([a]) == ["A"]
    assert sparse([a, Item("_y"), Item("d")]) == ["A", "D"]
    assert dense([a, hidden, b]) == ["A", None, "B"]


def test_skipped_ids_are_passed_over_without_deriving() -> None:
    derived: list[str] = []

    def derive(item: Item) -> str | None:
        derived.append(item.name)
        return None if item.name.startswith("_") else item.name.upper()

    a, hidden, b, c = Item("a"), Item("_x"), Item("b"), Item("c")
    sparse = SparseSeries(derive, skip=frozenset({id(a), id(hidden)}))
    assert sparse([a, hidden, b]) == ["B"]  # a is skipped: its value is None whatever derive says
    assert derived == ["b"]
    assert sparse([a, hidden, b, c, hidden]) == ["B", "C"]
    assert derived == ["b", "c"]
    assert sparse([Item("d"), a, b]) == ["D", "B"]  # positions after a change are derived again
    assert derived == ["b", "c", "d", "b"]


def _key(positions: dict[int, int], items: list[object]) -> tuple[int, ...] | None:
    """The key computed from scratch."""
    at = [positions.get(id(i)) for i in items]
    if None in at:
        return None
    known = [p for p in at if p is not None]
    return stretch_key(known)


def test_stretch_key_is_the_first_and_last_of_each_run_of_consecutive_positions() -> None:
    assert stretch_key([3, 4, 5, 9, 10, 2]) == (3, 9, 2, 5, 10, 2)
    assert stretch_key([7]) == (7, 7)
    assert stretch_key([]) == ()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.lists(st.integers(0, 14), max_size=6)), max_size=8))
def test_stretches_of_successive_sequences_equal_the_key_from_scratch(
    edits: list[tuple[int, list[int]]],
) -> None:
    """Each sequence keeps a prefix of the previous one (the same objects) and appends others; items
    0-9 of the run have positions, 10-14 (a policy's own) none."""
    run = [object() for _ in range(15)]
    positions = {id(o): p for p, o in enumerate(run[:10])}
    stretches = Stretches(positions)
    items: list[object] = []
    for keep, added in edits:
        items = items[:keep] + [run[i] for i in added]
        assert stretches(items) == _key(positions, items)


def test_joined_texts_follow_the_texts_and_are_reused_while_they_do_not_change() -> None:
    join = Joined("\n")
    first = join(["a", "b"])
    assert first == "a\nb"
    assert join(["a", "b"]) is first  # the same texts: the same string, not joined again
    assert join(["c", "a", "b"]) == "c\na\nb"
    assert join(["a", "b"]) == "a\nb"
    assert join([]) == ""
    assert Joined()(["x", "y"]) == "xy"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.lists(st.integers(0, 9), max_size=6)), max_size=8))
def test_id_sets_of_successive_sequences_equal_the_set_from_scratch(
    edits: list[tuple[int, list[int]]],
) -> None:
    """Each sequence keeps a prefix of the previous one (the same objects) and appends others, some of
    them twice; a dropped or replaced item must leave the set (it fails when the set is only ever
    extended)."""
    pool = [object() for _ in range(10)]
    sets = IdSets()
    items: tuple[object, ...] = ()
    for keep, added in edits:
        items = (*items[:keep], *(pool[i] for i in added))
        assert sets(items) == set(map(id, items))
        assert sets(list(items)) == set(map(id, items))  # a list is taken as a copy


def test_id_sets_extend_in_place_while_a_sequence_grows() -> None:
    a, b, c = object(), object(), object()
    sets = IdSets()
    first = sets((a, b))
    assert sets((a, b, c)) is first == {id(a), id(b), id(c)}  # extended, not built again
    assert sets((a, c)) == {id(a), id(c)}  # b is gone


def test_a_returned_list_is_never_changed_by_later_sequences() -> None:
    """The series hand out their own lists (no copy per call): a later call must replace them."""
    a, b, c = Item("a"), Item("b"), Item("c")
    dense, sparse = Series(lambda i: i.name), SparseSeries(lambda i: i.name if i.name != "b" else None)
    first, sparse_first = dense((a, b)), sparse([a, b, c])
    dense((a, b, c))
    dense((c,))
    sparse([a, c, b, a])
    assert first == ["a", "b"]
    assert sparse_first == ["a", "c"]
