"""The run's aging state: decides, once per prompt, whether iterations age now, and keeps the schedule.

The :class:`~._step.Age` step renders what the schedule says; this object
decides the schedule (its docstring has the rule): it keeps running token
counts per iteration (verbatim, estimated aged, aged as shown), so a decision
costs O(new iterations), and the exact forms of an epoch are rendered once,
in the run's memo the step renders from too.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol

from ..._messages import Message
from ..._tokens import PROMPT_OVERHEAD, TokenCounter
from ..._trace import AgingCarry, AgingRecord, ContextRecord
from ._breakeven import CacheTerms, IdleGaps
from ._forms import AgedStyle, FormsMemo, age_batch, preamble
from ._schedule import AgingSchedule, Epoch
from ._written import note_tokens

__all__ = ["AgingSettings", "AgingState", "schedule_from_records"]


class AgingSettings(Protocol):
    """What the aging state reads of its step's settings (:class:`~._step.Age` is one)."""

    @property
    def window(self) -> int: ...

    @property
    def every(self) -> int | None: ...

    @property
    def condense_after(self) -> int | None: ...

    @property
    def chunk(self) -> int: ...

    @property
    def patience(self) -> float: ...

    @property
    def refresh_chunks(self) -> bool: ...

    @property
    def fade_after(self) -> int | None: ...

    @property
    def fade_cold(self) -> bool: ...

    def fade(
        self,
        groups: Mapping[int, tuple[Message, ...]],
        chunk: tuple[int, int, int],
        at: int,
        note: Message,
        memo: FormsMemo | None = None,
    ) -> Message: ...

    def style(self, retrieval: bool) -> AgedStyle: ...

    def note(
        self,
        groups: Mapping[int, tuple[Message, ...]],
        chunk: tuple[int, int, int],
        retrieval: bool,
        memo: FormsMemo | None = None,
        *,
        before: frozenset[str] = frozenset(),
    ) -> Message | None: ...

    def chunk_notes(
        self,
        groups: Mapping[int, tuple[Message, ...]],
        schedule: AgingSchedule,
        retrieval: bool,
        memo: FormsMemo | None = None,
        *,
        now: int | None = None,
    ) -> Iterator[tuple[tuple[int, int, int], Message | None, frozenset[str]]]: ...

    @property
    def written_chars(self) -> int: ...

    def written(
        self,
        groups: Mapping[int, tuple[Message, ...]],
        through: int,
        at: int,
        retrieval: bool,
        memo: FormsMemo | None = None,
    ) -> tuple[Message, ...]: ...


