"""The second, older level of aging: a chunk of old iterations as one note, one line per iteration.

Each line says what the agent set out to do (the first sentence of its
reasoning), the calls it made (arguments cut) and what came back (exit code,
line count, the telling line of an error), e.g.::

    [Iterations 1-20, one line each; full text: context_retrieve(iteration="1-20")]
    1. I need to understand the structure of the repository first. → bash: ls -la → exit 0, 31 lines
    2. I will reproduce the issue. → bash: python reproduce.py → exit 1: ValueError: app 'x' isn't installed

Each line can be followed by a few lines of the iteration's outputs: those
naming what the agent went on to refer to (``referred``), and those naming the
most things nothing after them names (``novel``, the aged outputs' rule on a
budget of a few lines, or, with a :class:`NovelScale`, of one line per so many lines of
the outputs: a long read keeps more than a short one); each chosen greedily, the line
covering the most such names first, and shown in the order of the output. An iteration whose outputs
are short (at most :data:`SHORT_LINES` lines: a one-line answer, a short listing,
a test summary) keeps them all: choosing among five lines spares little, and
their lines are what the agent's next steps build on.

With ``own`` > 0, up to that many lines of what the agent itself wrote in the
iteration follow too (:func:`own_extra`): its reasoning after the first sentence and
the lines of its calls' text (a script, a file, a patch it wrote), those naming what
it referred to afterwards first, then those naming what nothing after them names. An
agent re-uses its own names (a helper it defined, a setting its script set, a method
it quoted while reasoning) long after the line that shows its call is all that is
left of them. What they show never stops an output line from being kept: the
agent naming a thing is not the output line that showed it.

The note is a ``user`` message: the chunk's assistant and tool messages are
gone, so no call can lose its result.

A note condensed long enough ago fades (level 3, :func:`faded_note`): its
iteration lines stay, and of the lines kept under them only those naming what the
agent named since the note was written; its head still names the chunk's
retrieval call.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from collections.abc import Collection, Iterable, KeysView, Mapping, Sequence, Set
from dataclasses import dataclass
from itertools import chain, repeat
from operator import itemgetter

import orjson

from ..._messages import Message, ToolCall
from ..._tokens import TokenCounter
from .._heuristics import RETURNCODE_TAG, error_line, exit_text, looks_like_error, parse_exit_code
from .._memo import run_memo
from .._names import retrieve_call
from ._jsonform import json_fields, output_lines
from ._reasoning import first_sentence, split_sentences
from ._refs import NamedPaths, Refs, line_refs, lines_refs, paths_of, refs, refs_of_all, tail_index, text_refs
from ._reports import NO_REPORTS, Reports, earlier_users

__all__ = [
    "NO_SCALE",
    "NO_TERSE",
    "SHORT_LINES",
    "ChunkReading",
    "CondensedNote",
    "Lines",
    "NovelScale",
    "Reading",
    "Readings",
    "Terse",
    "call_line",
    "condensed_line",
    "condensed_note",
    "faded_note",
    "format_label",
    "held_lines",
    "informative_lines",
    "is_bare",
    "named_by",
    "referred_lines",
    "shown_by",
]

_SENTENCE_CHARS = 160
_CALL_CHARS = 120
_ERROR_CHARS = 120
_REFERRED_CHARS = 160
_ARROW = " → "
SHORT_LINES = 5  # outputs of at most this many lines are kept whole under their iteration's line
_FORMAT_LABEL = re.compile(r"^([A-Z][A-Z_]{2,23}:)\s")


@dataclass(frozen=True, slots=True)
class NovelScale:
    """How the novel lines kept under a condensed iteration's line grow with its outputs' length:
    with ``per_lines`` > 0, one per ``per_lines`` lines of the outputs (rounded up) when that is
    more than the fixed budget, never more than ``cap`` (nor fewer than the fixed budget); with
    ``per_lines`` = 0 the fixed budget whatever the length."""

    per_lines: int = 0
    cap: int = 40
    again: int = 1  # an iteration whose call named a file the agent named again: this many times more

    def budget(self, novel: int, lines: int, again: bool = False) -> int:
        """The novel lines an iteration whose outputs have ``lines`` lines keeps, given the fixed
        budget ``novel`` (``again``: its call named a file the agent named again afterwards)."""
        if self.per_lines <= 0:
            return novel
        share = lines * (self.again if again else 1)
        return max(novel, min(math.ceil(share / self.per_lines), self.cap))

    def keeps(self, novel: int) -> bool:
        """Whether some iteration may keep novel lines (then what comes after the chunk is read)."""
        return novel > 0 or (self.per_lines > 0 and self.cap > 0)


NO_SCALE = NovelScale()


@dataclass(frozen=True, slots=True)
class Terse:
    """What a note leaves out of the lines it keeps under an iteration's line (each off by default):
    ``bare``, a line carrying nothing but markup (tags, brackets, punctuation) or nothing but the
    exit code the iteration's line already states (:func:`is_bare`); ``repeats``, a line kept
    verbatim under a newer iteration of the same note (the newest stays, so a note growing at its
    end never changes an older line's choice of what it shows); ``across``, a line an earlier note
    holds (the notes are fixed once written, so that line is still in the prompt: the caller passes
    the lines the earlier notes hold, :func:`held_lines`); ``spare``, a line left out as a repeat
    (``repeats``, ``across``) takes no place among the lines an iteration keeps: the choice knows
    the lines held elsewhere, counts what they name as shown, and lets the next line in."""

    bare: bool = False
    repeats: bool = False
    across: bool = False
    spare: bool = False


NO_TERSE = Terse()
_TAG = re.compile(r"</?[A-Za-z][\w:.-]*/?>")
_ALNUM = re.compile(r"[^\W_]")


def is_bare(line: str) -> bool:
    """Whether an output line says nothing beyond markup: once its tags (``<output>``,
    ``</returncode>``) are gone, no letter or digit is left, or only an exit code
    (``<returncode>0</returncode>``, ``exit code: 1``), which the iteration's line states."""
    text = line.strip()
    if RETURNCODE_TAG.fullmatch(text) or exit_text(text):
        return True
    return _ALNUM.search(_TAG.sub("", text)) is None


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def _call(call: ToolCall) -> str:
    try:
        args = orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError:
        args = call.arguments
    shown = _command(args)
    return f"{call.name}: {_one_line(shown if shown is not None else call.arguments, _CALL_CHARS)}"


def _command(args: object) -> str | None:
    """What a call's arguments say in one string: its only string argument (a command, a path, a
    query), or a shell script given as ``["bash", "-lc", SCRIPT]`` (Codex)."""
    if not isinstance(args, dict):
        return None
    values = [v for k, v in args.items() if k not in {"description", "timeout", "workdir", "justification"}]
    if len(values) != 1:
        return None
    value = values[0]
    if isinstance(value, list) and len(value) == 3 and all(isinstance(v, str) for v in value):
        return value[2] if value[1] in {"-c", "-lc"} else " ".join(value)
    return value if isinstance(value, str) else None


def _outcome(output: str) -> str:
    lines = len(output_lines(output)) if output.strip() else 0
    code = parse_exit_code(output)
    status = f"exit {code}" if code is not None else ""
    if looks_like_error(output, code):
        return f"{status or 'error'}: {_one_line(error_line(output), _ERROR_CHARS)}"
    size = f"{lines:,} line{'s' if lines != 1 else ''}" if lines else "no output"
    return f"{status}, {size}" if status else size


def format_label(messages: Sequence[Message]) -> str | None:
    """The label the agent's format puts before its reasoning (``THOUGHT:``), if nearly every one of
    at least 3 assistant messages starts with the same one: repeated on every line, it says nothing."""
    return _label(*_labels(messages))


@run_memo(4096)
def call_line(iteration: int, messages: tuple[Message, ...]) -> str:
    """An iteration's line without the agent's reasoning (a faded note's): its calls with what came
    back, and a person's messages."""
    outputs = {m.tool_call_id: m.text for m in messages if m.role == "tool"}
    parts: list[str] = []
    for message in messages:
        if message.role == "assistant":
            parts.extend(f"{_call(c)}{_ARROW}{_outcome(outputs.get(c.id, ''))}" for c in message.tool_calls)
        elif message.role == "user":
            parts.append(f"user: {first_sentence(message.text, _SENTENCE_CHARS)}")
    return f"{iteration}. {_ARROW.join(parts) if parts else '(nothing)'}"


@run_memo(8192)
def condensed_line(iteration: int, messages: tuple[Message, ...], label: str | None = None) -> str:
    """One line for one iteration's messages (without the format's ``label``, see :func:`format_label`)."""
    outputs = {m.tool_call_id: m.text for m in messages if m.role == "tool"}
    parts: list[str] = []
    for message in messages:
        if message.role == "assistant":
            thought = first_sentence(message.text, _SENTENCE_CHARS)
            if label is not None and thought.startswith(label):
                thought = thought[len(label) :].lstrip()
            if thought:
                parts.append(thought)
            for call in message.tool_calls:
                parts.append(f"{_call(call)}{_ARROW}{_outcome(outputs.get(call.id, ''))}")
        elif message.role == "user":
            parts.append(f"user: {first_sentence(message.text, _SENTENCE_CHARS)}")
    return f"{iteration}. {_ARROW.join(parts) if parts else '(nothing)'}"


def _originals(messages: tuple[Message, ...]) -> tuple[str, ...]:
    """The iteration's output lines as the outputs hold them (a JSON output's fields:
    :func:`~._jsonform.output_lines`), in output order (not kept: what is read of them is, by
    :class:`Reading` and :func:`_output_refs`)."""
    return tuple(
        line for message in messages if message.role != "assistant" for line in output_lines(message.text)
    )


def _output_lines(messages: tuple[Message, ...]) -> tuple[str, ...]:
    """The iteration's output lines, each cut to one line, in output order."""
    return tuple(_one_line(line, _REFERRED_CHARS) for line in _originals(messages))


Chosen = list[tuple[int, str]]  # (position in the output, the line as cut)
Named = tuple[tuple[int, str, Refs], ...]  # the lines naming references: (position, line, them)


@dataclass(frozen=True, slots=True)
class Lines:
    """An output's lines that name references (``named``: position, line, them), and for each
    reference the lines naming it (``where``: indexes into ``named``, ascending)."""

    named: Named
    where: Mapping[str, Sequence[int]]


def _named(lines: Sequence[str], sources: Sequence[str] | None = None) -> Lines:
    """``sources[i]``: a text with the references of ``lines[i]`` (default: the line itself)."""
    texts = lines if sources is None else sources
    return _naming(lines, map(refs, texts))


def _naming(lines: Sequence[str], found: Iterable[Refs]) -> Lines:
    """:func:`_indexed` of the ``lines`` whose references (``found``, one per line) are not empty."""
    named = tuple(
        (index, line, names) for index, (line, names) in enumerate(zip(lines, found, strict=True)) if names
    )
    return _indexed(named)


def _indexed(named: Named) -> Lines:
    """The lines naming references, with the lines naming each reference."""
    where: dict[str, list[int]] = {}
    for position, (_, _, found) in enumerate(named):
        for name in found:
            where.setdefault(name, []).append(position)
    return Lines(named, {name: tuple(at) for name, at in where.items()})  # kept: tuples, not lists


def _cover(
    candidates: Sequence[tuple[int, str, Refs]],
    limit: int,
    seen: Set[str] = frozenset(),
    free: Set[int] = frozenset(),
    *,
    into: set[str] | None = None,
) -> Chosen:
    """Up to ``limit`` of the ``candidates`` (position, line, names), chosen greedily: each the line
    with the most names that neither ``seen`` holds nor a line already chosen names (ties: the
    earliest); with their positions. ``into``: a set of the caller's that stands for ``seen`` and
    gains what the chosen lines name (no copy of ``seen`` made).

    Lazily: a line's count only falls as lines are chosen, so a line whose count, counted again,
    still leads every other line's last count leads their counts now (the choice counting every
    line again at each pick makes, without doing it). A line is first ranked by all it names (no
    fewer than it counts), so lines that cannot lead are never counted against ``seen``."""
    heap = [(-len(found), index, line, found) for index, line, found in candidates]
    heapq.heapify(heap)
    covered = set(seen) if into is None else into  # what a count leaves out
    known = covered.__contains__
    chosen: Chosen = []
    spent = 0  # the chosen lines not in ``free`` (shown elsewhere: chosen without a place)
    while heap and spent < limit:
        _, index, line, found = heapq.heappop(heap)
        key = (sum(map(known, found)) - len(found), index)  # a line's names are distinct
        if heap and key > heap[0][:2]:  # another line may name more now: count it first
            heapq.heappush(heap, (*key, line, found))
            continue
        if not key[0]:
            break
        chosen.append((index, line))
        covered.update(found)
        spent += index not in free
    return chosen


def referred_lines(lines: Sequence[str], wanted: set[str], shown: set[str], limit: int) -> Chosen:
    """Up to ``limit`` output lines naming something in ``wanted`` (what the agent went on to refer to)
    that no newer line of the note shows (``shown``, updated); the lines naming the most such
    things first."""
    named = _named(lines)
    return _at(named, _referred(named, wanted, shown, limit))


def _within(names: Refs, targets: Set[str]) -> Refs:
    return tuple(filter(targets.__contains__, names))


def _at(lines: Lines, chosen: Sequence[int]) -> Chosen:
    """The chosen lines (indexes into ``lines.named``) with their positions in the output."""
    return [lines.named[p][:2] for p in chosen]


def _referred(
    lines: Lines, wanted: Set[str], shown: set[str], limit: int, free: Set[int] = frozenset()
) -> list[int]:
    """:func:`referred_lines` of an output's :class:`Lines`, as indexes into ``lines.named``."""
    targets = wanted - shown
    if not targets:
        return []
    where, named = lines.where, lines.named
    naming = sorted(set(chain.from_iterable(map(where.get, targets, repeat(())))))
    candidates = [(p, named[p][1], _within(named[p][2], targets)) for p in naming]
    out = [p for p, _ in _cover(candidates, limit, free=free)]
    for p in out:
        shown.update(named[p][2])
    return out


def informative_lines(lines: Sequence[str], seen: set[str], limit: int) -> Chosen:
    """Up to ``limit`` of the output lines that first name a reference not in ``seen`` (what the
    prompt shows later; the aged outputs' rule), those naming the most such references first
    (``seen`` is updated)."""
    named = _named(lines)
    return _at(named, _informative(named, seen, limit))


def _informative(lines: Lines, seen: set[str], limit: int, free: Set[int] = frozenset()) -> list[int]:
    """:func:`informative_lines` of an output's :class:`Lines`, as indexes into ``lines.named``.

    A line names something no line above it names nor ``seen`` holds exactly when it is the
    first line naming one of the references not in ``seen``."""
    where, named = lines.where, lines.named
    first = sorted(set(map(_FIRST, map(where.__getitem__, where.keys() - seen))))
    candidates = [(p, named[p][1], named[p][2]) for p in first]
    return [p for p, _ in _cover(candidates, limit, free=free, into=seen)]  # ``seen`` gains theirs


_FIRST = itemgetter(0)


def _named_in(messages: Sequence[Message]) -> set[str]:
    """What the messages' texts and their calls' arguments name (an output's, from its lines')."""
    found: set[str] = set()
    for message in messages:
        found.update(refs(message.text) if message.role == "assistant" else text_refs(message.text))
        for call in message.tool_calls:
            found.update(refs(call.arguments))
    return found


def _actions(messages: Sequence[Message]) -> set[str]:
    found: set[str] = set()
    for message in messages:
        if message.role == "assistant":
            found.update(refs(message.text))
            for call in message.tool_calls:
                found.update(refs(call.arguments))
    return found


_PATH = re.compile(r"/|\.[A-Za-z][A-Za-z0-9]{0,5}$")  # a path, or a file name with an extension


def _paths(messages: Sequence[Message]) -> frozenset[str]:
    """The files the iteration's calls name (the references of their arguments that look like a
    path or a file name)."""
    found = (refs(call.arguments) for m in messages if m.role == "assistant" for call in m.tool_calls)
    return frozenset(name for names in found for name in names if _PATH.search(name))


def _labels(messages: Sequence[Message]) -> tuple[tuple[str, ...], int]:
    """The format labels the assistant messages with text start with, and how many such messages."""
    texts = [m.text for m in messages if m.role == "assistant" and m.text]
    return tuple(found.group(1) for t in texts if (found := _FORMAT_LABEL.match(t))), len(texts)


def _label(labels: Sequence[str], texts: int) -> str | None:
    """:func:`format_label` of messages with these labels and this many texts (two labels tied for the
    most are each at most half: neither is a label then, whichever ``max`` names)."""
    if len(labels) < 3:
        return None
    label, count = Counter(labels).most_common(1)[0]
    return label if count >= 0.8 * texts else None


Extra = tuple[str, frozenset[str], frozenset[str]]  # the lines under an iteration's line, what they name


class Reading:
    """What a note reads of one iteration's messages, found once per run when the run's memo keeps it
    (:class:`~._forms.FormsMemo`): what its output lines name, what its assistant messages name, its
    format labels; its line per format label, and its extra lines per what they depend on."""

    __slots__ = (
        "_at",
        "_bare",
        "_extras",
        "_kept",
        "_lines",
        "_own",
        "_own_at",
        "_own_extras",
        "_own_tails",
        "_path_tails",
        "_tails",
        "action_paths",
        "actions",
        "labels",
        "messages",
        "names",
        "paths",
        "short",
        "size",
        "texts",
        "whole",
    )

    def __init__(self, messages: tuple[Message, ...]) -> None:
        self.messages = messages  # kept: the memo's key is their identities
        self.names: KeysView[str] = _output_refs(messages).where.keys()  # a view: no copy kept
        self.actions = frozenset(_actions(messages))
        self.action_paths = paths_of(self.actions)  # the files they name, to find them named otherwise
        self.paths = _paths(messages)
        self.labels, self.texts = _labels(messages)
        self.size = len(_originals(messages))  # its outputs' lines
        # outputs of at most SHORT_LINES lines are kept whole (their lines, as cut)
        self.short = self.size <= SHORT_LINES and any(m.role == "tool" for m in messages)
        self.whole = (
            "".join(f"\n    {text}" for text in _output_lines(messages) if text) if self.short else ""
        )
        self._bare: str | None = None
        self._lines: dict[tuple[int, str | None], tuple[str, Refs]] = {}
        self._extras: dict[tuple[object, ...], Extra] = {}
        self._kept: dict[tuple[Reports, frozenset[str]], tuple[Message, ...]] = {}
        self._own: Lines | None = None
        self._own_extras: dict[tuple[object, ...], tuple[str, frozenset[str]]] = {}
        self._at: _Places | None = None
        self._own_at: _Places | None = None
        self._tails: Mapping[str, Sequence[str]] | None = None
        self._own_tails: Mapping[str, Sequence[str]] | None = None
        self._path_tails: Mapping[str, Sequence[str]] | None = None

    def same_files(self, paths: NamedPaths) -> set[str]:
        """What its output lines name of the files ``paths`` names, though not as written
        (:meth:`~._refs.NamedPaths.among`)."""
        if not paths.names:
            return set()
        if self._tails is None:
            self._tails = tail_index(self.names)
        return paths.among(self.names, self._tails)

    def own_same_files(self, paths: NamedPaths) -> set[str]:
        """:meth:`same_files` of the agent's own lines past its line (:meth:`own`)."""
        if not paths.names:
            return set()
        if self._own_tails is None:
            self._own_tails = tail_index(self.own().where)
        return paths.among(self.own().where.keys(), self._own_tails)

    def paths_same_files(self, paths: NamedPaths) -> set[str]:
        """:meth:`same_files` of the files its calls name (:attr:`paths`)."""
        if not paths.names or not self.paths:
            return set()
        if self._path_tails is None:
            self._path_tails = tail_index(self.paths)
        return paths.among(self.paths, self._path_tails)

    def held(self, held: Sequence[Set[str]]) -> frozenset[int]:
        """Which of its output lines naming references (indexes) one of the ``held`` sets holds
        (lines as a note shows them, without their indent: :func:`held_lines`): lines a note leaves
        out as repeats, which take no place among those it keeps (:attr:`Terse.spare`)."""
        if not held:
            return frozenset()
        if self._at is None:
            self._at = _indented(_output_refs(self.messages))
        return _held_at(self._at, held)

    def own_held(self, held: Sequence[Set[str]]) -> frozenset[int]:
        """:meth:`held` of the agent's own lines past its line (:meth:`own`)."""
        if not held:
            return frozenset()
        if self._own_at is None:
            self._own_at = _indented(self.own())
        return _held_at(self._own_at, held)

    def short_text(self, bare: bool) -> str:
        """The lines of its short outputs, all of them (``whole``), or without those that say nothing
        beyond markup (``bare``: :func:`is_bare`)."""
        if not bare or not self.whole:
            return self.whole
        if self._bare is None:
            kept = (text for text in _output_lines(self.messages) if text and not is_bare(text))
            self._bare = "".join(f"\n    {text}" for text in kept)
        return self._bare

    def own(self) -> Lines:
        """The agent's own lines past its line (:func:`_own_lines`), found when first asked for."""
        if self._own is None:
            self._own = _own_lines(self.messages)
        return self._own

    def kept(self, reports: Reports, earlier: frozenset[str] = frozenset()) -> tuple[Message, ...]:
        """Its sub-agents' reports (:meth:`~._reports.Reports.of`; ``earlier``: the texts of the user
        messages before it), found once per ``reports`` and ``earlier``."""
        key = (reports, earlier)
        hit = self._kept.get(key)
        if hit is None:
            hit = self._kept[key] = reports.of(self.messages, earlier)
        return hit

    def line(self, iteration: int, label: str | None) -> tuple[str, Refs]:
        """The iteration's line (:func:`condensed_line`) and what it names."""
        key = (iteration, label)
        hit = self._lines.get(key)
        if hit is None:
            line = condensed_line(iteration, self.messages, label)
            hit = self._lines[key] = (line, refs(line))
        return hit

    def own_extra(
        self, wanted: Set[str], shown: set[str], seen: Set[str], limit: int, held: Sequence[Set[str]] = ()
    ) -> str:
        """:func:`own_extra` of its own lines (``shown`` updated the same way), found once per what
        the choice depends on (:meth:`extra`'s argument: the same two sets, of the own lines' names);
        the lines one of the ``held`` sets holds are not chosen, what they name counts as shown
        (:attr:`Terse.spare`)."""
        lines = self.own()
        if not lines.named or limit <= 0:
            return ""
        names = lines.where.keys()
        free = self.own_held(held)
        mine = names & shown
        key = (frozenset((names & wanted) - mine), frozenset(mine | (names & seen)), limit, free)
        hit = self._own_extras.get(key)
        if hit is None:
            chosen: set[str] = set()
            text = own_extra(lines, key[0], chosen, key[1], limit, free=free)
            hit = self._own_extras[key] = (text, frozenset(chosen))
        shown.update(hit[1])
        return hit[0]

    def extra(
        self,
        inputs: tuple[frozenset[str], frozenset[str]],
        referred: int,
        novel: int,
        free: frozenset[int] = frozenset(),
    ) -> Extra:
        """The output lines kept under the line, given what they depend on: of the references the
        output lines name, those wanted and not shown yet (``wanted - shown``: what the referred
        lines cover) and those shown or seen (``shown | seen``: what the novel lines must not name,
        with what the referred lines show). Nothing else can change the choice, so notes whose
        ``wanted``, ``shown`` and ``seen`` differ but give the same two sets share it."""
        key = (*inputs, referred, novel, free)
        hit = self._extras.get(key)
        if hit is None:
            targets, known = inputs
            hit = self._extras[key] = _extra_lines(
                self.messages, targets, frozenset(), known, referred=referred, novel=novel, free=free
            )
        return hit


@run_memo(4096)
def _output_refs(messages: tuple[Message, ...]) -> Lines:
    """The iteration's output lines (as cut) naming references, with them: all a note's extra lines
    can be.

    A line's references are its original's when the original is at most :data:`_REFERRED_CHARS`
    long: no reference holds whitespace, so collapsing it changes none, and such a line is not cut
    (the original's are often known already: the aged forms read the same lines). So such a line
    is cut to one line only when it names something: most output lines name nothing."""
    named: list[tuple[int, str, Refs]] = []
    index = 0
    for message in messages:
        if message.role == "assistant":
            continue
        text = message.text
        lines = output_lines(text)
        known = line_refs(text) if json_fields(text) is None else None  # a plain output's: its lines'
        for position, original in enumerate(lines, index):
            if len(original) <= _REFERRED_CHARS:
                found = refs(original) if known is None else known[position - index]
                if found:
                    named.append((position, _one_line(original, _REFERRED_CHARS), found))
            else:
                line = _one_line(original, _REFERRED_CHARS)
                found = refs(line)
                if found:
                    named.append((position, line, found))
        index += len(lines)
    return _indexed(tuple(named))


def _agent_texts(message: Message) -> list[str]:
    """What an assistant message wrote past what its condensed line shows: the sentences of its
    reasoning after the first, and every line of its calls' string arguments (a script, a file, a
    patch, a long command), in order."""
    texts = split_sentences(message.text)[1:] if message.text else []
    for call in message.tool_calls:
        try:
            args = orjson.loads(call.arguments or "{}")
        except orjson.JSONDecodeError:
            args = call.arguments
        stack = [args]
        while stack:
            value = stack.pop()
            if isinstance(value, str):
                texts.extend(line for line in value.splitlines() if line.strip())
            elif isinstance(value, dict):
                stack.extend(reversed(list(value.values())))
            elif isinstance(value, list):
                stack.extend(reversed(value))
    return texts


@run_memo(4096)
def _own_lines(messages: tuple[Message, ...]) -> Lines:
    """The agent's own lines of an iteration (:func:`_agent_texts`) naming references, each cut to
    one line, with them: what a note may keep of what the agent wrote besides its line."""
    texts = [text for m in messages if m.role == "assistant" for text in _agent_texts(m)]
    lines = [_one_line(text, _REFERRED_CHARS) for text in texts]
    return _naming(lines, lines_refs(lines))  # each scanned once: an agent's own lines are read once per run


def own_extra(
    lines: Lines,
    wanted: Set[str],
    shown: set[str],
    seen: Set[str],
    limit: int,
    *,
    free: Set[int] = frozenset(),
) -> str:
    """Up to ``limit`` of the agent's own ``lines``: those naming what it referred to afterwards
    (``wanted``) first, then those naming what nothing after them names (``seen``), neither shown by
    a newer line of the note (``shown``, updated); in the order it wrote them. The ``free`` lines
    (indexes into ``lines.named``: shown elsewhere) are chosen as any other, without a place, and
    not shown again."""
    if not lines.named or limit <= 0:
        return ""
    chosen = _referred(lines, wanted, shown, limit, free)
    spent = sum(p not in free for p in chosen)
    if spent < limit:
        chosen += _informative(lines, set(seen) | shown, limit - spent, free)
        shown.update(chain.from_iterable(lines.named[p][2] for p in chosen))
    return "".join(f"\n    {lines.named[p][1]}" for p in sorted(chosen) if p not in free)


@run_memo(8192)
def _extra_lines(
    messages: tuple[Message, ...],
    wanted: frozenset[str],
    shown: frozenset[str],
    seen: frozenset[str],
    *,
    referred: int,
    novel: int,
    free: frozenset[int] = frozenset(),
) -> Extra:
    """The output lines the note keeps under one iteration's line: those it referred to afterwards,
    then those naming what nothing after them names, in output order; with what the first and the
    second name. Given only the references its output lines name (``wanted``, ``shown`` and ``seen``
    restricted to them: nothing else can change the choice), so that a note computed again as newer
    iterations arrive reuses what did not change. The ``free`` lines (indexes into the lines naming
    references: shown elsewhere) are chosen as any other, without a place, and not shown again."""
    lines = _output_refs(messages)
    shown_now = set(shown)
    kept = _referred(lines, wanted, shown_now, referred, free) if referred else []
    informative = _informative(lines, set(seen) | shown_now, novel, free) if novel else []
    named = lines.named
    text = "".join(f"\n    {named[p][1]}" for p in sorted([*kept, *informative]) if p not in free)
    return (
        text,
        frozenset(chain.from_iterable(named[p][2] for p in kept)),
        frozenset(chain.from_iterable(named[p][2] for p in informative)),
    )


# Where each line of a :class:`Lines` is (:func:`_indented`): a position, or the positions of a line
# named more than once.
_Places = Mapping[str, int | list[int]]


def _indented(lines: Lines) -> _Places:
    """The positions (indexes into ``lines.named``) of each line as a note shows it, keyed by the
    line's own string (no copy: held lines are filed without their indent, :func:`held_lines`)."""
    at: dict[str, int | list[int]] = {}
    for position, (_, line, _) in enumerate(lines.named):
        found = at.setdefault(line, position)
        if isinstance(found, list):
            found.append(position)
        elif found != position:
            at[line] = [found, position]
    return at


def _held_at(at: _Places, held: Sequence[Set[str]]) -> frozenset[int]:
    """The positions (``at``: :func:`_indented`) of the lines one of the ``held`` sets holds."""
    lines = at.keys()
    if all(map(lines.isdisjoint, held)):  # mostly: none (the smaller side is walked, in C)
        return _NONE_HELD
    found: set[int] = set()
    for lines_held in held:
        for line in lines & lines_held:
            place = at[line]
            if isinstance(place, list):
                found.update(place)
            else:
                found.add(place)
    return frozenset(found)


_NONE_HELD: frozenset[int] = frozenset()


def held_lines(note: Message) -> frozenset[str]:
    """The lines a condensed note keeps under its iterations' lines (without their indent): what a
    newer note may leave out (:attr:`Terse.across`)."""
    return frozenset(line[_INDENTED:] for line in note.text.split("\n") if line.startswith(_INDENT))


_INDENT = "    "
_INDENTED = len(_INDENT)


def _unshown(tail: str, before: Set[str]) -> str:
    """The lines of ``tail`` (each after a line feed and an indent) that ``before`` (lines without
    their indent) does not hold."""
    if not tail or not before:
        return tail
    texts = _texts(tail)
    if before.isdisjoint(texts):  # mostly: the tail as it is, not rebuilt
        return tail
    return "".join(f"{_LINE}{text}" for text in texts if text not in before)


def _unrepeated(tail: str, kept: set[str]) -> str:
    """The lines of ``tail`` (each after a line feed and an indent) not in ``kept`` (lines without
    their indent), which gains them. Every line a tail holds is a line feed, the indent and a text
    (:meth:`Reading.short_text`, :func:`_extra_lines`, :func:`own_extra`, :func:`_report_lines`)."""
    if not tail:
        return tail
    texts = _texts(tail)
    if kept.isdisjoint(texts):  # mostly: every line fresh, the tail as it is, not rebuilt
        kept.update(texts)
        return tail
    fresh = [text for text in texts if text not in kept]
    kept.update(fresh)
    return "".join(f"{_LINE}{text}" for text in fresh)


_LINE = "\n" + _INDENT  # what starts each line of a tail


def _texts(tail: str) -> list[str]:
    """The texts of a non-empty ``tail``'s lines, without their line feed and indent: every line is
    :data:`_LINE` and a text holding no line feed, so the tail splits exactly at each ``_LINE``."""
    return tail[len(_LINE) :].split(_LINE)


def kept_reports(chunk: Sequence[tuple[int, Reading]], reports: Reports) -> list[tuple[Message, ...]]:
    """What each iteration of ``chunk`` (oldest first) keeps whole (:meth:`Reading.kept`): a user
    message repeating one of an older iteration of the chunk is not kept again."""
    earlier = earlier_users((whole.messages for _, whole in chunk), reports)
    return [whole.kept(reports, users) for (_, whole), users in zip(chunk, earlier, strict=False)]


Readings = dict[tuple[int, ...], Reading]  # by the identities of an iteration's messages
READINGS = 4096  # iterations a run's memo keeps (the oldest read goes first)


def _reading(messages: tuple[Message, ...], readings: Readings | None) -> Reading:
    if readings is None:
        return Reading(messages)
    key = tuple(map(id, messages))
    hit = readings.get(key)  # a hit keeps its messages alive: the same identities are the same messages
    if hit is None:
        if len(readings) >= READINGS:
            del readings[next(iter(readings))]
        hit = readings[key] = Reading(messages)
    return hit


@dataclass(frozen=True, slots=True)
class CondensedNote:
    """A chunk's note with the parts its text is made of (joined, they are its content): the head
    line, then one part per iteration, each but the last ending with the line feed before the
    next. Every part after the head starts with its iteration's number, so each part boundary is a
    line feed followed by a visible character other than ``/``: no pre-token of the tokenizer
    spans it (the cut of :class:`~..._tokens.PieceEncoder`), and the text's tokens are its parts'
    tokens joined (:meth:`tokens`)."""

    message: Message
    parts: tuple[str, ...]

    def tokens(self, counter: TokenCounter) -> int:
        """``counter.count_message(self.message)``, from its parts' counts (a part the run counted
        before, the line of an iteration with the same extra lines, is a lookup)."""
        head = counter.count_message({"role": "user", "content": self.parts[0]})
        return head + sum(map(counter.count_part, self.parts[1:]))


class ChunkReading:
    """What a note reads of its chunk alone, so that the notes of one chunk rendered as the messages
    after it grow are told apart by what those messages change (:meth:`inputs`), not by the
    messages themselves.

    A note depends on the messages after its chunk (``later``) only through the format label they
    and the chunk share, what they name among the references the chunk's output lines name
    (``wanted``, with ``referred`` > 0) and what their texts name among those (``seen``, with
    ``novel`` > 0): every other input of :func:`condensed_note` is the chunk's own, and an extra
    line's choice reads ``wanted``, ``shown`` and ``seen`` only within what the output lines name.
    So two ``later`` with equal :meth:`inputs` give the same note.

    ``later`` only grows while its chunk waits (the iterations after it up to the prompt), so
    :meth:`inputs` reads only the messages past the ``later`` it read last (when that is a prefix
    of the new one; else it reads the new one afresh)."""

    __slots__ = (
        "_inputs",
        "_label_texts",
        "_labels",
        "_later",
        "_seen",
        "_wanted",
        "chunk",
        "kept",
        "labels",
        "names",
        "notes",
        "novel",
        "own",
        "read",
        "referred",
        "reports",
        "scale",
        "terse",
        "texts",
    )

    # what it read of its chunk (a longer chunk's reading takes these over: :meth:`begins`)
    read: tuple[tuple[int, Reading], ...]
    labels: tuple[str, ...]
    texts: int
    names: frozenset[str]

    def __init__(
        self,
        chunk: Sequence[tuple[int, tuple[Message, ...]]],
        reports: Reports,
        readings: Readings,
        *,
        referred: int = 0,
        novel: int = 0,
        scale: NovelScale = NO_SCALE,
        own: int = 0,
        terse: Terse = NO_TERSE,
        prefix: ChunkReading | None = None,
    ) -> None:
        self.chunk = tuple(chunk)  # kept: a memo's key is their identities
        self.reports, self.referred, self.novel, self.scale = reports, referred, novel, scale
        self.own, self.terse = own, terse
        labels: list[str] = []
        texts = 0
        names: set[str] = set()
        start = 0  # the iterations read here: those after the prefix's
        read: tuple[tuple[int, Reading], ...] = ()
        if prefix is not None and prefix.begins(self.chunk, reports, (referred, novel, scale, own, terse)):
            start, read = len(prefix.chunk), prefix.read
            labels, texts, names = list(prefix.labels), prefix.texts, set(prefix.names)
        self.read = read + tuple((k, _reading(messages, readings)) for k, messages in self.chunk[start:])
        kept_all = kept_reports(self.read, reports)  # an iteration's depend only on the older ones
        self.kept = tuple(kept_all)  # what each keeps whole, for its notes
        for (_, messages), (_, whole), kept in zip(
            self.chunk[start:], self.read[start:], kept_all[start:], strict=True
        ):
            reading = _reading(tuple(m for m in messages if m not in kept), readings) if kept else whole
            labels.extend(whole.labels)
            texts += whole.texts
            names.update(reading.names)
            if own:
                names.update(whole.own().where)
            if scale.again > 1:  # whether the agent named its files again counts
                names.update(whole.paths)
        self.labels, self.texts, self.names = tuple(labels), texts, frozenset(names)
        self.notes: dict[tuple[object, ...], CondensedNote] = {}  # by :meth:`inputs` and ``before`` (bounded)
        # what the ``later`` read so far tells (see :meth:`inputs`)
        self._later: tuple[Message, ...] = ()
        self._labels: list[str] = []
        self._label_texts = 0
        self._wanted: set[str] = set()
        self._seen: set[str] = set()
        self._inputs: tuple[str | None, frozenset[str], frozenset[str]] | None = None  # the last answer

    def begins(
        self,
        chunk: tuple[tuple[int, tuple[Message, ...]], ...],
        reports: Reports,
        settings: tuple[object, ...],
    ) -> bool:
        """Whether this reading's chunk is a shorter prefix of ``chunk`` (the same iterations, the same
        messages) read with the same ``reports`` and ``settings`` (referred, novel, scale, own, terse):
        what it found of those iterations (their readings, labels, texts and names) is then what a
        reading of ``chunk`` finds of them (a waiting chunk grows at its newest end, and what an
        iteration keeps whole depends only on the older ones)."""
        mine = (self.referred, self.novel, self.scale, self.own, self.terse)
        size = len(self.chunk)
        return (
            size < len(chunk) and reports == self.reports and settings == mine and chunk[:size] == self.chunk
        )

    def inputs(self, later: tuple[Message, ...]) -> tuple[str | None, frozenset[str], frozenset[str]]:
        """What of ``later`` the chunk's note depends on (see the class): its label, and ``wanted``
        and ``seen`` restricted to what the chunk's output lines name."""
        read = len(self._later)
        if len(later) < read or later[:read] != self._later:  # not a continuation: read it afresh
            self._labels, self._label_texts, read = [], 0, 0
            self._wanted, self._seen = set(), set()
            self._inputs = None
        new = later[read:]
        self._later = later
        last = self._inputs
        if last is not None and not new:  # nothing read since: the same inputs
            return last
        labels, texts = len(self._labels), self._label_texts
        self._read(new)
        if last is None or len(self._labels) != labels or self._label_texts != texts:
            label = _label([*self.labels, *self._labels], self.texts + self._label_texts)
        else:
            label = last[0]
        # the sets only grow until read afresh: one of the same size is the same set (its hash kept)
        wanted = (
            last[1] if last is not None and len(last[1]) == len(self._wanted) else frozenset(self._wanted)
        )
        seen = last[2] if last is not None and len(last[2]) == len(self._seen) else frozenset(self._seen)
        self._inputs = (label, wanted, seen)
        return self._inputs

    def _read(self, messages: Sequence[Message]) -> None:
        labels, texts = _labels(messages)
        self._labels.extend(labels)
        self._label_texts += texts
        names = self.names
        if not names:
            return
        if self.referred or self.own:
            actions = _actions(messages)
            self._wanted |= actions & names
            paths = NamedPaths(actions)
            if paths.names:  # the same files named otherwise (a relative path for an absolute one)
                self._wanted |= self._same_files(paths) & names
        if self.scale.keeps(self.novel) or self.own:
            self._seen |= _named_in(messages) & names

    def _same_files(self, paths: NamedPaths) -> set[str]:
        """What its iterations' lines and files name of the files ``paths`` names otherwise (each
        iteration's found with its reading's index, kept for the run)."""
        found: set[str] = set()
        for _, whole in self.read:
            found |= whole.same_files(paths)
            if self.own:
                found |= whole.own_same_files(paths)
            if self.scale.again > 1:
                found |= whole.paths_same_files(paths)
        return found

    def note(
        self,
        inputs: tuple[str | None, frozenset[str], frozenset[str]],
        retrieval: bool,
        readings: Readings,
        before: frozenset[str] = frozenset(),
    ) -> CondensedNote:
        """The chunk's note under these :meth:`inputs` (rendered once per inputs while kept), without
        the kept lines the earlier notes hold (``before``, with :attr:`Terse.across`)."""
        key = (*inputs, before if self.terse.across else frozenset())
        note = self.notes.get(key)
        if note is None:
            label, wanted, seen = inputs
            note = _render_note(
                self.read,
                label=label,
                wanted=wanted,
                seen=seen,
                retrieval=retrieval,
                referred=self.referred,
                novel=self.novel,
                scale=self.scale,
                reports=self.reports,
                readings=readings,
                own=self.own,
                terse=self.terse,
                before=key[3],
                reported=self.kept,
            )
            if len(self.notes) >= _NOTES:  # the oldest first (the messages after the chunk only grow)
                del self.notes[next(iter(self.notes))]
            self.notes[key] = note
        return note


_NOTES = 8  # notes a chunk's reading keeps


def condensed_note(
    chunk: Sequence[tuple[int, tuple[Message, ...]]],
    *,
    retrieval: bool,
    later: Sequence[Message] = (),
    referred: int = 0,
    novel: int = 0,
    scale: NovelScale = NO_SCALE,
    reports: Reports = NO_REPORTS,
    readings: Readings | None = None,
    own: int = 0,
    since: Sequence[Message] = (),
    terse: Terse = NO_TERSE,
    before: frozenset[str] = frozenset(),
) -> Message:
    """The note standing for a chunk of iterations ``(iteration, messages)``, oldest first.

    With ``referred`` > 0, each line is followed by up to that many lines of the iteration's
    outputs that name something the agent referred to afterwards (in the chunk, or in ``later``:
    the messages of the iterations after it up to when it was condensed); with ``novel`` > 0, by
    up to that many more naming what nothing after them names (neither ``later`` nor a newer line
    of the note; ``scale``: more of them for an iteration with long outputs, :class:`NovelScale`).
    Newest first, each name only once. ``since``: messages after ``later`` whose references count
    as referred to afterwards (a chunk chosen again at a later epoch). The ``reports`` (a sub-agent's,
    :mod:`._reports`) are kept whole under their iteration's line. ``readings``: the run's memo of
    what the note reads of each iteration (a note rendered again as its chunk grows reads only the
    new ones). ``terse``: the kept lines it leaves out (:class:`Terse`); ``before``: the kept lines
    the earlier notes hold (:func:`held_lines`), left out with ``terse.across``.
    """
    read = [(k, _reading(messages, readings)) for k, messages in chunk]
    labels, texts = _labels(later)
    label = _label([*(x for _, r in read for x in r.labels), *labels], texts + sum(r.texts for _, r in read))
    # What the messages after the chunk name: with what the newer lines show (``shown``), what the
    # novel lines must not name (all a newer line names is in ``shown``, so this stays as it is).
    seen = frozenset(_named_in(later)) if scale.keeps(novel) or own else frozenset()
    return _render_note(
        read,
        label=label,
        wanted=_wanted_of(read, _actions((*later, *since))),
        seen=seen,
        retrieval=retrieval,
        referred=referred,
        novel=novel,
        scale=scale,
        reports=reports,
        readings=readings,
        own=own,
        terse=terse,
        before=before if terse.across else frozenset(),
    ).message


def _wanted_of(read: Sequence[tuple[int, Reading]], actions: set[str]) -> frozenset[str]:
    """What of ``actions`` a note on the ``read`` iterations reads as wanted: the references their
    lines name that ``actions`` names, as written or as the same file (:class:`~._refs.NamedPaths`),
    and the rest of ``actions`` (as :class:`ChunkReading` finds it, restricted to what they name)."""
    paths = NamedPaths(actions)
    if not paths.names:
        return frozenset(actions)
    names = {n for _, r in read for n in chain(r.names, r.paths, r.own().where)}
    return frozenset(actions | paths.among(names, tail_index(names)))


def _render_note(
    chunk: Sequence[tuple[int, Reading]],
    *,
    label: str | None,
    wanted: frozenset[str],
    seen: frozenset[str],
    retrieval: bool,
    referred: int,
    novel: int,
    scale: NovelScale,
    reports: Reports,
    readings: Readings | None,
    own: int = 0,
    terse: Terse = NO_TERSE,
    before: frozenset[str] = frozenset(),
    reported: Sequence[tuple[Message, ...]] | None = None,
) -> CondensedNote:
    """:func:`condensed_note` given what the messages after the chunk tell it: the ``label``, what
    their assistant messages name (``wanted``) and what their texts name (``seen``), either whole or
    restricted to what the chunk's output lines name (only that is read, :class:`ChunkReading`);
    ``before``: the kept lines the earlier notes hold, left out (:attr:`Terse.across`); ``reported``:
    :func:`kept_reports` of the chunk, when the caller has it."""
    first = chunk[0][0]
    head = _note_head(first, chunk[-1][0], retrieval)
    kept_all = kept_reports(chunk, reports) if reported is None else reported
    read = [(k, whole, kept) for (k, whole), kept in zip(chunk, kept_all, strict=True)]
    named: set[str] = set(wanted)
    paths = NamedPaths()  # what the chunk's newer iterations name (``wanted`` is as the lines name it)
    shown: set[str] = set()
    # what the note shows, its own lines' names too (gains what ``shown`` gains as it gains it)
    mine: set[str] = set()
    kept_lines: set[str] = set()  # the lines kept under the newer iterations' lines (``terse.repeats``)
    # the lines left out as repeats, which with ``terse.spare`` take no place among those kept
    held: tuple[Set[str], ...] = (kept_lines, before) if terse.spare else ()
    extra = bool(referred) or scale.keeps(novel)
    lines: list[str] = []
    showing = (shown, mine) if own else (shown,)
    for k, whole, kept in reversed(read):
        line, names_line = whole.line(k, label)
        _show(showing, names_line)
        reading = _reading(tuple(m for m in whole.messages if m not in kept), readings) if kept else whole
        if reading.short:  # every output line is kept: what extra lines it would choose changes nothing
            tail = reading.short_text(terse.bare)
            _show(showing, reading.names)
        elif not (extra and reading.names):  # no output line names anything: none is chosen
            tail = ""
        else:
            budget = scale.budget(novel, reading.size, _again(whole, named, paths))
            tail = _chosen_tail(
                reading,
                (named, shown, seen),
                referred=referred,
                budget=budget,
                held=held,
                showing=showing,
                same=reading.same_files(paths),
            )
        if own:  # the agent's own lines: what they show leaves the choice of output lines alone
            same = whole.own_same_files(paths)
            tail += whole.own_extra(named | same if same else named, mine, seen, own, held)
        if terse.repeats:
            tail = _unrepeated(tail, kept_lines)
        tail = _unshown(tail, before)
        if kept:  # a sub-agent's report, whole
            tail += _report_lines(kept, showing)
        lines.append(line + tail)
        named.update(reading.actions)
        paths.join(reading.action_paths)
    parts = (f"{head}\n", *(f"{line}\n" for line in reversed(lines[1:])), lines[0])
    return CondensedNote(Message(role="user", content="".join(parts), iteration=first), parts)


def _again(whole: Reading, named: Set[str], paths: NamedPaths) -> bool:
    """Whether the iteration's calls named a file the agent named again (as written or otherwise)."""
    return not whole.paths.isdisjoint(named) or bool(whole.paths_same_files(paths))


def _note_head(first: int, last: int, retrieval: bool) -> str:
    """``[Iterations 3-9, one line each; full text: context_retrieve(...)]``."""
    span = f"{first}-{last}" if first != last else str(first)
    where = f"; full text: {retrieve_call('iteration', span)}" if retrieval else ""
    return f"[Iterations {span}, one line each{where}]"


def _chosen_tail(
    reading: Reading,
    names_by: tuple[Set[str], Set[str], Set[str]],
    *,
    referred: int,
    budget: int,
    held: tuple[Set[str], ...],
    showing: tuple[set[str], ...],
    same: Set[str] = frozenset(),
) -> str:
    """The output lines a note keeps under an iteration's line, chosen by what they name (``names_by``:
    what the messages after the chunk name, what the note shows already, what their texts name;
    ``same``: its lines' references naming a file those messages name otherwise, wanted too);
    ``showing`` gains what they show."""
    named, shown, seen = names_by
    names = reading.names
    here = names & shown
    tail, kept_names, novel_names = reading.extra(
        (frozenset(((names & named) | same) - here), frozenset(here | (names & seen))),
        referred,
        budget,
        reading.held(held),  # shown elsewhere: chosen without a place
    )
    _show(showing, kept_names)
    _show(showing, novel_names)
    return tail


def _report_lines(kept: Sequence[Message], showing: tuple[set[str], ...]) -> str:
    """A sub-agent's report under its iteration's line, whole (its non-blank lines, indented)."""
    report = [text for message in kept for text in message.text.splitlines() if text.strip()]
    _show(showing, refs_of_all(report))
    return "".join(f"\n    {text}" for text in report)


def _show(showing: tuple[set[str], ...], names: Collection[str]) -> None:
    """Each of ``showing`` (what the note shows; with own lines, what they show too) gains ``names``."""
    for into in showing:
        into.update(names)


_PART = re.compile(r"\n(?=[^ ])")  # a line feed before an iteration's line (kept lines are indented)
_NUMBER = re.compile(r"(\d+)\. ")
_EACH = ", one line each"
FADED = ", one line each, faded (most kept lines dropped)"  # a faded note's head says so


def faded_note(
    note: Message,
    since: Set[str] | None,
    *,
    keep: int,
    whole: Set[int] = frozenset(),
    lines: Mapping[int, str] | None = None,
    shown: Set[str] | None = None,
) -> CondensedNote:
    """Level 3: ``note`` (a chunk's condensed note) with, under each iteration's line, only the kept
    lines naming something the agent named since the note was written (``since``; None: any line),
    at most ``keep`` per iteration, in their order; the iterations in ``whole`` (a sub-agent's
    report) keep theirs. ``lines``: an iteration's line to show instead of its own (:func:`call_line`);
    ``shown``: what the newer outputs show (a line naming nothing else goes).
    Its head names the chunk's retrieval call as before, marked faded."""
    text = note.text
    head, *rest = _PART.split(text) if text else [""]
    paths = NamedPaths(since or ())
    parts = [head.replace(_EACH, FADED, 1) + ("\n" if rest else "")]
    for index, part in enumerate(rest):
        line, *kept = part.split("\n")
        number = _NUMBER.match(line)
        k = int(number.group(1)) if number else -1
        if k not in whole:
            kept = [x for x in kept if since is None or _names_since(refs(x), since, paths)]
            kept = [x for x in kept if shown is None or not all(r in shown for r in refs(x))][:keep]
        line = lines.get(k, line) if lines is not None else line
        parts.append("\n".join((line, *kept)) + ("\n" if index < len(rest) - 1 else ""))
    return CondensedNote(Message(role="user", content="".join(parts), iteration=note.iteration), tuple(parts))


def _names_since(names: Refs, since: Set[str], paths: NamedPaths) -> bool:
    """Whether ``names`` (a kept line's) holds something named ``since``, as written or otherwise."""
    if not since.isdisjoint(names):
        return True
    return bool(paths.names and paths.among(frozenset(names), tail_index(names)))


def shown_by(iterations: Iterable[tuple[Message, ...]]) -> frozenset[str]:
    """What the outputs and other messages than the agent's in ``iterations`` name."""
    return frozenset(
        chain.from_iterable(
            text_refs(m.text) for messages in iterations for m in messages if m.role != "assistant"
        )
    )


def named_by(iterations: Iterable[tuple[Message, ...]], readings: Readings | None) -> frozenset[str]:
    """What the agent's messages in ``iterations`` name (each iteration read once per run with
    ``readings``, the run's memo)."""
    return frozenset(chain.from_iterable(_reading(messages, readings).actions for messages in iterations))
