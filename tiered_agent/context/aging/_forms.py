"""The aged forms of old iterations, fixed when they aged (rendered once per run, in the run's memo).

An *epoch* of the aging schedule (:mod:`._state`) ages a batch of iterations
``first..last`` while iterations ``last+1..at`` are the verbatim window. Their
forms are computed newest to oldest with ``seen``, the references already
shown later in the prompt (the task, the window, the newer iterations of the
batch as aged), so each form depends only on the history up to ``at``: a
prompt stays a pure function of (history, schedule, summary), and between two
epochs the aged part never changes (the prompt is append-only there).

* a tool output: superseded by a later identical call → one note naming that
  iteration; a ``context_retrieve`` result (a copy of older history) → one note;
  else short outputs whole, longer ones by :func:`~._novel.novel_lines`
  (JSON written on long lines one field per line, a multi-line string value as its lines:
  :mod:`._jsonform`) under a
  header with the exact ``context_retrieve`` call;
* an assistant message: reasoning shortened (:mod:`._reasoning`), calls kept,
  long arguments cut;
* a user message (a customer's reply, a format error) like an output.

Level 2 (:mod:`._condense`): a chunk of older iterations as one note.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Literal

import orjson
from cachetools import LRUCache

from ..._messages import Message, ToolCall
from ..._tokens import TokenCounter
from .._memo import run_memo
from .._names import RETRIEVE_TOOL_NAME, retrieve_call
from ..pipeline._draft import with_content
from ._condense import (
    NO_SCALE,
    NO_TERSE,
    ChunkReading,
    CondensedNote,
    NovelScale,
    Readings,
    Terse,
    condensed_note,
)
from ._jsonform import json_fields
from ._novel import Elided, kept_lines, novel_lines
from ._reads import Focus
from ._reasoning import ReasoningMode, cut_arguments, shorten_reasoning
from ._refs import NamedPaths, Refs, line_refs, lines_refs, paths_of, refs, tail_index, text_refs
from ._reports import NO_REPORTS, Reports, user_texts
from ._written import WrittenFiles

__all__ = ["AgedStyle", "Batch", "FormsMemo", "ShownBy", "age_batch", "condensed", "preamble"]

Batch = Sequence[tuple[int, tuple[Message, ...]]]  # (iteration, its messages), oldest first
# what shows an output line's names later, so that an aged output may leave the line out: any
# later message, or only those not the agent's (outputs, a person's messages, the notes)
ShownBy = Literal["any", "outputs"]


_RENDERED = 64  # notes whose parts a memo keeps (a note is counted right after it is rendered)


class FormsMemo:
    """The forms and notes one run rendered, so that deciding (the aging state) and rendering (the
    step) compute each once. Keyed by the identity of the messages they were rendered from (a
    history keeps the same message objects), each hit checked against those messages; bounded.
    Owned by the run's ``Age`` runtime: never shared between runs."""

    def __init__(self, batches: int = 2048, chunks: int = 1024) -> None:
        self.batches: LRUCache[tuple[object, ...], tuple[object, dict[int, tuple[Message, ...]]]] = LRUCache(
            batches
        )
        # What a note reads of its chunk alone, with the chunk's notes by what the later messages
        # tell it (:class:`~._condense.ChunkReading`)
        self.chunks: LRUCache[tuple[object, ...], ChunkReading] = LRUCache(chunks)
        # The chunk read last, per way of reading: a waiting chunk grows at its newest end, and the
        # reading of the grown chunk takes over what this one read (:class:`~._condense.ChunkReading`)
        self.growing: dict[tuple[object, ...], ChunkReading] = {}
        # What each iteration tells the forms of older ones (:class:`_Told`; bounded there)
        self.told: dict[tuple[int, ...], _Told] = {}
        # What a condensed note reads of each iteration (:class:`~._condense.Reading`; bounded there)
        self.readings: Readings = {}
        # The notes :func:`condensed` returned lately, by the identity of their message, with their
        # parts and, once counted, their tokens by the counter that counted them (bounded)
        self.rendered: dict[int, tuple[CondensedNote, TokenCounter | None, int]] = {}
        # The files the agent wrote, as the calls read so far left them (:mod:`._written`)
        self.written = WrittenFiles()
        # The faded notes (level 3), by the identity of the note, when it faded and the lines it
        # keeps per iteration, with the note
        self.faded: LRUCache[tuple[object, ...], tuple[Message, Message]] = LRUCache(chunks)
        # What iteration 0 (the task) names, with the messages it was read from (:meth:`head_refs`)
        self._head: tuple[tuple[Message, ...], frozenset[str]] = ((), frozenset())

    def head_refs(self, head: tuple[Message, ...]) -> frozenset[str]:
        """What ``head``'s messages name (:func:`_all_refs`), read once while the head stays."""
        known, found = self._head
        if head != known:  # the same messages, mostly: compared by identity first
            found = frozenset(chain.from_iterable(map(_all_refs, head)))
            self._head = (head, found)
        return found

    def keep(self, note: CondensedNote) -> None:
        """Keep a note :func:`condensed` returns, for :meth:`note_tokens` (the oldest kept goes first)."""
        key = id(note.message)
        hit = self.rendered.get(key)
        if hit is None or hit[0] is not note:
            if len(self.rendered) >= _RENDERED:
                del self.rendered[next(iter(self.rendered))]
            self.rendered[key] = (note, None, 0)

    def note_tokens(self, note: Message, counter: TokenCounter) -> int:
        """``counter.count_message(note)``: for a note :func:`condensed` returned lately, counted
        from its parts (:meth:`~._condense.CondensedNote.tokens`) once per note and counter."""
        key = id(note)
        hit = self.rendered.get(key)
        if hit is None or hit[0].message is not note:
            return counter.count_message(note)
        if hit[1] is not counter:
            hit = self.rendered[key] = (hit[0], counter, hit[0].tokens(counter))
        return hit[2]


