"""Age: iterations older than a window are shown in a compressed form fixed when they aged.

The last ``window`` iterations are verbatim. Older ones are shown as the run's
aging schedule (:mod:`._schedule`) says: an *epoch* ages every iteration
before the window in one batch, and each batch keeps the form it got then
(:mod:`._forms`), so between two epochs the prompt only grows at its end and
the provider's cache holds all of it. The forms:

* outputs keep their first ``head_lines`` lines plus each line naming a file,
  identifier or number not shown later in the prompt (``shown_by="outputs"``: by no
  later message that is not the agent's own, so a name the agent only mentions keeps
  its line), up to ``max_lines``
  lines (JSON on long lines: one field per line); a header names the exact
  ``context_retrieve(tool_call_id=...)`` call; an output superseded by the same
  call later says so in one line; outputs under ``min_chars`` stay whole;
* the agent's own messages keep the first sentence of their reasoning
  (``reasoning="novel"``: also the sentences naming something not shown later;
  ``"keep"``: all of it) and every call, arguments over ``max_arg_chars`` cut;
* iterations older than ``condense_after`` are condensed, ``chunk`` at a time,
  into one note with one line per iteration (level 2; None: never), each
  followed by up to ``keep_referred`` lines of its outputs naming what the agent
  referred to afterwards (when it was condensed) and up to ``keep_novel`` lines
  naming the most things shown nowhere after them (with ``novel_per_lines`` = K > 0:
  up to one per K lines of the iteration's outputs when that is more, at most
  ``max_lines``; 0: ``keep_novel`` whatever the length), and up to ``keep_own`` lines of
  what the agent itself wrote there past its line (reasoning after its first sentence, the lines
  of its calls' text: a script, a file, a patch), those naming what it referred to afterwards
  first, then those naming what nothing after them names; with ``named_again`` = N > 1, an
  iteration whose call named a file (a path, a name with an extension) the agent named again
  afterwards keeps N times the novel lines (default 2; 1: off); with
  ``refresh_chunks``, every condensing epoch chooses every chunk's kept lines again, what the
  agent referred to since counting as referred to (the epoch re-sends the earlier notes, and the
  break-even rule counts them; issue 18 candidate; off); with ``bare_lines``, a note leaves
  out the kept lines that say nothing beyond markup or the exit code its line states, and with
  ``unique_lines`` those kept verbatim under a newer iteration of the same note
  (:class:`~._condense.Terse`; both on by default, issue 18); with ``across_notes``, a note also
  leaves out the kept lines an earlier note holds (notes never change once written, so those
  lines are still in the prompt; on by default, issue 18); with ``spare_held``, such a line
  left out takes no place among its iteration's kept lines: the next one comes in (on by default);
* with ``fade_after`` = N (None: never), a condensed chunk whose last iteration is at least N
  behind the condensed boundary fades (level 3, :func:`~._condense.faded_note`): its note keeps
  its iteration lines and, under each, at most ``fade_keep`` of its kept lines, those naming
  what the agent named since the chunk was condensed (``fade_named="since"``; ``"after"``: since
  the chunk's last iteration, so the lines it kept as referred to stay; ``"all"``: any;
  ``"unseen"``: those naming something no output after the chunk shows); with
  ``fade_reasoning=False`` its lines also lose the agent's reasoning; the head still names the
  chunk's retrieval call. A fade rewrites the prompt from the first faded note, so it only goes
  along with an epoch that rewrites anyway, when its own rent covers what it adds to that rewrite
  (issue 18; off: every variant measured lost more on the rulers than it saved, docs/policies.md);
  with ``fade_cold``, only on a request that finds nothing cached (after an idle gap past the
  cache's lifetime: the whole prompt is written again whatever it holds);
* the outputs of ``keep_tools`` up to ``keep_max_chars`` stay whole at both
  levels: a sub-agent's report (Claude Code's ``Task``; :mod:`._reports`); so do the later
  ``user`` messages of at most ``keep_user_chars`` characters (a person steering the session;
  0, the default: aged like outputs);
* the files the agent wrote with a hidden write (since their newest whole write) that its last
  ``written_recent`` iterations still work on (write, run, read or name) are
  shown with their current text in one note after the aged iterations, up to
  ``written_chars`` characters (0: never; :mod:`._written`); the note changes
  only at epochs, and an epoch must pay for what it adds;
* with ``focus_reads`` = K > 0 (0, the default: off), an output that shows one file (a read:
  ``cat``, ``sed -n``, ``nl``, an editor's ``view``, ``grep`` in one file; :mod:`._reads`) stays
  whole when it ages (level 1) if the agent named that file (its path or file name) after it in
  its last K iterations up to the epoch: the file it is still working on, whose lines and line
  numbers its next edits and reads take; a condensed note (level 2) reads it as before. With
  ``focus_newest`` (off by default) such a read is not kept when a newer read of the same file up
  to the epoch shows all its lines whole (in the verbatim window, or kept whole itself); with
  ``focus_chars`` = N > 0 (0: no bound) the reads one epoch keeps whole add up to at most N
  characters, the newest first (:class:`~._reads.Focus`); with ``focus_near`` = W > 0 (0: whole)
  such a read shows only its first lines and the lines within W lines of one naming what the
  agent's later messages name.

A fixed note before the aged iterations says what these forms mean. The
rolling summary, when the policy has one, follows the aged iterations, so the
cached prefix survives its updates; the task (iteration 0) is never aged.

**When** (the run's aging state, :class:`~._state.AgingState`, decides; the
step only renders): with ``every=None``, by the break-even (ski-rental) rule
under the run's cache and price model (:class:`~._breakeven.CacheTerms`).
Per call, ageing now would remove ``D`` tokens of dead weight and change the
prompt after ``P`` tokens, re-sending ``T`` tokens::

    carry = read x (1 - miss) + miss            # price per call of a cached token
    extra = write - carry                       # a re-sent token on top of keeping it
    lost  = T + P - block_floor(P)              # implicit caches (0 cached below min_tokens)
          = T + P - kept                        # explicit caches (Anthropic): all after the notes'
                                                #   breakpoint (before any: after tools + system)
    rent += carry x D                           # every call the dead weight is carried
    age when rent >= extra x lost               # then rent = 0

with ``read``/``write`` the cached/written token price over the input price
(litellm's prices of the model, else 0.1 and the cache's write premium),
``miss`` the cache's expected miss rate and ``block``/``min_tokens`` its hit
granularity. Condensing (level 2) is the same rule with its own rent, its
``D`` the condensed chunk's saving and ``P`` the prefix before that chunk; when
it fires, level 1 ages too (the rewrite covers it). When level 1 fires first,
a due chunk is condensed along if its rent covers what that adds to the
rewrite (the note and the aged iterations after the chunk: the rest is re-sent
anyway). ``patience`` scales every threshold: 1 is the break-even rule; below 1 ages
sooner (leaner prompts, more hidden), above 1 later. ``every=N`` ages every N
iterations instead (for comparison).
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar, Literal, TypeVar

from cachetools import LRUCache

from ..._affinity import current_affinity, long_ttl_requested
from ..._messages import Message
from ..._trace import AgingRecord, ContextRecord, Event, ModelRequest
from .._step import Run, Step, StepRuntime, Turn, require
from ..pipeline._draft import BuildContext, Draft, summary_message
from ._breakeven import CacheTerms
from ._condense import (
    NO_SCALE,
    NovelScale,
    Terse,
    call_line,
    faded_note,
    held_lines,
    named_by,
    shown_by,
)
from ._forms import AgedStyle, FormsMemo, ShownBy, age_batch, condensed, preamble
from ._reasoning import ReasoningMode
from ._reports import Reports, earlier_users
from ._schedule import AgingSchedule
from ._state import AgingState, schedule_from_records
from ._written import written_note

__all__ = ["Age", "AgeRuntime", "FadeNamed", "iteration_groups"]

T = TypeVar("T")

# Which kept lines a faded note keeps (:meth:`Age.fade`): those naming what the agent named since
# the chunk was condensed, or since its last iteration; any; those naming what no output after the
# chunk shows
FadeNamed = Literal["since", "after", "all", "unseen"]


@dataclass(frozen=True, slots=True)
class _Aged:
    """What an Age step rendered for one schedule: a function of the history up to its last epoch."""

    prefix: tuple[Message, ...]  # the history the forms were rendered from (compared by identity)
    groups: Mapping[int, tuple[Message, ...]]
    notes: tuple[Message, ...]
    forms: Mapping[int, tuple[Message, ...]]
    gone: frozenset[int]
    written: tuple[Message, ...] = ()  # the files the agent wrote and still works on (:mod:`._written`)
    held: frozenset[str] = frozenset()  # the kept lines the notes hold (``Age.across_notes``)


# Between two epochs every prompt shows the same aged part: rendering it again would make each
# prompt cost more as the history grows. A run's runtime keeps its last few renders by schedule
# (each checked against the messages it was rendered from); the step alone renders from none.
Renders = LRUCache[AgingSchedule, _Aged]
_RENDERS = 4


@dataclass(frozen=True, slots=True)
class Age(Step):
    """Older iterations in the compressed form fixed when they aged (see the module docstring)."""

    kind: ClassVar[str] = "age"
    window: int = 2
    max_lines: int = 60
    head_lines: int = 2
    min_chars: int = 300
    line_chars: int = 240
    reasoning: ReasoningMode = "first"
    max_arg_chars: int = 200
    condense_after: int | None = 4
    chunk: int = 2
    keep_referred: int = 8
    keep_novel: int = 5
    novel_per_lines: int = 8
    keep_own: int = 3
    every: int | None = None
    patience: float = 1.0
    keep_tools: tuple[str, ...] = ("Task", "Agent")
    keep_max_chars: int = 50_000
    keep_user_chars: int = 0
    written_chars: int = 16000
    written_recent: int = 10
    focus_reads: int = 0
    focus_newest: bool = False
    focus_chars: int = 0
    focus_near: int = 0
    refresh_chunks: bool = False
    named_again: int = 2
    bare_lines: bool = True
    unique_lines: bool = True
    across_notes: bool = True
    spare_held: bool = True
    fade_after: int | None = None
    fade_keep: int = 2
    fade_named: FadeNamed = "since"
    fade_reasoning: bool = True
    fade_cold: bool = False
    shown_by: ShownBy = "any"

    def __post_init__(self) -> None:
        tools = self.keep_tools
        require(
            isinstance(tools, list | tuple) and all(isinstance(t, str) and t for t in tools),
            f"Age.keep_tools must be a list of tool names, got {tools!r}",
        )
        object.__setattr__(self, "keep_tools", tuple(tools))
        for name in (
            "window",
            "max_lines",
            "line_chars",
            "max_arg_chars",
            "chunk",
            "written_recent",
            "named_again",
        ):
            value = getattr(self, name)
            require(
                isinstance(value, int) and value >= 1, f"Age.{name} must be a positive integer, got {value!r}"
            )
        for name in (
            "head_lines",
            "min_chars",
            "keep_referred",
            "keep_novel",
            "novel_per_lines",
            "keep_own",
            "keep_max_chars",
            "keep_user_chars",
            "written_chars",
            "focus_reads",
            "focus_chars",
            "focus_near",
            "fade_keep",
        ):
            value = getattr(self, name)
            require(isinstance(value, int) and value >= 0, f"Age.{name} must be >= 0, got {value!r}")
        require(
            self.reasoning in ("first", "novel", "keep"),
            f"Age.reasoning must be 'first', 'novel' or 'keep', got {self.reasoning!r}",
        )
        after = self.condense_after
        require(
            after is None or (isinstance(after, int) and after > self.window),
            f"Age.condense_after must be None or more than the window, got {after!r}",
        )
        require(
            self.shown_by in ("any", "outputs"),
            f"Age.shown_by must be 'any' or 'outputs', got {self.shown_by!r}",
        )
        require(
            self.fade_named in ("since", "after", "all", "unseen"),
            f"Age.fade_named must be 'since', 'after', 'all' or 'unseen', got {self.fade_named!r}",
        )
        fade = self.fade_after
        require(
            fade is None or (isinstance(fade, int) and not isinstance(fade, bool) and fade >= 0),
            f"Age.fade_after must be None or >= 0, got {fade!r}",
        )
        require(
            fade is None or not self.refresh_chunks,
            "Age.fade_after and Age.refresh_chunks do not go together (a refresh re-renders faded notes)",
        )
        every = self.every
        require(
            every is None or (isinstance(every, int) and every >= 1),
            f"Age.every must be None or >= 1, got {every!r}",
        )
        for name in (
            "refresh_chunks",
            "focus_newest",
            "bare_lines",
            "unique_lines",
            "across_notes",
            "spare_held",
            "fade_reasoning",
            "fade_cold",
        ):
            value = getattr(self, name)
            require(isinstance(value, bool), f"Age.{name} must be true or false, got {value!r}")
        patience = self.patience
        require(
            isinstance(patience, int | float) and not isinstance(patience, bool) and patience > 0,
            f"Age.patience must be a positive number, got {patience!r}",
        )

    def style(self, retrieval: bool) -> AgedStyle:
        """The forms' settings."""
        return AgedStyle(
            self.max_lines,
            self.head_lines,
            self.min_chars,
            self.line_chars,
            self.reasoning,
            self.max_arg_chars,
            retrieval,
            self.reports(),
            self.shown_by,
            self.focus_reads,
            self.focus_newest,
            self.focus_chars,
            self.focus_near,
        )

    def novel_scale(self) -> NovelScale:
        """How the novel lines of a condensed iteration grow with its outputs' length (none when
        ``novel_per_lines`` is 0: then neither the length nor a file named again changes them)."""
        if self.novel_per_lines <= 0:
            return NO_SCALE
        return NovelScale(self.novel_per_lines, self.max_lines, self.named_again)

    def terse(self) -> Terse:
        """What the condensed notes leave out of the lines they keep (:class:`~._condense.Terse`)."""
        spare = self.spare_held and (
            self.unique_lines or self.across_notes
        )  # nothing left out: no place spared
        return Terse(self.bare_lines, self.unique_lines, self.across_notes, spare)

    def held(self, before: frozenset[str], note: Message | None) -> frozenset[str]:
        """The kept lines the notes hold once ``note`` follows those holding ``before`` (what a newer
        note leaves out with ``across_notes``; nothing when off)."""
        if not self.across_notes or note is None:
            return before
        return before | held_lines(note)

    def reports(self) -> Reports:
        """The outputs kept whole (:mod:`._reports`)."""
        return Reports(frozenset(self.keep_tools), self.keep_max_chars, self.keep_user_chars)

    def start(self, run: Run) -> AgeRuntime:
        return AgeRuntime(self, run)

    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        return self.assemble(draft, context, Renders(_RENDERS), None)

    def assemble(
        self, draft: Draft, context: BuildContext, renders: Renders, memo: FormsMemo | None
    ) -> Draft:
        """The draft with the schedule's aged part in place (``renders``, ``memo``: the run's)."""
        if context.schedule.through == 0:
            return draft
        # The window stays verbatim whatever the schedule says (the run's aging state never ages
        # into it; a schedule restored or built by hand might).
        schedule = context.schedule.upto(context.last - self.window)
        if schedule.through == 0:
            return replace(draft, names_retrieval=True)  # the note before aged forms names the call
        aged = self._rendered(schedule, context, renders, memo)
        return _assemble(
            draft,
            context,
            groups=aged.groups,
            notes=aged.notes,
            forms=aged.forms,
            gone=aged.gone,
            written=aged.written,
        )

    def _rendered(
        self, schedule: AgingSchedule, context: BuildContext, renders: Renders, memo: FormsMemo | None
    ) -> _Aged:
        """The aged part for ``schedule``, reused while the history up to its last epoch stays the
        same; a schedule one epoch longer than a rendered one renders only what that epoch added."""
        span = context.span(0, schedule.epochs[-1].at)
        if span is None:  # an unordered history: no reuse
            return self._render(schedule, tuple(context.history), context.retrieval, memo)
        prefix = tuple(context.history[span[0] : span[1]])
        hit = renders.get(schedule)
        if hit is not None and _same(hit.prefix, prefix):
            return hit
        earlier = renders.get(AgingSchedule(schedule.epochs[:-1]))
        if earlier is not None and _same(earlier.prefix, prefix[: len(earlier.prefix)]):
            groups = {**earlier.groups, **iteration_groups(prefix[len(earlier.prefix) :])}
            aged = self._extend(earlier, schedule, groups, prefix, context.retrieval, memo=memo)
        else:
            aged = self._render(schedule, prefix, context.retrieval, memo)
        renders[schedule] = aged
        return aged

    def _render(
        self, schedule: AgingSchedule, prefix: tuple[Message, ...], retrieval: bool, memo: FormsMemo | None
    ) -> _Aged:
        """The aged part, epoch by epoch from none."""
        groups = iteration_groups(prefix)
        aged = _Aged((), groups, (preamble(self.style(retrieval)),), {}, frozenset())
        for count in range(1, len(schedule.epochs) + 1):
            epochs = AgingSchedule(schedule.epochs[:count])
            aged = self._extend(aged, epochs, groups, prefix, retrieval, memo=memo)
        return aged

    def _extend(
        self,
        earlier: _Aged,
        schedule: AgingSchedule,
        groups: Mapping[int, tuple[Message, ...]],
        prefix: tuple[Message, ...],
        retrieval: bool,
        *,
        memo: FormsMemo | None,
    ) -> _Aged:
        """``earlier`` (the render of all but the last epoch) plus what the last epoch aged and condensed."""
        before = schedule.epochs[-2] if len(schedule.epochs) > 1 else None
        epoch = schedule.epochs[-1]
        forms = dict(earlier.forms)
        if epoch.through > (before.through if before else 0):
            first = (before.through if before else 0) + 1
            batch = [(k, groups[k]) for k in range(first, epoch.at + 1) if k in groups]
            style = self.style(retrieval)
            forms.update(age_batch(style, groups.get(0, ()), batch, first, epoch.through, memo=memo))
        notes, gone, held = earlier.notes, earlier.gone, earlier.held
        if epoch.condensed > (before.condensed if before else 0):
            chunk = ((before.condensed if before else 0) + 1, epoch.condensed, epoch.at)
            if self.refresh_chunks:  # every chunk chosen again from what came after it up to now
                rendered, held = self._notes(groups, schedule, retrieval, memo)
                notes = (notes[0], *rendered)
            else:
                note = self.note(groups, chunk, retrieval, memo, before=held)
                notes = (*notes, note) if note is not None else notes
                held = self.held(held, note)
            gone = gone | {k for k in range(chunk[0], chunk[1] + 1) if k in groups}
        if epoch.faded > (before.faded if before else 0):
            notes = self._fade(notes, groups, schedule, memo)
        kept = {k: v for k, v in forms.items() if k not in gone}
        return _Aged(
            prefix,
            groups,
            notes,
            kept,
            gone,
            self.written(groups, epoch.through, epoch.at, retrieval, memo),
            held,
        )

    def _fade(
        self,
        notes: tuple[Message, ...],
        groups: Mapping[int, tuple[Message, ...]],
        schedule: AgingSchedule,
        memo: FormsMemo | None,
    ) -> tuple[Message, ...]:
        """``notes`` with those of the chunks ``schedule``'s last epoch faded in their faded form."""
        before = schedule.epochs[-2].faded if len(schedule.epochs) > 1 else 0
        at = schedule.epochs[-1].at
        chunks = [c for c in schedule.chunks() if before < c[1] <= schedule.faded]
        out = list(notes)
        for index, note in enumerate(notes):
            chunk = next((c for c in chunks if c[0] <= note.iteration <= c[1]), None)
            if chunk is not None:
                out[index] = self.fade(groups, chunk, at, note, memo)
        return tuple(out)

    def fade(
        self,
        groups: Mapping[int, tuple[Message, ...]],
        chunk: tuple[int, int, int],
        at: int,
        note: Message,
        memo: FormsMemo | None = None,
    ) -> Message:
        """The faded form (level 3) of ``note``, the note of ``chunk`` (``first, last, at`` it was
        condensed), faded when the newest iteration was ``at`` (once per note and ``at`` with the
        run's ``memo``)."""
        # the run's memo is shared by the policies aging alike
        key = (id(note), at, self.fade_keep, self.fade_named, self.fade_reasoning)
        hit = memo.faded.get(key) if memo is not None else None
        if hit is not None and hit[0] is note:
            return hit[1]
        first, last, condensed_at = chunk
        readings = memo.readings if memo is not None else None
        start = condensed_at + 1 if self.fade_named == "since" else last + 1
        since = shown = None
        after = [groups[k] for k in range(start, at + 1) if k in groups]
        if self.fade_named == "unseen":
            shown = shown_by(after)
        elif self.fade_named != "all":
            since = named_by(after, readings)
        reports = self.reports()
        chunk_groups = [(k, groups[k]) for k in range(first, last + 1) if k in groups]
        whole = _whole(chunk_groups, reports)
        lines = None if self.fade_reasoning else {k: call_line(k, m) for k, m in chunk_groups}
        faded = faded_note(note, since, keep=self.fade_keep, whole=whole, lines=lines, shown=shown)
        if memo is not None:
            memo.keep(faded)
            memo.faded[key] = (note, faded.message)
        return faded.message

    def _notes(
        self,
        groups: Mapping[int, tuple[Message, ...]],
        schedule: AgingSchedule,
        retrieval: bool,
        memo: FormsMemo | None,
    ) -> tuple[tuple[Message, ...], frozenset[str]]:
        """The notes of every chunk ``schedule`` condensed, each as if condensed at its last epoch
        (oldest first, each without what the ones before it hold), and the kept lines they hold."""
        walked = list(self.chunk_notes(groups, schedule, retrieval, memo, now=schedule.epochs[-1].at))
        notes = tuple(note for _, note, _ in walked if note is not None)
        return notes, walked[-1][2] if walked else frozenset()

    def chunk_notes(
        self,
        groups: Mapping[int, tuple[Message, ...]],
        schedule: AgingSchedule,
        retrieval: bool,
        memo: FormsMemo | None = None,
        *,
        now: int | None = None,
    ) -> Iterator[tuple[tuple[int, int, int], Message | None, frozenset[str]]]:
        """Each chunk ``schedule`` condensed, oldest first, with its note (:meth:`note`, ``now`` as
        there; each without the kept lines the ones before it hold) and the kept lines the notes
        through it hold (as written; a chunk the schedule faded comes with its faded note, :meth:`fade`)."""
        held: frozenset[str] = frozenset()
        fades = dict(schedule.fades())
        for chunk in schedule.chunks():
            note = self.note(groups, chunk, retrieval, memo, now=now, before=held)
            held = self.held(held, note)  # the note as written: the newer notes were chosen under it
            at = fades.get(chunk[1])
            yield (
                chunk,
                note if note is None or at is None else self.fade(groups, chunk, at, note, memo),
                held,
            )

    def written(
        self,
        groups: Mapping[int, tuple[Message, ...]],
        through: int,
        at: int,
        retrieval: bool,
        memo: FormsMemo | None = None,
    ) -> tuple[Message, ...]:
        """The note of the files the agent wrote that an epoch aging through ``through`` when the
        newest iteration was ``at`` hid, and the run still works on (:mod:`._written`); ``memo``:
        the run's (the files as the calls it read so far left them)."""
        note = written_note(
            groups,
            through=through,
            at=at,
            max_chars=self.written_chars,
            recent=self.written_recent,
            retrieval=retrieval,
            files_of=memo.written if memo is not None else None,
        )
        return (note,) if note is not None else ()

    def note(
        self,
        groups: Mapping[int, tuple[Message, ...]],
        chunk: tuple[int, int, int],
        retrieval: bool,
        memo: FormsMemo | None = None,
        *,
        now: int | None = None,
        before: frozenset[str] = frozenset(),
    ) -> Message | None:
        """The condensed note of iterations ``first..last``, condensed when the newest was ``at``
        (its lines chosen again when the newest is ``now``: what came since counts as referred to;
        with ``across_notes``, without the kept lines the earlier notes hold: ``before``, :meth:`held`)."""
        first, last, at = chunk
        batch = [(k, groups[k]) for k in range(first, last + 1) if k in groups]
        if not batch:
            return None
        later = tuple(m for k in range(last + 1, at + 1) for m in groups.get(k, ()))
        since = tuple(m for k in range(at + 1, now + 1) for m in groups.get(k, ())) if now else ()
        return condensed(
            batch,
            retrieval=retrieval,
            later=later,
            referred=self.keep_referred,
            novel=self.keep_novel,
            scale=self.novel_scale(),
            reports=self.reports(),
            memo=memo,
            own=self.keep_own,
            since=since,
            terse=self.terse(),
            before=before,
        )


