"""The prompt while a policy's steps shape it: the messages, and what the steps decided about them.

Every prompt starts from the full history with the rolling summary, once one has
landed, standing in for the iterations it covers: ONE ``user`` message placed
where they began (:func:`start`). A policy's steps then reshape that
:class:`Draft` in order; each step is a pure function of the history (in the
:class:`BuildContext`) and the draft the earlier steps left. :meth:`Draft.built`
turns the last draft into the prompt and the statistics the trace records.

A draft keeps, per position, the message as shown and the message it stands for
(``originals``: what a later step measures, cuts or hides), which positions a
placeholder already replaced (``hidden``, with the chars it hides: no later step
touches them), the cuts made so far, and the duplicates shown as a pointer to an
identical output above (``pointers``; set last, see :meth:`~.steps.Step.finish`).
A step that drops or moves positions carries all of it along, so steps compose
in any order and the statistics describe the prompt as sent.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import filterfalse, repeat
from operator import attrgetter, le
from types import MappingProxyType

from ..._messages import Message
from ..._tokens import TokenCounter
from ..._trace import Cut
from .._memo import run_memo
from ..aging._schedule import AgingSchedule
from ._types import BuiltPrompt, ContextStats, StepEffects, Summary

__all__ = [
    "NOTHING_AGED",
    "BuildContext",
    "Draft",
    "HistoryFacts",
    "start",
    "summary_message",
    "with_content",
]


@run_memo(4096)
def with_content(message: Message, content: str) -> Message:
    """``message`` with ``content`` replaced (a new frozen message; memoized per run)."""
    return dataclasses.replace(message, content=content)


@run_memo(64)
def summary_message(summary: Summary, iteration: int | None = None) -> Message:
    """The ``user`` message for the iterations ``summary`` covers (one object per summary per run)."""
    return Message(
        role="user",
        content=f"[Summary of iterations {summary.first}-{summary.last}]\n{summary.text}",
        iteration=summary.first if iteration is None else iteration,
    )


_iteration = attrgetter("iteration")
NOTHING_AGED = AgingSchedule()  # a frozen value: one for every prompt without aging


@dataclass(frozen=True, slots=True)
class HistoryFacts:
    """What the context manager keeps up to date about the history, so no step rescans it per prompt.

    ``iterations``: the iterations (>= 1) present, ascending; ``ordered``: the
    iterations never decrease along the history (the loop's and the replay's
    histories), so an iteration range is one slice of it.
    """

    iterations: tuple[int, ...] = ()
    ordered: bool = False

    @classmethod
    def of(cls, history: Sequence[Message]) -> HistoryFacts:
        """The facts found by scanning ``history`` (for callers that do not keep them)."""
        numbers = list(map(_iteration, history))
        ordered = all(map(le, numbers, numbers[1:]))
        return cls(tuple(sorted({k for k in numbers if k > 0})), ordered)


@dataclass(frozen=True, slots=True)
class BuildContext:
    """What every step may read: the full history, the landed summary, the aging schedule, the counter."""

    history: Sequence[Message]
    summary: Summary | None
    counter: TokenCounter
    retrieval: bool  # context_retrieve is registered: placeholders and markers name the exact call
    facts: HistoryFacts
    schedule: AgingSchedule = field(default_factory=AgingSchedule)  # which iterations aged when (Age)
    # context_retrieve's schema is sent already (retrieval_schema="always", or an earlier prompt named a
    # retrieval call): naming one now changes no tools, so it re-sends nothing before it
    schema_sent: bool = True

    @classmethod
    def of(
        cls,
        history: Sequence[Message],
        summary: Summary | None,
        counter: TokenCounter,
        *,
        retrieval: bool,
        facts: HistoryFacts | None = None,
        schedule: AgingSchedule | None = None,
        schema_sent: bool = True,
    ) -> BuildContext:
        """``facts``: the history's facts if the caller keeps them (else found here);
        ``schedule``: the run's aging schedule (None: nothing aged)."""
        found = HistoryFacts.of(history) if facts is None else facts
        return cls(history, summary, counter, retrieval, found, schedule or NOTHING_AGED, schema_sent)

    @property
    def iterations(self) -> tuple[int, ...]:
        """The iterations (>= 1) present in the history, ascending."""
        return self.facts.iterations

    @property
    def last(self) -> int:
        """The newest iteration in the history (0 when there is none)."""
        return self.iterations[-1] if self.iterations else 0

    def span(self, first: int, last: int) -> tuple[int, int] | None:
        """The slice of the history holding iterations ``first..last`` when it is ordered, else None."""
        if not self.facts.ordered:
            return None
        return (
            bisect_left(self.history, first, key=_iteration),
            bisect_right(self.history, last, key=_iteration),
        )