@dataclass(frozen=True, slots=True)
class AgedStyle:
    """How aged iterations are shown (the :class:`~.steps.Age` step's knobs, plus whether retrieval is on)."""

    max_lines: int = 40
    head_lines: int = 2
    min_chars: int = 300
    line_chars: int = 240
    reasoning: ReasoningMode = "first"
    max_arg_chars: int = 200
    retrieval: bool = True
    reports: Reports = NO_REPORTS
    shown_by: ShownBy = "any"
    focus: int = 0  # ``Age.focus_reads``: reads of a file named in the last N iterations stay whole
    focus_newest: bool = False  # ``Age.focus_newest``: not those whose lines a newer read shows whole
    focus_chars: int = 0  # ``Age.focus_chars``: at most this many chars of them per batch (0: no bound)
    focus_near: int = 0  # ``Age.focus_near``: only their lines this near a line the agent named (0: whole)


def preamble(style: AgedStyle) -> Message:
    """The note before the aged iterations: what their forms mean (fixed text, iteration 0)."""
    how = {
        "first": "reasoning cut to its first sentence",
        "novel": "reasoning cut to its first sentence and the sentences naming something not shown later",
        "keep": "reasoning kept",
    }[style.reasoning]
    back = (
        " context_retrieve returns anything in full: each shortened output names its call, and"
        ' context_retrieve(iteration="N") gives iteration N.'
        if style.retrieval
        else ""
    )
    later = "not shown later" if style.shown_by == "any" else "no later output shows"
    text = (
        f"[Older iterations are shown condensed: {how} ([...] marks a cut), outputs cut to their first "
        f"lines and the lines naming files, identifiers or numbers {later} ([... N lines ...] marks "
        f"a gap).{back}]"
    )
    return _preamble_message(text)


