"""Per-message values of a policy's consecutive prompts, recomputed only where a prompt changed.

One policy's prompt at step ``k + 1`` is mostly its prompt at step ``k``: the same message objects
(the context pipeline passes unchanged messages through as they are) followed by the new ones,
and a policy that rewrites old messages (aging, masking, a summary) rewrites them in a few places.
The replay derives per-message values from every prompt (token ids for the cache simulation, the
text the rulers search); :class:`Series` keeps the last prompt's values and recomputes only past
the longest run of identical objects it shares with the previous prompt, found at C speed
(:func:`identical_prefix`). A step then costs a copy of a list of references plus the new
messages, instead of a Python call per message of an ever longer prompt.
"""

from __future__ import annotations

import operator
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from itertools import compress, count, repeat
from typing import Generic, TypeVar

__all__ = ["IdSets", "Joined", "Series", "SparseSeries", "Stretches", "identical_prefix", "stretch_key"]

K = TypeVar("K")
V = TypeVar("V")


def identical_prefix(previous: Sequence[object], current: Sequence[object]) -> int:
    """How many leading items of the two sequences are the same objects (C iterators throughout,
    stopping at the first difference)."""
    differing = compress(count(), map(operator.is_not, previous, current))
    return next(differing, min(len(previous), len(current)))


def _frozen(items: Sequence[K]) -> Sequence[K]:
    """``items`` kept for the next comparison: a tuple as it is (it never changes), else a copy."""
    return items if isinstance(items, tuple) else tuple(items)


class Series(Generic[K, V]):
    """``derive(item)`` for every item of successive sequences, reusing the values of the leading
    items a sequence shares (as objects) with the one before. ``derive`` must depend on the item
    only (a value for an object is the same whenever it is asked)."""

    __slots__ = ("_derive", "_items", "_values")

    def __init__(self, derive: Callable[[K], V]) -> None:
        self._derive = derive
        self._items: Sequence[K] = ()
        self._values: list[V] = []

    def __call__(self, items: Sequence[K]) -> list[V]:
        """The values of ``items``, in order (the series' own list, which it replaces and never changes:
        the caller may keep it, and must not change it)."""
        kept = identical_prefix(self._items, items)
        values = self._values[:kept]
        values.extend(map(self._derive, items[kept:]))
        self._items = _frozen(items)
        self._values = values
        return values

    def copy(self) -> Series[K, V]:
        """An independent series in this one's state (its lists are replaced, never changed: shared)."""
        twin: Series[K, V] = Series(self._derive)
        twin._items, twin._values = self._items, self._values
        return twin


class SparseSeries(Generic[K, V]):
    """A :class:`Series` for a ``derive`` that is None for most items (a prompt's messages other
    than the few a policy wrote): only the values that are not None, in order, without a step
    through the items the sequence shares with the one before."""

    __slots__ = ("_derive", "_items", "_positions", "_skip", "_values")

    def __init__(self, derive: Callable[[K], V | None], skip: AbstractSet[int] = frozenset()) -> None:
        """``skip``: ids of items whose value is None, passed over without calling ``derive``."""
        self._derive = derive
        self._skip = skip
        self._items: Sequence[K] = ()
        self._positions: list[int] = []  # where the values' items stand in ``_items``
        self._values: list[V] = []

    def __call__(self, items: Sequence[K]) -> list[V]:
        """The values of ``items`` that are not None, in order (the series' own list, which it replaces
        and never changes: the caller may keep it, and must not change it)."""
        kept = identical_prefix(self._items, items)
        cut = bisect_left(self._positions, kept)
        positions, values = self._positions[:cut], self._values[:cut]
        candidates: Iterable[int] = range(kept, len(items))
        if self._skip:  # at C speed: the positions of the items whose id is not skipped
            skipped = map(self._skip.__contains__, map(id, items[kept:]))
            candidates = compress(candidates, map(operator.not_, skipped))
        for position in candidates:
            value = self._derive(items[position])
            if value is not None:
                positions.append(position)
                values.append(value)
        self._items = _frozen(items)
        self._positions, self._values = positions, values
        return values


