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
budget of a few lines); each chosen greedily, the line covering the most such
names first, and shown in the order of the output. An iteration whose outputs
are short (at most :data:`SHORT_LINES` lines: a one-line answer, a short listing,
a test summary) keeps them all: choosing among five lines spares little, and
their lines are what the agent's next steps build on.

The note is a ``user`` message: the chunk's assistant and tool messages are
gone, so no call can lose its result.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence, Set
from functools import lru_cache

import orjson

from ..._messages import Message, ToolCall
from .._heuristics import error_line, looks_like_error, parse_exit_code
from .._names import retrieve_call
from ._jsonform import output_lines
from ._reasoning import first_sentence
from ._refs import refs, refs_of_all
from ._reports import NO_REPORTS, Reports

__all__ = [
    "SHORT_LINES",
    "condensed_line",
    "condensed_note",
    "format_label",
    "informative_lines",
    "referred_lines",
]

_SENTENCE_CHARS = 160
_CALL_CHARS = 120
_ERROR_CHARS = 120
_REFERRED_CHARS = 160
_ARROW = " → "
SHORT_LINES = 5  # outputs of at most this many lines are kept whole under their iteration's line
_FORMAT_LABEL = re.compile(r"^([A-Z][A-Z_]{2,23}:)\s")


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
    texts = [m.text for m in messages if m.role == "assistant" and m.text]
    labels = [found.group(1) for t in texts if (found := _FORMAT_LABEL.match(t))]
    if len(labels) < 3:
        return None
    label = max(set(labels), key=labels.count)
    return label if labels.count(label) >= 0.8 * len(texts) else None


@lru_cache(maxsize=8192)
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


@lru_cache(maxsize=4096)
def _output_lines(messages: tuple[Message, ...]) -> tuple[str, ...]:
    """The iteration's output lines (a JSON output's fields: :func:`~._jsonform.output_lines`), each
    cut to one line, in output order."""
    return tuple(
        _one_line(line, _REFERRED_CHARS)
        for message in messages
        if message.role != "assistant"
        for line in output_lines(message.text)
    )


Chosen = list[tuple[int, str]]  # (position in the output, the line as cut)


def _cover(lines: Sequence[str], names: Callable[[str], Set[str]], limit: int) -> Chosen:
    """Up to ``limit`` of ``lines``, chosen greedily: each the line naming the most of ``names(line)``
    that no line already chosen names (ties: the earliest); with their positions."""
    candidates = [(index, kept, found) for index, kept in enumerate(lines) if (found := names(kept))]
    covered: set[str] = set()
    chosen: Chosen = []
    while candidates and len(chosen) < limit:
        best = max(candidates, key=lambda c: (len(c[2] - covered), -c[0]))
        if not best[2] - covered:
            break
        chosen.append(best[:2])
        covered |= best[2]
        candidates.remove(best)
    return chosen


def referred_lines(lines: Sequence[str], wanted: set[str], shown: set[str], limit: int) -> Chosen:
    """Up to ``limit`` output lines naming something in ``wanted`` (what the agent went on to refer to)
    that no newer line of the note shows (``shown``, updated); the lines naming the most such
    things first."""
    out = _cover(lines, lambda line: (refs(line) & wanted) - shown, limit)
    for _, line in out:
        shown |= refs(line)
    return out


def informative_lines(lines: Sequence[str], seen: set[str], limit: int) -> Chosen:
    """Up to ``limit`` of the output lines that first name a reference not in ``seen`` (what the
    prompt shows later; the aged outputs' rule), those naming the most such references first
    (``seen`` is updated)."""
    named = set(seen)

    def names(line: str) -> Set[str]:
        found = refs(line)
        if not found - named:  # names nothing a line above it did not name already
            return frozenset()
        named.update(found)
        return found - seen

    out = _cover(lines, names, limit)
    for _, line in out:
        seen |= refs(line)
    return out


def _texts(message: Message) -> list[str]:
    return [message.text, *(call.arguments for call in message.tool_calls)]


def _actions(messages: Sequence[Message]) -> set[str]:
    found: set[str] = set()
    for message in messages:
        if message.role == "assistant":
            found |= refs(message.text)
            for call in message.tool_calls:
                found |= refs(call.arguments)
    return found