@dataclass(frozen=True, slots=True)
class Draft:
    """The prompt so far (``messages``) and what the steps decided about each position.

    Every decision names the step that made it (its ``kind``): ``owners`` for the positions a
    step hid, cut or pointed, ``dropped_by`` for the iterations it left out; the prompt's record
    is kept per step from them (:meth:`built`).
    """

    messages: tuple[Message, ...]
    originals: tuple[Message, ...]  # per position: the message before outputs were cut or hidden
    hidden: Mapping[int, int] = field(default_factory=dict)  # position -> chars a placeholder hides
    cuts: Mapping[int, Cut] = field(default_factory=dict)  # position -> the cut shown there
    covered: frozenset[int] = frozenset()  # iterations the summary stands for
    dropped: frozenset[int] = frozenset()  # iterations left out behind a note
    dropped_by: Mapping[str, frozenset[int]] = field(default_factory=dict)  # step kind -> those it left out
    pointers: Mapping[int, int] = field(default_factory=dict)  # position -> chars a dedup pointer hides
    shows_summary: bool = False  # the summary is shown although every iteration it covers is too (aged)
    names_retrieval: bool = False  # a step shows retrieval calls in forms it does not record as hidden
    owners: Mapping[int, str] = field(default_factory=dict)  # position hidden, cut or pointed -> by
    stable: tuple[int, ...] = ()  # the prompt's stable prefixes (``BuiltPrompt.stable``)

    @property
    def names_any_retrieval(self) -> bool:
        """Whether the draft already shows a retrieval call: something cut, hidden, left out, summarized
        or shown in a form that names one."""
        return bool(self.names_retrieval or self.cuts or self.hidden or self.dropped or self.covered)

    def hide(self, placeholders: Mapping[int, tuple[Message, int]], by: str) -> Draft:
        """Show each placeholder at its position (with the chars it hides); those cuts are void."""
        messages = list(self.messages)
        for index, (message, _) in placeholders.items():
            messages[index] = message
        return dataclasses.replace(
            self,
            messages=tuple(messages),
            hidden={**self.hidden, **{i: chars for i, (_, chars) in placeholders.items()}},
            cuts={i: c for i, c in self.cuts.items() if i not in placeholders},
            pointers={i: c for i, c in self.pointers.items() if i not in placeholders},
            owners={**self.owners, **dict.fromkeys(placeholders, by)},
        )

    def cut(self, shown: Mapping[int, Message], cuts: Mapping[int, Cut], by: str) -> Draft:
        """Show the cut outputs ``shown`` at their positions and record ``cuts``."""
        messages = list(self.messages)
        for index, message in shown.items():
            messages[index] = message
        return dataclasses.replace(
            self,
            messages=tuple(messages),
            cuts={**self.cuts, **cuts},
            pointers={i: c for i, c in self.pointers.items() if i not in shown},
            owners={**self.owners, **dict.fromkeys(cuts, by)},
        )

    def point(self, pointers: Mapping[int, tuple[Message, int]], by: str) -> Draft:
        """Show each dedup pointer at its position (with the chars it spares); those cuts are void."""
        messages = list(self.messages)
        for index, (message, _) in pointers.items():
            messages[index] = message
        return dataclasses.replace(
            self,
            messages=tuple(messages),
            cuts={i: c for i, c in self.cuts.items() if i not in pointers},
            pointers={**self.pointers, **{i: chars for i, (_, chars) in pointers.items()}},
            owners={**self.owners, **dict.fromkeys(pointers, by)},
        )

    def drop(self, iterations: Iterable[int], by: str) -> Draft:
        """Record ``iterations`` as left out behind a note (by the step ``by``)."""
        left = frozenset(iterations)
        return dataclasses.replace(
            self,
            dropped=self.dropped | left,
            dropped_by={**self.dropped_by, by: self.dropped_by.get(by, frozenset()) | left},
        )

    def splice(
        self,
        start: int,
        stop: int,
        new: Sequence[Message],
        originals: Sequence[Message] | None = None,
        hidden: Mapping[int, int] | None = None,
        *,
        by: str = "",
    ) -> Draft:
        """Positions ``start:stop`` replaced by ``new`` (``hidden``: index into ``new`` -> chars hidden
        by the step ``by``)."""
        shift = len(new) - (stop - start)

        def moved(index: int) -> int | None:
            return index if index < start else None if index < stop else index + shift

        kept = {m: chars for i, chars in self.hidden.items() if (m := moved(i)) is not None}
        added = {start + i: chars for i, chars in (hidden or {}).items()}
        owners = {m: o for i, o in self.owners.items() if (m := moved(i)) is not None}
        stand_for = new if originals is None else originals
        return dataclasses.replace(
            self,
            messages=(*self.messages[:start], *new, *self.messages[stop:]),
            originals=(*self.originals[:start], *stand_for, *self.originals[stop:]),
            hidden=kept | added,
            cuts={m: c for i, c in self.cuts.items() if (m := moved(i)) is not None},
            pointers={m: c for i, c in self.pointers.items() if (m := moved(i)) is not None},
            owners=owners | dict.fromkeys(added, by),
        )

    def rebuild(self, sources: Sequence[int | Message]) -> Draft:
        """A draft of ``sources``: positions of this draft (with what was decided there) or new messages."""
        new_of = {source: j for j, source in enumerate(sources) if isinstance(source, int)}
        return dataclasses.replace(
            self,
            messages=tuple(s if isinstance(s, Message) else self.messages[s] for s in sources),
            originals=tuple(s if isinstance(s, Message) else self.originals[s] for s in sources),
            hidden={new_of[i]: chars for i, chars in self.hidden.items() if i in new_of},
            cuts={new_of[i]: c for i, c in self.cuts.items() if i in new_of},
            pointers={new_of[i]: c for i, c in self.pointers.items() if i in new_of},
            owners={new_of[i]: o for i, o in self.owners.items() if i in new_of},
        )

    def built(self, context: BuildContext) -> BuiltPrompt:
        """The prompt, and the statistics of what was done to get it (about what it shows), in all
        and per step."""
        iterations = context.iterations
        if not (self.owners or self.cuts or self.hidden or self.pointers or self.covered or self.dropped):
            return self._untouched(context.summary, iterations)
        out = self.covered | self.dropped
        summary = context.summary
        order = sorted(self.cuts)
        truncations = tuple(map(self.cuts.__getitem__, order))
        stats = ContextStats(
            truncations=truncations,
            masked_outputs=len(self.hidden),
            masked_chars=sum(self.hidden.values()),
            windowed_out=tuple(filter(out.__contains__, iterations)) if out else (),
            summary_range=(
                (summary.first, summary.last)
                if summary is not None and (self.covered or self.shows_summary)
                else None
            ),
            shown_iterations=tuple(filterfalse(out.__contains__, iterations)) if out else iterations,
            pointed_outputs=len(self.pointers),
            pointed_chars=sum(self.pointers.values()),
        )
        cut = self._pairs(order)
        effects = _Effects(self, (truncations, cut)) if self.owners or self.dropped else _NO_EFFECTS
        return BuiltPrompt(
            self.messages,
            stats,
            cut,
            names_retrieval=self.names_retrieval,
            effects=effects,
            stable=self.stable,
        )

    def _untouched(self, summary: Summary | None, iterations: tuple[int, ...]) -> BuiltPrompt:
        """:meth:`built` of a draft no step decided anything about (most prompts of most policies):
        every iteration shown, nothing cut, hidden or pointed, no effects."""
        shown = (summary.first, summary.last) if summary is not None and self.shows_summary else None
        stats = ContextStats(summary_range=shown, shown_iterations=iterations)
        return BuiltPrompt(
            self.messages,
            stats,
            names_retrieval=self.names_retrieval,
            effects=_NO_EFFECTS,
            stable=self.stable,
        )

    def _pairs(self, positions: Sequence[int]) -> tuple[tuple[Message, Message], ...]:
        """(original, as shown) at each of ``positions``."""
        originals, messages = self.originals.__getitem__, self.messages.__getitem__
        return tuple(zip(map(originals, positions), map(messages, positions), strict=True))

    def effects(
        self, all_cuts: tuple[tuple[Cut, ...], tuple[tuple[Message, Message], ...]] | None = None
    ) -> dict[str, StepEffects]:
        """What each step did to the prompt as sent, by step kind (positions in prompt order).

        ``all_cuts``: every cut of the draft and its (original, as shown) pair, in prompt order, when
        :meth:`built` found them already (a step that made all the cuts reuses them)."""
        owners = self.owners
        hidden = _by_owner(self.hidden, owners)
        cuts = _by_owner(self.cuts, owners)
        pointers = _by_owner(self.pointers, owners)
        dropped = self.dropped_by
        out: dict[str, StepEffects] = {}
        for kind in dict.fromkeys([*hidden, *cuts, *pointers, *dropped]):
            hid, cut, pointed = hidden.get(kind, []), cuts.get(kind, []), pointers.get(kind, [])
            if all_cuts is not None and len(cut) == len(self.cuts):  # this step made every cut
                shown_cuts, pairs = all_cuts
            else:
                shown_cuts, pairs = tuple(map(self.cuts.__getitem__, cut)), self._pairs(cut)
            out[kind] = StepEffects(
                hidden=len(hid),
                hidden_chars=_total(self.hidden, hid),
                cuts=shown_cuts,
                cut=pairs,
                pointers=len(pointed),
                pointer_chars=_total(self.pointers, pointed),
                dropped=tuple(sorted(dropped.get(kind, ()))),
            )
        return out