def stretch_key(where: Sequence[int]) -> tuple[int, ...]:
    """``where`` (positions) as the first and the last position of each stretch of consecutive
    positions in it: the firsts in order, then the lasts."""
    if not where:
        return ()
    cuts = list(compress(count(1), map(operator.ne, where[1:], map(operator.add, where, repeat(1)))))
    return (*(where[i] for i in [0, *cuts]), *(where[i - 1] for i in [*cuts, len(where)]))


class Stretches:
    """:func:`stretch_key` of the positions (``positions``: an item's id -> its position) of the items
    of successive sequences, derived only past the items a sequence shares (as objects) with the one
    before, and kept as its stretches (a step adds a few items: its key costs a few list operations
    and the tuple); None for a sequence holding an item without a position."""

    __slots__ = ("_count", "_ends", "_firsts", "_items", "_lasts", "_positions")

    def __init__(self, positions: Mapping[int, int]) -> None:
        self._positions = positions
        self._items: Sequence[object] = ()
        self._count = 0  # how many leading items have a position
        # the stretches of their positions: first and last position, and the count of items up to its end
        self._firsts: list[int] = []
        self._lasts: list[int] = []
        self._ends: list[int] = []

    def __call__(self, items: Sequence[object]) -> tuple[int, ...] | None:
        kept = identical_prefix(self._items, items)
        self._items = _frozen(items)  # a prompt's tuple as it is (a list copied per step was O(prompt))
        if self._count < kept:  # an item without a position among the shared ones
            return None
        self._cut(kept)
        firsts, lasts, ends = self._firsts, self._lasts, self._ends
        for position in map(self._positions.get, map(id, items[kept:])):
            if position is None:
                return None
            self._count += 1
            if lasts and position == lasts[-1] + 1:
                lasts[-1] = position
                ends[-1] = self._count
            else:
                firsts.append(position)
                lasts.append(position)
                ends.append(self._count)
        return (*firsts, *lasts)

    def _cut(self, kept: int) -> None:
        """Keep the stretches of the first ``kept`` items with a position."""
        if kept == self._count:
            return
        cut = bisect_left(self._ends, kept)  # the first stretch that ends at or after ``kept``
        del self._firsts[cut + 1 :], self._lasts[cut + 1 :], self._ends[cut + 1 :]
        if cut < len(self._ends):
            start = self._ends[cut - 1] if cut else 0
            if kept <= start:
                del self._firsts[cut], self._lasts[cut], self._ends[cut]
            else:
                self._lasts[cut] = self._firsts[cut] + (kept - start) - 1
                self._ends[cut] = kept
        self._count = kept


class IdSets:
    """The ids of the items of successive sequences, as one set extended in place while a sequence
    continues the one it was last built for (a policy's prompt mostly grows by appending), built
    afresh otherwise. The set returned is valid until the next call (it is then changed or replaced)."""

    __slots__ = ("_ids", "_items")

    def __init__(self) -> None:
        self._items: Sequence[object] = ()
        self._ids: set[int] = set()

    def __call__(self, items: Sequence[object]) -> set[int]:
        kept = identical_prefix(self._items, items)
        if kept < len(self._items):  # an item of the last sequence is gone or replaced
            self._ids = set(map(id, items))
        else:
            self._ids.update(map(id, items[kept:]))
        self._items = _frozen(items)
        return self._ids


class Joined:
    """``separator.join(texts)`` of a policy's consecutive prompts, joined again only when the texts
    changed (most steps of a policy that wrote a few messages of its own show the same ones again)."""

    __slots__ = ("_joined", "_separator", "_texts")

    def __init__(self, separator: str = "") -> None:
        self._separator = separator
        self._texts: list[str] = []
        self._joined = ""

    def __call__(self, texts: list[str]) -> str:
        if texts != self._texts:  # the same strings (as objects, first) compare at C speed
            self._texts, self._joined = texts, self._separator.join(texts)
        return self._joined
