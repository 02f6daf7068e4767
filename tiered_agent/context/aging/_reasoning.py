"""The agent's own old messages, shortened: reasoning to its decisions, calls with long arguments cut.

* :func:`shorten_reasoning`: ``"first"`` keeps the first sentence (what the
  agent set out to do); ``"novel"`` also keeps each later sentence that names a
  reference (identifier, path, number) not shown later in the prompt, which is
  where reasoning states what it found and decided; ``"keep"`` keeps it all.
  Dropped sentences leave one ``[...]``.
* :func:`cut_arguments`: a call's JSON arguments over ``max_chars`` keep the
  head of each long string value and say how much was cut (the JSON stays
  valid: providers parse it back); given the references the agent went on to
  use, a long value (a script, a file, a patch it wrote) also keeps its lines
  naming them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import islice
from typing import Any, Literal, NamedTuple

import orjson

from .._memo import run_memo
from ._refs import Refs, refs

__all__ = ["MORE", "ReasoningMode", "cut_arguments", "first_sentence", "shorten_reasoning", "split_sentences"]

ReasoningMode = Literal["first", "novel", "keep"]
MORE = "[...]"
_SENTENCE_END = re.compile(r"(?<=[A-Za-z0-9)\]`'\"][.!?])\s+|\n+")
_FIRST_CHARS = 300
_LABEL = re.compile(r"^[#*\w ]{1,24}:$")
_MARKER = re.compile(r"^(?:\d{1,3}|[a-z])[.)]$")


def split_sentences(text: str) -> list[str]:
    """Sentences and lines of ``text`` (a line break always ends one); empty pieces dropped.

    A leading label alone on its line (``THOUGHT:``) joins the sentence after it, and so does a
    list marker (``1.``).
    """
    return list(_sentences(text))


def _sentences(text: str) -> Iterator[str]:
    """:func:`split_sentences` lazily: the first sentence reads only the first few pieces of
    ``text`` (a label joins only the first two sentences; a marker only the piece after it)."""
    merged = _merged(_pieces(text))
    first = next(merged, None)
    if first is None:
        return
    second = next(merged, None)
    if second is None:
        yield first
        return
    if _LABEL.match(first):
        yield f"{first} {second}"
    else:
        yield first
        yield second
    yield from merged


def _pieces(text: str) -> Iterator[str]:
    """The pieces of ``text`` between sentence ends, stripped, empty ones dropped (``re.split``
    piece by piece: the pattern never matches an empty string)."""
    start = 0
    for end in _SENTENCE_END.finditer(text):
        piece = text[start : end.start()].strip()
        if piece:
            yield piece
        start = end.end()
    piece = text[start:].strip()
    if piece:
        yield piece


def _merged(pieces: Iterator[str]) -> Iterator[str]:
    """The pieces with each list marker (``1.``) joined to the piece after it."""
    pending: str | None = None
    for piece in pieces:
        if pending is None:
            pending = piece
        elif _MARKER.match(pending):
            pending = f"{pending} {piece}"
        else:
            yield pending
            pending = piece
    if pending is not None:
        yield pending


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return (cut or text[:limit]).rstrip() + " " + MORE


def first_sentence(text: str, limit: int = _FIRST_CHARS) -> str:
    """The first sentence (or line) of ``text``, at most ``limit`` characters."""
    sentence = next(_sentences(text), None)
    return _clip(sentence, limit) if sentence is not None else ""


def shorten_reasoning(text: str, mode: ReasoningMode, seen: set[str]) -> str:
    """``text`` as an aged assistant message shows it (``seen`` gains what it shows)."""
    if mode == "keep" or not text.strip():
        seen.update(refs(text))
        return text
    if mode == "novel":
        return _shorten_novel(text, seen)
    sentences = tuple(islice(_sentences(text), 2))  # only the first, and whether another follows
    kept = _clip(sentences[0], _FIRST_CHARS)
    if (kept,) == sentences:  # nothing dropped or clipped
        seen.update(refs(text))
        return text
    shown = kept if kept.endswith(MORE) else f"{kept} {MORE}"
    result = shown if len(shown) < len(text) else text
    seen.update(refs(result))
    return result


def _shorten_novel(text: str, seen: set[str]) -> str:
    """``shorten_reasoning(text, "novel", seen)`` of a text holding a sentence: the first sentence and
    each later one naming something ``seen`` does not hold.

    What it shows is read from the run's memo of its sentences' references (:class:`_NovelReading`),
    never by scanning the text or the shortened text again: both are sentences joined by whitespace
    (the shortened one by spaces and a ``[...]``), no reference holds either, and the sentences hold
    every character of the text but whitespace, so the references of either are its sentences'."""
    reading = _novel_reading(text)
    sentences, named = reading.sentences, reading.named
    novel = [i for i, found in enumerate(named) if not seen.issuperset(found)]
    if len(novel) == len(named) and reading.first == sentences[0]:  # nothing dropped or clipped
        seen.update(reading.head_names, *named)
        return text
    shown = " ".join([reading.first, *(sentences[i + 1] for i in novel)])
    shown = shown if shown.endswith(MORE) else f"{shown} {MORE}"
    if len(shown) >= len(text):
        seen.update(reading.head_names, *named)
        return text
    seen.update(reading.first_names, *(named[i] for i in novel))
    return shown