class AgeRuntime(StepRuntime):
    """Aging over one run: decides the schedule before each prompt (the run's
    :class:`~._state.AgingState`), renders what it says (reusing the aged part between epochs),
    records how far iterations aged, and continues from a trace's records."""

    def __init__(self, step: Age, run: Run) -> None:
        super().__init__(step)
        self.settings = step
        # the run's forms and notes, shared with any other policy of the run aging the same way
        self.memo = run.memos.get(
            FormsMemo,
            (
                step.style(run.retrieval),
                step.keep_referred,
                step.keep_novel,
                step.novel_scale(),
                step.keep_own,
                step.terse(),
            ),
        )
        self.renders = Renders(_RENDERS)
        terms = run.cache_terms if run.cache_terms is not None else CacheTerms.for_model(run.model)
        self.model = run.model
        self.unrecorded = run.unrecorded_tokens
        self.state = AgingState(
            step, counter=run.counter, terms=terms, retrieval=run.retrieval, memo=self.memo
        )
        self.counter = run.counter
        self.summaries = run.summaries

    def decide(self, turn: Turn) -> None:
        """Whether iterations age now (the break-even rule, under the tools and summary the prompt
        will carry): the schedule the prompt is built with."""
        counter = self.counter
        summary = self.summaries.latest
        sent = turn.tools
        tool_tokens = counter.count_tools(sent)
        offered = tool_tokens if len(sent) == len(turn.offered) else counter.count_tools(turn.offered)
        longer = self.state.terms.longer
        if longer is not None and long_ttl_requested(self.model, current_affinity()):
            self.state.terms = longer  # the live requests now write the cache's longer lifetime
        turn.schedule = self.state.update(
            turn.history,
            turn.last,
            tool_tokens=tool_tokens,
            summary_tokens=counter.count_text(summary.text) if summary is not None else 0,
            schema_tokens=0 if offered == tool_tokens else offered + self.unrecorded,
            retrieve_tokens=offered - tool_tokens,
            at=turn.at,
        )

    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        return self.settings.assemble(draft, context, self.renders, self.memo)

    def record(self) -> AgingRecord:
        """How far iterations aged and were condensed, and the epoch decided for this prompt."""
        return self.state.record()

    def restore(self, events: Sequence[Event]) -> None:
        """Continue from the epochs the trace's prompt records hold (either record format), and
        from what the newest of them says the rule had accrued (older traces: nothing)."""
        records = [ContextRecord.from_dict(e.context) for e in events if isinstance(e, ModelRequest)]
        carry = next((r.aging.carry for r in reversed(records) if r.aging is not None), None)
        self.state.restore(schedule_from_records(records), carry)


