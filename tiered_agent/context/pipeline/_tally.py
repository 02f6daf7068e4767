"""Token counts of the history and of the prompts, kept in O(new messages) per iteration.

The loop (and the replay) hands the context manager the whole history at every
iteration, and the history only grows: messages are appended, never changed.
:class:`HistoryTally` counts each message once (the counterfactual is a running
sum) and keeps the iterations the history holds. :class:`PromptTally` counts a
prompt by reusing the count of the longest prefix it shares with the previous
prompt: under prompt caching a prompt is append-only almost every iteration,
and a rewrite changes its tail only from the first rewritten message on.

Both check that what they get continues what they counted (the history: its
first and last counted messages are the same objects; the prompt: message by
message, in C) and count from scratch when it does not, so a caller that
rewrites a history gets exact counts, only slower.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from itertools import compress, count
from typing import Generic, TypeVar

from ..._messages import Message
from ..._tokens import TokenCounter
from ._draft import HistoryFacts

__all__ = ["HistoryTally", "PrefixSums", "PromptTally", "common_prefix"]


_T = TypeVar("_T")


def common_prefix(old: Sequence[_T], new: Sequence[_T]) -> int:
    """How many leading messages ``new`` shares with ``old``, compared in C: the same objects, or
    (when the whole shorter one is shared) equal ones. Callers reuse what they derived from a
    message's value, which equal messages share.

    The usual case (``new`` continues ``old``) is one comparison of two slices, which compares
    items by identity first; otherwise the first message that is not the same object ends it."""
    shared = min(len(old), len(new))
    if type(old) is type(new) and old[:shared] == new[:shared]:
        return shared
    differs = map(operator.is_not, old, new)
    return next(compress(count(), differs), shared)


class PrefixSums(Generic[_T]):
    """The sum of ``value(item)`` over successive sequences, reusing each value of the previous
    sequence at every position where the new sequence holds the same item: past the prefix they
    share (:func:`common_prefix`, by identity or equal), positions are compared by identity in C,
    so a sequence that only replaced a few items (an output hidden or cut) calls ``value`` for
    those and for what it appended. ``value`` must depend only on an item's value.

    Invariant: ``_values[i] == value(_previous[i])`` and ``_total == sum(_values)``."""

    def __init__(self, value: Callable[[_T], int]) -> None:
        self._value = value
        self._previous: tuple[_T, ...] = ()
        self._values: list[int] = []
        self._total = 0

    def total(self, items: Sequence[_T]) -> int:
        """``sum(map(value, items))``, computing only what changed (the values are updated in place,
        and a tuple is kept as it is: no copy of either per call)."""
        previous = self._previous
        shared = common_prefix(previous, items)
        try:
            total = self._total if shared >= len(previous) else self._replaced(previous, items, shared)
            self._total = total + self._resized(len(previous), items)
        except BaseException:  # the values no longer match the previous sequence: start afresh next time
            self._previous, self._values, self._total = (), [], 0
            raise
        self._previous = items if type(items) is tuple else tuple(items)
        return self._total

    def _replaced(self, previous: Sequence[_T], items: Sequence[_T], shared: int) -> int:
        """The total with the values of the positions both sequences hold, past ``shared``, that
        hold another item now (``previous[shared]`` is not ``items[shared]``)."""
        total, values, value = self._total, self._values, self._value
        both = min(len(previous), len(items))
        if shared >= both:
            return total
        differs = map(operator.is_not, previous[shared + 1 : both], items[shared + 1 : both])
        for index in (shared, *compress(count(shared + 1), differs)):
            new = value(items[index])
            total += new - values[index]
            values[index] = new
        return total

    def _resized(self, before: int, items: Sequence[_T]) -> int:
        """What the positions past the previous sequence's end add (or, when it is shorter, its
        dropped positions take away); the values are resized to ``items``."""
        values, value = self._values, self._value
        if len(items) <= before:
            dropped = sum(values[len(items) :])
            del values[len(items) :]
            return -dropped
        added = 0
        for index in range(before, len(items)):
            new = value(items[index])
            values.append(new)
            added += new
        return added


class HistoryTally:
    """The running token count of an append-only history, the iterations in it, and their order."""

    def __init__(self, counter: TokenCounter) -> None:
        self._counter = counter
        self._reset()

    def _reset(self) -> None:
        self.length = 0  # messages counted
        self.tokens = 0  # their tokens, framing included (TokenCounter.count_message)
        self.last_iteration = 0  # the newest iteration (0: none yet)
        self.ordered = True  # the iterations never decrease along the history
        self._seen: set[int] = set()
        self._iterations: list[int] = []  # ascending, > 0
        self._frozen: tuple[int, ...] = ()
        self._facts = HistoryFacts((), True)
        self._ends: tuple[Message, Message] | None = None  # the first and last counted messages
        self._previous: int | None = None  # the iteration of the last message counted

    @property
    def iterations(self) -> tuple[int, ...]:
        """The iterations (>= 1) present in the history, ascending."""
        if len(self._frozen) != len(self._iterations):
            self._frozen = tuple(self._iterations)
        return self._frozen

    @property
    def facts(self) -> HistoryFacts:
        """The history's :class:`~._draft.HistoryFacts` (the same object while they do not change)."""
        facts, iterations = self._facts, self.iterations
        if facts.iterations is not iterations or facts.ordered is not self.ordered:
            facts = self._facts = HistoryFacts(iterations, self.ordered)
        return facts

    def update(self, history: Sequence[Message]) -> None:
        """Count what was appended since the last call (all of it if ``history`` is not a continuation)."""
        if not self._continues(history):
            self._reset()
        count = self._counter.count_message
        tokens = self.tokens
        for index in range(self.length, len(history)):
            message = history[index]
            tokens += count(message)
            if message.iteration != self._previous:  # a message of the last one's iteration changes none
                self._enter(message.iteration)
        self.tokens = tokens
        self.length = len(history)
        self._ends = (history[0], history[-1]) if history else None

    def _continues(self, history: Sequence[Message]) -> bool:
        if self._ends is None:
            return True
        first, last = self._ends
        return len(history) >= self.length and history[0] is first and history[self.length - 1] is last

    def _enter(self, iteration: int) -> None:
        """A message of ``iteration`` follows one of another iteration (or none)."""
        if self._previous is not None and iteration < self._previous:
            self.ordered = False
        self._previous = iteration
        self.last_iteration = max(self.last_iteration, iteration)
        if iteration > 0 and iteration not in self._seen:
            self._seen.add(iteration)
            if self._iterations and iteration < self._iterations[-1]:
                self._iterations = sorted(self._seen)
            else:
                self._iterations.append(iteration)


class PromptTally:
    """Token counts of successive prompts, reusing the shared prefix with the previous one."""

    def __init__(self, counter: TokenCounter) -> None:
        self._sums: PrefixSums[Message] = PrefixSums(counter.count_message)

    def messages_tokens(self, messages: Sequence[Message]) -> int:
        """``sum(counter.count_message(m) for m in messages)``, counting only what changed."""
        return self._sums.total(messages)