class _NovelReading(NamedTuple):
    """What ``"novel"`` reads of a text whatever is ``seen`` (:func:`_novel_reading`).

    Invariant: ``len(named) == len(sentences) - 1``; ``named[i] == refs(sentences[i + 1])``;
    ``first`` is the first sentence as shown (cut to ``_FIRST_CHARS``), ``first_names ==
    refs(first)``; ``head_names == refs(sentences[0])`` (the same tuple when the first sentence is not
    cut): ``head_names`` and ``named`` together hold what ``refs`` of the whole text holds."""

    sentences: tuple[str, ...]
    named: tuple[Refs, ...]
    first: str
    first_names: Refs
    head_names: Refs


@run_memo(2048)
def _novel_reading(text: str) -> _NovelReading:
    """What ``"novel"`` reads of ``text`` (holding a sentence) whatever is ``seen``: its sentences
    (:func:`split_sentences`), the references of each, its first sentence as shown (found once per
    text in a run: an old iteration's reasoning is shortened again at every epoch, and for what it
    goes on showing)."""
    sentences = tuple(_sentences(text))
    first = _clip(sentences[0], _FIRST_CHARS)
    named = tuple(map(refs, sentences[1:]))
    first_names = refs(first)
    head_names = first_names if first == sentences[0] else refs(sentences[0])
    return _NovelReading(sentences, named, first, first_names, head_names)


def _cut_value(value: Any, limit: int, wanted: frozenset[str], line_chars: int, max_lines: int) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return _cut_text(value, limit, wanted, line_chars, max_lines)
    if isinstance(value, dict):
        return {key: _cut_value(item, limit, wanted, line_chars, max_lines) for key, item in value.items()}
    if isinstance(value, list):
        return [_cut_value(item, limit, wanted, line_chars, max_lines) for item in value]
    return value


def _cut_text(value: str, limit: int, wanted: frozenset[str], line_chars: int, max_lines: int) -> str:
    """A long string argument: its head, then the lines after it naming something in ``wanted`` (each
    cut to ``line_chars``, at most ``max_lines``), ``[... N chars cut]`` where text is left out."""
    head = value[: limit // 2]
    kept: list[tuple[int, int, str]] = []  # (start, end, the line as shown)
    if wanted and max_lines > 0:
        end = 0
        for line in value.splitlines(keepends=True):
            start, end = end, end + len(line)
            if start < len(head) or wanted.isdisjoint(refs(line)):
                continue
            text = line.rstrip("\r\n")
            kept.append((start, end, text if len(text) <= line_chars else text[:line_chars] + " [...]"))
            if len(kept) >= max_lines:
                break
    parts, shown_to = [head], len(head)
    for start, end, text in kept:
        if start > shown_to:
            parts.append(f"[... {start - shown_to:,} chars cut]\n")
        parts.append(f"{text}\n")
        shown_to = end
    if shown_to < len(value):
        parts.append(f"[... {len(value) - shown_to:,} chars cut]")
    return "".join(parts)


def cut_arguments(
    arguments: str,
    max_chars: int,
    wanted: frozenset[str] = frozenset(),
    *,
    line_chars: int = 240,
    max_lines: int = 0,
) -> str:
    """``arguments`` with string values over ``max_chars`` cut to their head; unchanged when short.

    With ``wanted`` (references the agent went on to use) and ``max_lines``, a long string value
    (text the agent wrote: a script, a file, a patch) also keeps up to ``max_lines`` of its later
    lines naming one of them. Arguments that are not a JSON object are cut as text only if they were
    not valid JSON, or nest deeper than JSON is written back (256 levels).
    """
    if len(arguments) <= max_chars:
        return arguments
    as_text = arguments[:max_chars] + f"[... {len(arguments) - max_chars:,} chars cut]"
    try:
        data = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return as_text
    if not isinstance(data, dict | list):
        return arguments
    try:
        cut = orjson.dumps(_cut_value(data, max_chars, wanted, line_chars, max_lines)).decode()
    except (orjson.JSONEncodeError, RecursionError):  # nested past what orjson writes (256+ levels)
        return as_text
    return cut if len(cut) < len(arguments) else arguments