@run_memo(16)
def _preamble_message(text: str) -> Message:
    """The note as a message: the same object for the same text within a run (a few variants exist)."""
    return Message(role="user", content=text, iteration=0)


# --------------------------------------------------------------------------- one batch
def _identity(head: tuple[Message, ...], batch: Batch) -> tuple[int, ...]:
    return tuple(map(id, chain(head, *(messages for _, messages in batch))))


def age_batch(
    style: AgedStyle,
    head: tuple[Message, ...],
    batch: Batch,
    first: int,
    last: int,
    *,
    memo: FormsMemo | None = None,
) -> dict[int, tuple[Message, ...]]:
    """Aged forms of iterations ``first..last`` of ``batch`` (which runs up to the epoch's newest
    iteration); ``head`` is iteration 0 (the task), always shown. ``memo``: the run's."""
    if memo is None:
        return _render_batch(style, head, batch, first, last)
    key = (style, first, last, _identity(head, batch))
    hit = memo.batches.get(key)
    if hit is not None and hit[0] == (head, tuple(batch)):
        return hit[1]
    forms = _render_batch(style, head, batch, first, last, memo=memo)
    memo.batches[key] = ((head, tuple(batch)), forms)
    return forms


def _render_batch(
    style: AgedStyle,
    head: tuple[Message, ...],
    batch: Batch,
    first: int,
    last: int,
    *,
    memo: FormsMemo | None = None,
) -> dict[int, tuple[Message, ...]]:
    seen = set(memo.head_refs(head)) if memo is not None else set(chain.from_iterable(map(_all_refs, head)))
    # what an output line must name beyond to be kept: what any later message shows (``"any"``), or
    # only what the later outputs and other messages not the agent's show (``"outputs"``; a name the
    # agent mentions is not the line that held it: the line stays with it); ``seen`` holds it then
    shown = set(seen) if style.shown_by == "outputs" else None
    later: dict[str, list[tuple[int, str, str]]] = {}  # call key -> (iteration, output, call id)
    used: set[str] = set()  # what the agent's later messages name (its reasoning, its calls)
    paths = NamedPaths()  # the same, to find the files they name otherwise
    forms: dict[int, tuple[Message, ...]] = {}
    users = _users_before(head, batch) if style.reports.user_max_chars else {}
    # what the agent's last ``style.focus`` iterations up to the epoch name (the files it works on)
    recent = batch[-1][0] - style.focus if batch else 0
    focus = Focus(style.focus_newest, style.focus_chars)
    for iteration, messages in reversed(batch):
        told = _told(messages, memo)
        if iteration > last:
            seen.update(told.lasting(style))
            if shown is not None:
                shown.update(told.others)
            if style.focus:
                _shown_reads(messages, focus)
        elif iteration >= first:
            earlier = users.get(iteration, frozenset())
            forms[iteration] = _age_iteration(
                style,
                messages,
                seen,
                later,
                frozenset(used),
                told=told,
                earlier=earlier,
                paths=paths,
                shown=shown,
                focus=focus,
            )
        if iteration > recent and style.focus:
            focus.names.update(told.actions)
        for key, output, call_id in told.calls:
            later.setdefault(key, []).append((iteration, output, call_id))
        used.update(told.actions)
        paths.join(told.paths)
    return forms


def _users_before(head: tuple[Message, ...], batch: Batch) -> dict[int, frozenset[str]]:
    """For each iteration of ``batch``, the texts of the user messages of the task and of the
    batch's older iterations (a later user message repeating one is not kept whole: :mod:`._reports`)."""
    texts = user_texts(head)
    before: dict[int, frozenset[str]] = {}
    for iteration, messages in batch:
        before[iteration] = texts
        texts = texts | user_texts(messages)
    return before