class AgingState:
    """Aging decisions of one run; :meth:`update` once per prompt, :attr:`schedule` for the build."""

    def __init__(
        self,
        step: AgingSettings,
        *,
        counter: TokenCounter,
        terms: CacheTerms,
        retrieval: bool,
        memo: FormsMemo | None = None,
    ) -> None:
        """``memo``: the run's forms, shared with the step that renders them."""
        self.step = step
        self.memo = memo if memo is not None else FormsMemo()
        self.terms = terms
        self.counter = counter
        self.retrieval = retrieval
        self.style = step.style(retrieval)
        self.schedule = AgingSchedule()
        self._groups: dict[int, list[Message]] = {}
        # each iteration's messages as a tuple, made again only when the iteration gains a message:
        # the same object from one prompt to the next (the memos' keys compare it first by identity)
        self._tuples: dict[int, tuple[Message, ...]] = {}
        self._absorbed = 0
        self._verbatim: dict[int, int] = {}  # tokens per complete iteration, as in the history
        self._estimate: dict[int, int] = {}  # estimated tokens of iterations waiting to age, once aged
        self._shown: dict[int, int] = {}  # tokens of aged (not condensed) iterations, as shown
        self._shown_sums: dict[int | None, int] = {}  # sums over _shown (None: all; k: those after k)
        # (through, upto, saving, estimated): sums over the iterations through+1..upto waiting to
        # age, each added once (its tokens and estimate are fixed once it left the window)
        self._pending_sums: tuple[int, int, int, int] = (-1, 0, 0, 0)
        self._newest = 0  # the newest iteration absorbed
        self._notes = 0  # tokens of the condensed notes
        self._held: frozenset[str] = frozenset()  # the kept lines the notes hold (a newer one omits them)
        self._written = 0  # tokens of the note of the files the agent wrote (:mod:`._written`)
        self._accounted = 0  # epochs counted into _shown / _notes
        self._counted_through = 0  # aged iterations counted into _shown
        self._rent = 0.0
        self._rent_condense = 0.0
        self._rent_fade = 0.0
        # each condensed chunk with its note as written and the tokens of its note as shown
        self._chunks: list[tuple[tuple[int, int, int], Message | None, int]] = []
        self._fade_estimates: dict[int, int] = {}  # tokens fading a chunk (by its last) would save
        self.idle = IdleGaps()  # the run's request times: what a rewrite costs after a gap
        self.new_epoch: Epoch | None = None  # the epoch the last update decided, if any
        # What this update found already, by its arguments (one prompt's decision may ask twice):
        # (due, last, saving, note tokens) of :meth:`_condense_saving`, (last, through, tokens) of
        # the files note (:meth:`_written_net`); reset at each update
        self._saving_at: tuple[int, int, int, int] = (-1, -1, 0, 0)
        self._written_at: tuple[int, int, int] = (-1, -1, 0)

    def restore(self, schedule: AgingSchedule, carry: AgingCarry | None = None) -> None:
        """Continue from a recorded schedule and what the rule had accrued (resuming a run; without
        ``carry``, from nothing)."""
        self.schedule = schedule
        carry = carry or AgingCarry()
        self._rent, self._rent_condense, self._rent_fade = carry.rent, carry.rent_condense, carry.rent_fade
        self._fade_estimates.clear()
        self.idle = IdleGaps(carry.calls, carry.last, carry.gaps, carry.lost)
        self._shown.clear()
        self._shown_sums.clear()
        self._notes = 0
        self._accounted = 0
        self._counted_through = 0

    # ------------------------------------------------------------------ per prompt
    def update(
        self,
        history: Sequence[Message],
        last: int,
        *,
        tool_tokens: int = 0,
        summary_tokens: int = 0,
        schema_tokens: int = 0,
        retrieve_tokens: int = 0,
        at: float | None = None,
    ) -> AgingSchedule:
        """Decide for the prompt after iteration ``last``; the schedule to build it with.

        ``tool_tokens``: the tool schemas sent now; ``schema_tokens`` > 0: ageing would also
        start sending ``context_retrieve``'s schema (the tools grow to that many tokens), so the
        whole prompt would be re-sent; ``retrieve_tokens``: what that schema adds to every later
        prompt. ``at``: when the prompt will be sent (None: unknown).
        """
        self.idle.observe(at, self.terms)
        self._saving_at, self._written_at = (-1, -1, 0, 0), (-1, -1, 0)
        self._absorb(history)
        self._account()
        self.new_epoch = None
        limit = last - self.step.window  # iterations up to here may age
        if limit < 1:
            return self.schedule
        self._estimate_pending(limit, last)
        added = self._first_overhead(retrieve_tokens if schema_tokens else 0)
        epoch = self._decide(
            last, limit, tool_tokens, summary_tokens, schema_tokens=schema_tokens, added=added
        )
        self._accrue_fade(last)
        if epoch is not None:
            epoch = self._fade_along(epoch, last)
            if epoch.condensed > self.schedule.condensed:
                self._rent_condense = 0.0
            if epoch.faded > self.schedule.faded:
                self._rent_fade = 0.0
            self.schedule = self.schedule.then(epoch)
            self.new_epoch = epoch
            self._rent = 0.0
            self._account()
        return self.schedule

    def record(self) -> AgingRecord:
        """How far iterations aged and were condensed, and the epoch decided for this prompt (resume
        rebuilds the schedule from these, :func:`schedule_from_records`)."""
        epoch = self.new_epoch
        decided = (epoch.at, epoch.through, epoch.condensed) if epoch is not None else None
        idle = self.idle
        carry = AgingCarry(
            self._rent, self._rent_condense, idle.calls, idle.last, idle.gaps, idle.lost, self._rent_fade
        )
        schedule = self.schedule
        return AgingRecord(schedule.through, schedule.condensed, decided, carry, schedule.faded)

    # ------------------------------------------------------------------ the rule
    def _decide(
        self, last: int, limit: int, tool_tokens: int, summary_tokens: int, *, schema_tokens: int, added: int
    ) -> Epoch | None:
        through, done = self.schedule.through, self.schedule.condensed
        due = self._condense_due(last, done)
        fixed = PROMPT_OVERHEAD + tool_tokens + self._tokens(0)
        if schema_tokens:  # the tools change: nothing before the aged part stays cached
            summary_tokens += fixed + schema_tokens - tool_tokens
            fixed = 0
        if self.step.every is not None:
            if last % self.step.every == 0 and (limit > through or due > done):
                return Epoch(last, max(limit, through), due)
            return None
        saving, estimated = self._pending(through, limit)
        saving -= added
        window = sum(self._tokens(k) for k in range(limit + 1, last) if k in self._groups)
        notes = self._note_tokens() if self.schedule.epochs else 0
        tail = estimated + window + summary_tokens
        aged = self._shown_after(None)
        if due > done:
            epoch = self._condense_decision(last, limit, due, fixed, tail, added=added)
            if epoch is not None:
                return epoch
        per_call = self.terms.rent(max(saving, 0))
        self._rent += per_call
        prefix = fixed + notes + self._notes + aged
        # what the notes' breakpoint keeps (pricing the aged part's breakpoint too aged more, saved no more)
        kept = fixed + notes + self._notes if notes else 0
        cost = self.terms.rewrite_cost(prefix, tail + (0 if notes else self._note_tokens()), fixed, kept)
        if (
            saving > 0
            and self._pays(self._rent, cost, per_call)
            and self._written_pays(last, limit, saving, cost)
        ):
            return Epoch(last, limit, due if due > done and self._condense_along(due, last) else done)
        return None

    def _written_pays(self, last: int, limit: int, saving: int, cost: float) -> bool:
        """Whether the epoch still pays once the note of the files the agent wrote is counted: it
        grows by what the epoch hides (less saving) and is re-sent with the tail (more cost)."""
        if self.step.written_chars <= 0:
            return True
        net, new = self._written_net(last, limit, saving)
        if net <= 0:
            return False
        per_call = self.terms.rent(net)
        return self._pays(self._rent, cost + self.terms.extra * new, per_call)

    def _written_net(self, last: int, through: int, saving: int) -> tuple[int, int]:
        """(``saving`` less what the note of the files the agent wrote grows by when iterations
        through ``through`` are hidden at ``last``, that note's tokens then); (saving, 0) when off."""
        if self.step.written_chars <= 0:
            return saving, 0
        known_last, known_through, new = self._written_at
        if (known_last, known_through) != (last, through):  # else counted earlier in this update
            tuples = self._tuples  # read, not kept: those through ``last`` (all of them, mostly)
            groups = tuples if self._newest <= last else {k: v for k, v in tuples.items() if k <= last}
            new = self._count(self.step.written(groups, through, last, self.retrieval, self.memo))
            self._written_at = (last, through, new)
        return saving - max(new - self._written, 0), new

    def _count(self, messages: Sequence[Message]) -> int:
        """Tokens of the note of the files the agent wrote (:func:`~._written.note_tokens`)."""
        return sum(note_tokens(m, self.counter) for m in messages)

    def _condense_saving(self, due: int, last: int) -> tuple[int, int]:
        """(tokens condensing through ``due`` now would save, the note's tokens): the note as an
        epoch at ``last`` would render it (once per update and arguments)."""
        known_due, known_last, saving, note = self._saving_at
        if (known_due, known_last) == (due, last):
            return saving, note
        done = self.schedule.condensed
        chunk = [k for k in range(done + 1, due + 1) if k in self._groups]
        now = sum(self._shown.get(k, self._estimate.get(k, self._tokens(k))) for k in chunk)
        tuples = self._tuples
        groups = {k: tuples[k] for k in range(done + 1, last + 1) if k in tuples}
        rendered = self.step.note(groups, (done + 1, due, last), self.retrieval, self.memo, before=self._held)
        note = self.memo.note_tokens(rendered, self.counter) if rendered is not None else 0
        self._saving_at = (due, last, now - note, note)
        return now - note, note

    def _first_overhead(self, schema: int) -> int:
        """Tokens the first epoch adds to every later prompt: the aged part's preamble and
        ``schema``, what ``context_retrieve``'s schema adds when ageing starts sending it (0 once
        an epoch was decided).

        Invariant: an epoch's per-call saving is what the prompt loses net of this, so a first
        epoch whose aged iterations shrink by less than it adds is never decided."""
        if self.schedule.epochs:
            return 0
        return self._note_tokens() + max(schema, 0)

    def _condense_decision(
        self, last: int, limit: int, due: int, fixed: int, tail: int, *, added: int
    ) -> Epoch | None:
        """A condensing epoch (it also ages through ``limit``): the files note it re-renders is
        counted too, its growth off the saving and its tokens in the re-sent tail; ``added``: what
        a first epoch adds to every prompt (:meth:`_first_overhead`), off the saving."""
        saving, note = self._condense_saving(due, last)
        saving -= added
        if saving <= 0:
            return None
        through = max(limit, self.schedule.through)
        saving, written = self._written_net(last, through, saving)
        if saving <= 0:
            return None
        per_call = self.terms.rent(saving)
        self._rent_condense += per_call
        refreshed = self._refreshed()
        after = self._shown_after(due) + refreshed
        prefix = fixed + self._note_tokens() + self._notes - refreshed
        lost = note + after + tail + written
        kept = prefix if self.schedule.epochs and not refreshed else 0  # the notes' breakpoint
        if self._pays(self._rent_condense, self.terms.rewrite_cost(prefix, lost, fixed, kept), per_call):
            return Epoch(last, through, due)
        return None

    def _condense_along(self, due: int, last: int) -> bool:
        """Whether condensing goes along with a level-1 epoch: that epoch re-sends the tail anyway,
        so condensing adds only the aged part before it (the note and the aged iterations after the
        chunk); condense when the rent paid for the chunk covers that."""
        saving, note = self._condense_saving(due, last)
        if saving <= 0:
            return False
        after = self._shown_after(due) + self._refreshed()
        return self._pays(self._rent_condense, self.terms.extra * (note + after), self.terms.rent(saving))

    # ------------------------------------------------------------------ level 3
    def _fade_pending(self) -> list[tuple[tuple[int, int, int], Message, int]]:
        """The chunks due to fade and not faded yet (``Age.fade_after``: those whose last iteration
        is that far behind the condensed boundary), each with its note and the note's tokens."""
        after = self.step.fade_after
        if after is None:
            return []
        faded, bound = self.schedule.faded, self.schedule.condensed - after
        return [(c, n, t) for c, n, t in self._chunks if faded < c[1] <= bound and n is not None]

    def _faded_tokens(self, chunk: tuple[int, int, int], note: Message, at: int) -> int:
        """Tokens of ``chunk``'s note faded when the newest iteration is ``at``."""
        faded = self.step.fade(self._tuples, chunk, at, note, self.memo)
        return self.memo.note_tokens(faded, self.counter)

    def _accrue_fade(self, last: int) -> None:
        """The rent fading the due chunks would save this call (each chunk's saving estimated once,
        as it first fell due). None with ``Age.fade_cold``: a fade then waits for a request that
        finds nothing cached, where its cost is nothing and no rent is needed."""
        if self.step.fade_cold:
            return
        saving = 0
        for chunk, note, tokens in self._fade_pending():
            estimate = self._fade_estimates.get(chunk[1])
            if estimate is None:
                estimate = self._fade_estimates[chunk[1]] = tokens - self._faded_tokens(chunk, note, last)
            saving += estimate
        if saving > 0:
            self._rent_fade += self.terms.rent(saving)

    def _fade_along(self, epoch: Epoch, last: int) -> Epoch:
        """``epoch`` fading the due chunks too when their rent covers what that adds to its rewrite
        (from the first faded note to where ``epoch`` rewrites: the end of the notes when it
        condenses, else the end of the aged iterations; ``Age.fade_cold``: only on a request that
        finds nothing cached); else ``epoch`` keeping what faded."""
        faded = self.schedule.faded
        pending = self._fade_pending() if self.idle.survival == 0 or not self.step.fade_cold else []
        if pending:
            new = sum(self._faded_tokens(c, n, last) for c, n, _ in pending)
            saving = sum(t for _, _, t in pending) - new
            due = pending[-1][0][1]
            newer = sum(t for c, _, t in self._chunks if c[1] > due)
            aged = 0 if epoch.condensed > self.schedule.condensed else self._shown_after(None)
            per_call = self.terms.rent(max(saving, 0))
            cost = self.terms.extra * (new + newer + aged)
            if saving > 0 and self._pays(self._rent_fade, cost, per_call):
                faded = due
        return Epoch(epoch.at, epoch.through, epoch.condensed, faded)

    def _refreshed(self) -> int:
        """Tokens of the earlier notes a condensing epoch re-sends (``Age.refresh_chunks``: all)."""
        return self._notes if self.step.refresh_chunks else 0

    def _pays(self, rent: float, cost: float, per_call: float) -> bool:
        """The rule: the rent paid has reached the one-time cost (scaled by ``Age.patience``), the
        cost being the share of the cache the request still finds (:class:`~._breakeven.IdleGaps`;
        after a gap past the cache's lifetime, nothing); the run is long enough for it to pay back
        (``per_call`` saved each later call, :meth:`~._breakeven.IdleGaps.pays_in_time`); and
        waiting for the next gap that loses the cache anyway would cost more."""
        due = self.step.patience * cost * self.idle.survival
        if rent < due or not self.idle.pays_in_time(per_call, due):
            return False
        wait = self.idle.calls_to_free()
        return math.isinf(wait) or per_call * wait >= due

    def _condense_due(self, last: int, done: int) -> int:
        """How far condensing may go now: whole chunks older than ``condense_after``."""
        after = self.step.condense_after
        if after is None:
            return done
        chunks = (last - after - done) // self.step.chunk
        return done + max(chunks, 0) * self.step.chunk

    # ------------------------------------------------------------------ bookkeeping
    def _absorb(self, history: Sequence[Message]) -> None:
        if len(history) < self._absorbed:  # another history: start over
            self._groups.clear()
            self._tuples.clear()
            self._verbatim.clear()
            self._estimate.clear()
            self._absorbed = 0
            self._newest = 0
            self._pending_sums = (-1, 0, 0, 0)
        touched: dict[int, None] = {}  # in order of first appearance, as ``_groups`` gains them
        for message in history[self._absorbed :]:
            self._groups.setdefault(message.iteration, []).append(message)
            touched[message.iteration] = None
            if message.iteration < self._newest:  # an older iteration changed: sum the waiting ones again
                self._pending_sums = (-1, 0, 0, 0)
            self._newest = max(self._newest, message.iteration)
        for iteration in touched:
            self._tuples[iteration] = tuple(self._groups[iteration])
        self._absorbed = len(history)

    def _pending(self, through: int, limit: int) -> tuple[int, int]:
        """(tokens aging would save, estimated aged tokens) of the iterations ``through+1..limit``
        waiting to age; each is added once, as it leaves the window (its tokens and estimate are
        fixed then), while ``through`` stays and ``limit`` only grows."""
        start, upto, saving, estimated = self._pending_sums
        if start != through or upto > limit:
            upto, saving, estimated = through, 0, 0
        for i in range(upto + 1, limit + 1):
            if i in self._groups:
                estimate = self._estimate[i]
                saving += max(self._tokens(i) - estimate, 0)
                estimated += estimate
        self._pending_sums = (through, limit, saving, estimated)
        return saving, estimated

    def _shown_after(self, due: int | None) -> int:
        """Tokens of the aged iterations as shown, all (None) or those after ``due`` (found once
        per change of what is shown)."""
        total = self._shown_sums.get(due)
        if total is None:
            shown = self._shown
            total = sum(shown.values()) if due is None else sum(t for k, t in shown.items() if k > due)
            self._shown_sums[due] = total
        return total

    def _tokens(self, iteration: int) -> int:
        """Tokens of an iteration as the history holds it (memoized once older ones are complete)."""
        tokens = self._verbatim.get(iteration)
        if tokens is None:
            tokens = sum(self.counter.count_message(m) for m in self._groups.get(iteration, ()))
            self._verbatim[iteration] = tokens
        return tokens

    def _batch(self, first: int, last: int) -> list[tuple[int, tuple[Message, ...]]]:
        tuples = self._tuples
        return [(k, tuples[k]) for k in range(first, last + 1) if k in tuples]

    def _head(self) -> tuple[Message, ...]:
        return self._tuples.get(0, ())

    def _estimate_pending(self, limit: int, last: int) -> None:
        """Estimated aged size of each iteration that left the window, computed once, as it left."""
        start = max(self.schedule.through, max(self._estimate, default=0)) + 1
        for i in range(start, limit + 1):
            if i in self._groups:
                forms = age_batch(self.style, self._head(), self._batch(i, last), i, i, memo=self.memo)
                self._estimate[i] = sum(self.counter.count_message(m) for m in forms[i])

    def _note_tokens(self) -> int:
        return self.counter.count_message(preamble(self.style))

    def _account(self) -> None:
        """Count the exact forms of the epochs not counted yet (the ones the step will render)."""
        epochs = self.schedule.epochs
        if self._accounted == len(epochs):
            return
        head = self._head()
        for first, last, at in self.schedule.batches():
            if last <= self._counted_through:
                continue
            forms = age_batch(self.style, head, self._batch(first, at), first, last, memo=self.memo)
            self._shown.update({k: sum(self.counter.count_message(m) for m in v) for k, v in forms.items()})
            self._shown_sums.clear()
            self._counted_through = last
        self._notes = 0
        groups = dict(self._tuples)
        if self.step.written_chars > 0 and epochs:
            at = epochs[-1].at
            upto = {k: v for k, v in groups.items() if k <= at}
            self._written = self._count(
                self.step.written(upto, epochs[-1].through, at, self.retrieval, self.memo)
            )
        self._held = frozenset()
        self._chunks = []
        for chunk, note, held in self.step.chunk_notes(groups, self.schedule, self.retrieval, self.memo):
            self._held = held
            tokens = self.memo.note_tokens(note, self.counter) if note is not None else 0
            self._notes += tokens
            self._chunks.append((chunk, note, tokens))
            for k in range(chunk[0], chunk[1] + 1):
                self._shown.pop(k, None)
            self._shown_sums.clear()
        self._accounted = len(epochs)


def schedule_from_records(records: Sequence[ContextRecord]) -> AgingSchedule:
    """The schedule a run's prompt records describe (the epochs their aging records decided,
    deduplicated; an epoch that would go back is a record this run did not write: left out)."""
    epochs: list[Epoch] = []
    for record in records:
        aging = record.aging
        if aging is None or aging.epoch is None:
            continue
        at, through, condensed = aging.epoch
        try:
            epoch = Epoch(at, through, condensed, aging.faded)
            if not epochs or epoch != epochs[-1]:
                AgingSchedule((*epochs[-1:], epoch))  # checks that it does not go back
                epochs.append(epoch)
        except ValueError:
            continue
    return AgingSchedule(tuple(epochs))