def _by_owner(decided: Mapping[int, object], owners: Mapping[int, str]) -> dict[str, list[int]]:
    """The positions of ``decided`` by the step that decided them, in prompt order."""
    kinds = set(map(owners.get, decided, repeat("")))
    if len(kinds) <= 1:  # one step decided them all (the usual case)
        return {kinds.pop(): sorted(decided)} if kinds else {}
    grouped: dict[str, list[int]] = {}
    for index in sorted(decided):
        grouped.setdefault(owners.get(index, ""), []).append(index)
    return grouped


def _total(chars: Mapping[int, int], positions: Sequence[int]) -> int:
    return sum(chars.values()) if len(positions) == len(chars) else sum(chars[i] for i in positions)


class _Effects(Mapping[str, StepEffects]):
    """A draft's per-step effects, grouped when first read (the trace's record reads them once per
    prompt; a build that is not recorded never pays for them)."""

    __slots__ = ("_all_cuts", "_computed", "_draft")

    def __init__(
        self, draft: Draft, all_cuts: tuple[tuple[Cut, ...], tuple[tuple[Message, Message], ...]]
    ) -> None:
        self._draft = draft
        self._all_cuts = all_cuts  # every cut and its pair, in prompt order (see Draft.effects)
        self._computed: dict[str, StepEffects] | None = None

    def _all(self) -> dict[str, StepEffects]:
        if self._computed is None:
            self._computed = self._draft.effects(self._all_cuts)
        return self._computed

    def __getitem__(self, kind: str) -> StepEffects:
        return self._all()[kind]

    def get(self, kind: str, default: StepEffects | None = None) -> StepEffects | None:  # type: ignore[override]
        # The record asks for every step's kind, most of which did nothing: no KeyError per miss.
        return self._all().get(kind, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


_NO_EFFECTS: Mapping[str, StepEffects] = MappingProxyType({})


def start(context: BuildContext) -> Draft:
    """The history, with the summary (if any) in place of the iterations it covers.

    Raises ValueError on a summary with an invalid range.
    """
    history = tuple(context.history)
    summary = context.summary
    if summary is None:
        return Draft(history, history)
    if not 1 <= summary.first <= summary.last:
        raise ValueError(f"invalid summary range {summary.first}-{summary.last}")
    iterations = context.iterations
    covered = frozenset(
        iterations[bisect_left(iterations, summary.first) : bisect_right(iterations, summary.last)]
    )
    if not covered:
        return Draft(history, history)
    stand_in = summary_message(summary, min(covered))
    span = context.span(summary.first, summary.last)
    if span is not None:  # the covered iterations are one run of the history
        messages = (*history[: span[0]], stand_in, *history[span[1] :])
        return Draft(messages, messages, covered=covered)
    out: list[Message] = []
    placed = False
    for message in history:
        if message.iteration not in covered:
            out.append(message)
        elif not placed:  # where the covered iterations began
            out.append(stand_in)
            placed = True
    messages = tuple(out)
    return Draft(messages, messages, covered=covered)