class _Told:
    """What an iteration's messages tell the forms of older ones: what its assistant messages name, its
    calls that have an output (by canonical call), and what it goes on showing once aged (per style).
    Found once per run when the run's memo keeps it (:attr:`FormsMemo.told`)."""

    __slots__ = ("_cut", "_lasting", "_others", "_shortened", "actions", "calls", "messages", "paths")

    def __init__(self, messages: tuple[Message, ...]) -> None:
        self.messages = messages  # kept: the memo's key is their identities
        self.actions = _actions(messages)
        self.paths = paths_of(self.actions)  # the files they name, to find them named otherwise
        outputs = {m.tool_call_id: m.text for m in messages if m.role == "tool"}
        self.calls = tuple(
            (_call_key(call), outputs[call.id], call.id)
            for message in messages
            for call in message.tool_calls
            if call.name != RETRIEVE_TOOL_NAME and call.id in outputs
        )
        self._lasting: dict[tuple[str, int], Refs] = {}
        self._others: Refs | None = None
        self._shortened: dict[tuple[str, str], str] = {}
        self._cut: dict[tuple[object, ...], str] = {}

    def lasting(self, style: AgedStyle) -> Refs:
        """What its messages go on showing once aged (:func:`_lasting_refs`)."""
        key = (style.reasoning, style.max_arg_chars)
        found = self._lasting.get(key)
        if found is None:
            names = chain.from_iterable(_lasting_refs(style, m, self) for m in self.messages)
            found = self._lasting[key] = tuple(dict.fromkeys(names))
        return found

    @property
    def others(self) -> Refs:
        """What its messages that are not the agent's (outputs, a person's) show, verbatim."""
        if self._others is None:
            names = chain.from_iterable(text_refs(m.text) for m in self.messages if m.role != "assistant")
            self._others = tuple(dict.fromkeys(names))
        return self._others

    def shortened(self, mode: ReasoningMode, text: str, seen: set[str]) -> str:
        """:func:`~._reasoning.shorten_reasoning` of one of its texts (``seen`` gains what it shows);
        found once per mode that does not read ``seen`` (every mode but ``"novel"``)."""
        if mode == "novel":
            return shorten_reasoning(text, mode, seen)
        key = (mode, text)
        shown = self._shortened.get(key)
        if shown is None:
            shown = self._shortened[key] = shorten_reasoning(text, mode, set())
        seen.update(refs(shown))
        return shown

    def cut(
        self, arguments: str, max_chars: int, wanted: frozenset[str], line_chars: int, max_lines: int
    ) -> str:
        """:func:`~._reasoning.cut_arguments` of one of its calls' arguments, found once per input
        (the lines' settings only count with ``wanted``)."""
        key = (arguments, max_chars, wanted, line_chars, max_lines) if wanted else (arguments, max_chars)
        cut = self._cut.get(key)
        if cut is None:
            cut = self._cut[key] = cut_arguments(
                arguments, max_chars, wanted, line_chars=line_chars, max_lines=max_lines
            )
        return cut


_TOLD = 4096  # iterations a run's memo keeps (the oldest told goes first)


def _told(messages: tuple[Message, ...], memo: FormsMemo | None) -> _Told:
    if memo is None:
        return _Told(messages)
    key = tuple(map(id, messages))
    hit = memo.told.get(key)  # a hit keeps its messages alive: the same identities are the same messages
    if hit is None:
        if len(memo.told) >= _TOLD:
            del memo.told[next(iter(memo.told))]
        hit = memo.told[key] = _Told(messages)
    return hit


def _actions(messages: tuple[Message, ...]) -> Refs:
    """What an iteration's assistant messages name."""
    names = chain.from_iterable(_all_refs(m) for m in messages if m.role == "assistant")
    return tuple(dict.fromkeys(names))


def _all_refs(message: Message) -> Iterable[str]:
    """What a message's text and its calls' arguments name (repeats possible)."""
    found = refs(message.text) if message.role == "assistant" else text_refs(message.text)
    if not message.tool_calls:
        return found
    return chain(found, *(refs(call.arguments) for call in message.tool_calls))