def _same(a: tuple[Message, ...], b: tuple[Message, ...]) -> bool:
    return len(a) == len(b) and all(map(operator.is_, a, b))


def iteration_groups(history: Sequence[Message]) -> dict[int, tuple[Message, ...]]:
    """The history's messages per iteration, in order."""
    groups: dict[int, list[Message]] = {}
    for message in history:
        groups.setdefault(message.iteration, []).append(message)
    return {k: tuple(v) for k, v in groups.items()}


def _is(message: Message, stand_in: Message | None) -> bool:
    return stand_in is not None and message.iteration == stand_in.iteration and message == stand_in


def _assemble(
    draft: Draft,
    context: BuildContext,
    *,
    groups: Mapping[int, tuple[Message, ...]],
    notes: Sequence[Message],
    forms: Mapping[int, tuple[Message, ...]],
    gone: frozenset[int],
    written: Sequence[Message] = (),
) -> Draft:
    """[task] [notes: what aged forms mean, condensed chunks] [aged iterations] [``written``: the
    note of the files the agent wrote, fixed at the last epoch] [summary] [the rest]."""
    summary = context.summary
    stand_in = summary_message(summary, min(draft.covered)) if summary is not None and draft.covered else None
    aged = frozenset(forms) | gone
    rest = [
        i
        for i, m in enumerate(draft.messages)
        if m.iteration not in aged and m.iteration and not _is(m, stand_in)
    ]
    messages, originals, hidden, notes_end = _aged_front(draft, notes, forms, groups)
    stable = _stable(notes_end, len(messages))
    after = list(written)
    if stand_in is not None and summary is not None:
        # after the aged iterations; tagged 0 like the note: no iteration it covers is left whole
        after.append(summary_message(summary, 0))
    messages.extend(after)
    originals.extend(after)
    moved = {i: len(messages) + j for j, i in enumerate(rest)}
    return replace(
        draft,
        messages=(*messages, *(draft.messages[i] for i in rest)),
        originals=(*originals, *(draft.originals[i] for i in rest)),
        hidden=hidden | _moved(draft.hidden, moved),
        cuts=_moved(draft.cuts, moved),
        owners=dict.fromkeys(hidden, Age.kind) | _moved(draft.owners, moved),
        covered=draft.covered - aged,
        dropped=draft.dropped | gone,
        dropped_by={**draft.dropped_by, Age.kind: draft.dropped_by.get(Age.kind, frozenset()) | gone},
        shows_summary=draft.shows_summary or stand_in is not None,
        names_retrieval=True,  # aged forms and the note before them name their retrieval calls
        stable=stable,
    )