def condensed_note(
    chunk: Sequence[tuple[int, tuple[Message, ...]]],
    *,
    retrieval: bool,
    later: Sequence[Message] = (),
    referred: int = 0,
    novel: int = 0,
    reports: Reports = NO_REPORTS,
) -> Message:
    """The note standing for a chunk of iterations ``(iteration, messages)``, oldest first.

    With ``referred`` > 0, each line is followed by up to that many lines of the iteration's
    outputs that name something the agent referred to afterwards (in the chunk, or in ``later``:
    the messages of the iterations after it up to when it was condensed); with ``novel`` > 0, by
    up to that many more naming what nothing after them names (neither ``later`` nor a newer line
    of the note). Newest first, each name only once. The ``reports`` (a sub-agent's, :mod:`._reports`)
    are kept whole under their iteration's line.
    """
    first, last = chunk[0][0], chunk[-1][0]
    span = f"{first}-{last}" if first != last else str(first)
    where = f"; full text: {retrieve_call('iteration', span)}" if retrieval else ""
    head = f"[Iterations {span}, one line each{where}]"
    wanted: set[str] = _actions(later)
    seen: set[str] = refs_of_all(text for m in later for text in _texts(m)) if novel else set()
    shown: set[str] = set()
    lines: list[str] = []
    label = format_label([*(m for _, messages in chunk for m in messages), *later])
    for k, whole in reversed(chunk):
        line = condensed_line(k, whole, label)
        shown |= refs(line)
        kept_reports = reports.of(whole)
        messages = tuple(m for m in whole if m not in kept_reports) if kept_reports else whole
        names = _output_refs(messages) if referred or novel else frozenset()
        restricted = (frozenset(wanted & names), frozenset(shown & names), frozenset(seen & names))
        extra = _extra_lines(messages, *restricted, referred=referred, novel=novel)
        for _, text in extra[0]:
            shown |= refs(text)
        if novel:
            seen |= shown
            for _, text in extra[1]:
                seen |= refs(text)
            shown |= refs_of_all(text for _, text in extra[1])
        chosen = sorted([*extra[0], *extra[1]])  # in output order
        outputs = _output_lines(messages)
        if len(outputs) <= SHORT_LINES and any(m.role == "tool" for m in messages):
            chosen = [(i, text) for i, text in enumerate(outputs) if text]
            shown |= refs_of_all(outputs)
            seen |= refs_of_all(outputs) if novel else set()
        kept = [text for report in kept_reports for text in report.text.splitlines() if text.strip()]
        shown |= refs_of_all(kept)
        seen |= refs_of_all(kept) if novel else set()
        shown_lines = [*(text for _, text in chosen), *kept]
        lines.append("\n".join([line, *(f"    {text}" for text in shown_lines)]))
        wanted |= _actions(messages)
    return Message(role="user", content="\n".join([head, *reversed(lines)]), iteration=first)


@lru_cache(maxsize=4096)
def _output_refs(messages: tuple[Message, ...]) -> frozenset[str]:
    """The references the iteration's output lines (as cut) name: all a note's extra lines can."""
    return frozenset(refs_of_all(_output_lines(messages)))


@lru_cache(maxsize=8192)
def _extra_lines(
    messages: tuple[Message, ...],
    wanted: frozenset[str],
    shown: frozenset[str],
    seen: frozenset[str],
    *,
    referred: int,
    novel: int,
) -> tuple[tuple[tuple[int, str], ...], tuple[tuple[int, str], ...]]:
    """The output lines the note keeps under one iteration's line: those it referred to afterwards,
    then those naming what nothing after them names. Given only the references its output lines
    name (``wanted``, ``shown`` and ``seen`` restricted to them: nothing else can change the choice),
    so that a note computed again as newer iterations arrive reuses what did not change."""
    outputs = _output_lines(messages)
    shown_now = set(shown)
    extra = referred_lines(outputs, set(wanted), shown_now, referred) if referred else []
    informative: Chosen = []
    if novel:
        informative = informative_lines(outputs, set(seen) | shown_now, novel)
    return tuple(extra), tuple(informative)