def _lasting_refs(style: AgedStyle, message: Message, told: _Told) -> Iterable[str]:
    """What a newer, still verbatim message will go on showing once it ages too: the agent's
    reasoning is cut then, so only what its shortened form names counts as shown later."""
    if message.role != "assistant" or style.reasoning == "keep":
        return _all_refs(message)
    found = refs(told.shortened(style.reasoning, message.content, set())) if message.content else ()
    if not message.tool_calls:
        return found
    cut = (refs(told.cut(c.arguments, style.max_arg_chars, frozenset(), 0, 0)) for c in message.tool_calls)
    return chain(found, *cut)


def _call_key(call: ToolCall) -> str:
    try:
        canonical = orjson.dumps(orjson.loads(call.arguments or "{}"), option=orjson.OPT_SORT_KEYS).decode()
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):  # not JSON; or nested past what orjson writes
        canonical = call.arguments
    return f"{call.name}\x00{canonical}"


def _age_iteration(
    style: AgedStyle,
    messages: tuple[Message, ...],
    seen: set[str],
    later: Mapping[str, list[tuple[int, str, str]]],
    used: frozenset[str] = frozenset(),
    *,
    told: _Told | None = None,
    earlier: frozenset[str] = frozenset(),
    paths: NamedPaths | None = None,
    shown: set[str] | None = None,
    focus: Focus | None = None,
) -> tuple[Message, ...]:
    """``focus``: the reads that stay whole, by what the agent's last ``style.focus`` iterations
    after these name (a read of a file it names: :class:`~._reads.Focus`); ``told``: what the run's
    memo found of these messages (their shortened reasoning and cut arguments, shared with what
    newer iterations read of them); ``earlier``: the texts of the user messages before them
    (:meth:`~._reports.Reports.keeps_user`); ``shown``: what the messages not the agent's show
    after them, what an output line is judged by when the style says so (``seen`` stays a superset
    of it: every name either holds)."""
    told = told if told is not None else _Told(messages)
    calls = {c.id: c for m in messages for c in m.tool_calls}
    out: list[Message] = []
    for message in reversed(messages):
        if message.role == "assistant":
            out.append(_age_assistant(style, message, seen, used, told, paths=paths))
        elif message.role == "tool":
            call = calls.get(message.tool_call_id or "")
            if focus is not None and style.focus_near and focus.keeps(call, message.text):
                # a read of a file the agent still works on: also its lines near what it named since
                out.append(_age_output(style, message, seen, None, shown, near=used))
                continue
            if style.reports.keeps(call, message) or (focus is not None and focus.keeps(call, message.text)):
                # a sub-agent's report, a read of a file the agent still works on: kept whole
                _show(text_refs(message.text), seen, shown)
                out.append(message)
                continue
            out.append(_age_output(style, message, seen, _superseded_by(call, message, later), shown))
        elif style.reports.keeps_user(message, earlier):  # a person's later message: kept whole
            _show(text_refs(message.text), seen, shown)
            out.append(message)
        else:
            out.append(_age_output(style, message, seen, None, shown))
    return tuple(reversed(out))


def _near_lines(
    style: AgedStyle,
    elided: Elided,
    *,
    lines: Sequence[str],
    names: Sequence[Refs],
    near: frozenset[str],
    mine: set[str],
    gaps: str = "lines",
) -> Elided:
    """``elided`` with every line within ``style.focus_near`` lines of one naming what ``near``
    holds kept too (``mine`` gains their names; ``gaps``: what a gap counts)."""
    width = style.focus_near
    keep = set(elided.kept)
    for index, found in enumerate(names):
        if not near.isdisjoint(found):
            keep.update(range(max(0, index - width), min(len(lines), index + width + 1)))
    if len(keep) == len(elided.kept):
        return elided
    order = tuple(sorted(keep))
    mine.update(chain.from_iterable(names[i] for i in order))
    return Elided(kept_lines(lines, order, style.line_chars, gaps), len(order), len(lines), order)