def _aged_front(
    draft: Draft,
    notes: Sequence[Message],
    forms: Mapping[int, tuple[Message, ...]],
    groups: Mapping[int, tuple[Message, ...]],
) -> tuple[list[Message], list[Message], dict[int, int], int]:
    """The prompt's front, shown and original: the opening messages (iteration 0), the notes, each
    aged iteration's form in order; the characters each aged output shows fewer, by position; where
    the notes end."""
    head = [i for i, m in enumerate(draft.messages) if m.iteration == 0]
    messages = [draft.messages[i] for i in head] + list(notes)
    originals = [draft.originals[i] for i in head] + list(notes)
    notes_end = len(messages)
    hidden: dict[int, int] = {}  # the aged outputs shown shorter
    for k in sorted(forms):
        for shown, original in zip(forms[k], groups[k], strict=True):
            if shown is not original and shown.role == "tool":
                hidden[len(messages)] = max(len(original.text) - len(shown.text), 0)
            messages.append(shown)
            originals.append(original)
    return messages, originals, hidden, notes_end


def _moved(by_position: Mapping[int, T], moved: Mapping[int, int]) -> dict[int, T]:
    """``by_position``'s entries of the messages that ``moved`` (old position -> new), at their new places."""
    return {moved[i]: value for i, value in by_position.items() if i in moved}


def _stable(notes_end: int, aged_end: int) -> tuple[int, ...]:
    """The prompt's stable prefixes: through the aged iterations (an epoch that only ages more
    changes the prompt after them) and through the condensed notes (a condensing epoch changes it
    after them). The files note after the aged iterations changes at every epoch."""
    return (aged_end, notes_end) if aged_end != notes_end else (aged_end,)


def _whole(chunk: Sequence[tuple[int, tuple[Message, ...]]], reports: Reports) -> set[int]:
    """The iterations of ``chunk`` (oldest first) whose note section keeps a message whole, by the
    condensed note's rule (:func:`~._condense.kept_reports`)."""
    earlier = earlier_users((messages for _, messages in chunk), reports)
    return {k for (k, messages), users in zip(chunk, earlier, strict=False) if reports.of(messages, users)}