def _shown_reads(messages: tuple[Message, ...], focus: Focus) -> None:
    """The reads among a verbatim iteration's outputs, shown whole after the aged ones (``focus``)."""
    outputs = {m.tool_call_id: m.text for m in messages if m.role == "tool"}
    for message in messages:
        for call in message.tool_calls:
            if call.id in outputs:
                focus.shown(call, outputs[call.id])


def _show(names: Iterable[str], seen: set[str], shown: set[str] | None) -> None:
    """``names`` are shown from here on: in ``seen``, and in ``shown`` when outputs are judged by it
    (``seen`` stays a superset of ``shown``)."""
    if shown is None:
        seen.update(names)
        return
    found = names if isinstance(names, set) else set(names)  # read twice: not a one-pass iterator
    shown.update(found)
    seen.update(found)


def _superseded_by(
    call: ToolCall | None, message: Message, later: Mapping[str, list[tuple[int, str, str]]]
) -> int | None:
    """The newest later iteration that ran the same call with its own output (not a pointer to this one)."""
    if call is None or call.name == RETRIEVE_TOOL_NAME:
        return None
    own = message.tool_call_id or ""
    for iteration, output, call_id in reversed(later.get(_call_key(call), ())):
        if call_id != own and own not in output:
            return iteration
    return None


# --------------------------------------------------------------------------- one message
def _age_assistant(
    style: AgedStyle,
    message: Message,
    seen: set[str],
    used: frozenset[str],
    told: _Told,
    *,
    paths: NamedPaths | None = None,
) -> Message:
    """Reasoning shortened; long call arguments cut to their head plus, in text the agent wrote (a
    script, a file, a patch), the lines naming what its later messages name (``used``)."""
    content = message.content
    if content:
        content = told.shortened(style.reasoning, content, seen)
    calls = tuple(
        c
        if (a := _cut_call(style, c.arguments, used, told, paths)) == c.arguments
        else dataclasses.replace(c, arguments=a)
        for c in message.tool_calls
    )
    for call in calls:
        seen.update(refs(call.arguments))
    if content == message.content and calls == message.tool_calls:
        return message
    return dataclasses.replace(message, content=content, tool_calls=calls)


def _cut_call(
    style: AgedStyle, arguments: str, used: frozenset[str], told: _Told, paths: NamedPaths | None = None
) -> str:
    wanted = used.intersection(refs(arguments)) if len(arguments) > style.max_arg_chars else frozenset()
    if paths is not None and paths.names and len(arguments) > style.max_arg_chars:
        found = refs(arguments)  # the same files named otherwise (a relative path for an absolute one)
        wanted |= paths.among(frozenset(found), tail_index(found))
    return told.cut(arguments, style.max_arg_chars, wanted, style.line_chars, style.max_lines)


def _hint(style: AgedStyle, message: Message) -> str:
    if not style.retrieval:
        return ""
    if message.role == "tool" and message.tool_call_id:
        return f"; full output: {retrieve_call('tool_call_id', message.tool_call_id)}"
    return f"; full text: {retrieve_call('iteration', str(message.iteration))}"


def _age_output(
    style: AgedStyle,
    message: Message,
    seen: set[str],
    superseded: int | None,
    shown: set[str] | None = None,
    *,
    near: frozenset[str] = frozenset(),
) -> Message:
    """An output's aged form: its lines naming what ``shown`` (else ``seen``) does not hold; both
    gain what it shows. With ``near`` (``Age.focus_near`` = W), also every line within W lines of
    one naming what ``near`` holds (a superset of the form without it)."""
    text = message.text
    what = "output" if message.role == "tool" else "message"
    if message.role == "tool" and message.name == RETRIEVE_TOOL_NAME:  # a copy of older history
        lines = len(text.splitlines())
        note = f"[context_retrieve result, {lines:,} lines; repeat the call to see it again]"
        return with_content(message, note) if len(note) < len(text) else message
    if superseded is not None:
        note = f"[superseded: the same call ran again in iteration {superseded}{_hint(style, message)}]"
        return with_content(message, note) if len(note) < len(text) else message
    if len(text) < style.min_chars:
        _show(text_refs(text), seen, shown)
        return message
    fields = json_fields(text)
    mine: set[str] = set(seen if shown is None else shown)
    if fields is not None:
        elided = novel_lines(
            fields.lines,
            mine,
            head=style.head_lines,
            max_lines=style.max_lines,
            line_chars=style.line_chars,
            keys=fields.values,
            unit="lines" if fields.multiline else "fields",
        )
        unit = "lines of JSON fields" if fields.multiline else "JSON fields"
        if near:
            values = lines_refs(fields.values)
            gaps = "lines" if fields.multiline else "fields"
            elided = _near_lines(
                style, elided, lines=fields.lines, names=values, near=near, mine=mine, gaps=gaps
            )
    else:
        elided = novel_lines(
            text.splitlines(),
            mine,
            head=style.head_lines,
            max_lines=style.max_lines,
            line_chars=style.line_chars,
            names=line_refs(text),
        )
        unit = "lines"
        if near:
            elided = _near_lines(
                style, elided, lines=text.splitlines(), names=line_refs(text), near=near, mine=mine
            )
    header = f"[older {what}: {elided.shown} of {elided.total:,} {unit} shown{_hint(style, message)}]"
    form = f"{header}\n{elided.body}"
    if len(form) >= len(text):
        _show(text_refs(text), seen, shown)
        return message
    _show(mine, seen, shown)
    return with_content(message, form)


# --------------------------------------------------------------------------- level 2


def condensed(
    chunk: Batch,
    *,
    retrieval: bool,
    later: tuple[Message, ...] = (),
    referred: int = 0,
    novel: int = 0,
    scale: NovelScale = NO_SCALE,
    reports: Reports = NO_REPORTS,
    memo: FormsMemo | None = None,
    own: int = 0,
    since: tuple[Message, ...] = (),
    terse: Terse = NO_TERSE,
    before: frozenset[str] = frozenset(),
) -> Message:
    """The note for a chunk of condensed iterations; ``later``: the messages after the chunk up to
    the epoch that condensed it; ``since``: the messages after those up to a later epoch that
    chose its lines again (what they refer to counts as referred to afterwards; what they name
    does not count as shown later: they may be hidden by now); ``scale``: how the novel lines grow
    with an output's length; ``reports``: the outputs it keeps whole; ``memo``: the run's; ``own``:
    the agent's own lines kept under each iteration's line (:func:`~._condense.own_extra`); ``terse``:
    the kept lines it leaves out (:class:`~._condense.Terse`); ``before``: the kept lines the earlier
    notes hold (:func:`~._condense.held_lines`; left out with ``terse.across``)."""
    if memo is None:
        return condensed_note(
            chunk,
            retrieval=retrieval,
            later=later,
            referred=referred,
            novel=novel,
            scale=scale,
            reports=reports,
            own=own,
            since=since,
            terse=terse,
            before=before,
        )
    settings = (retrieval, referred, novel, scale, reports, own, terse)
    key = (*settings, _identity((), chunk))
    read = memo.chunks.get(key)
    if read is None or read.chunk != tuple(chunk):
        read = memo.chunks[key] = ChunkReading(
            chunk,
            reports,
            memo.readings,
            referred=referred,
            novel=novel,
            scale=scale,
            own=own,
            terse=terse,
            prefix=memo.growing.get(settings),  # the waiting chunk, before it grew (if it is)
        )
        memo.growing[settings] = read
    inputs = read.inputs(later)
    if since:
        label, _, seen = inputs
        inputs = (label, read.inputs(later + since)[1], seen)
    note = read.note(inputs, retrieval, memo.readings, before)
    memo.keep(note)
    return note.message
