"""Quoted lines: the lines of a new output that repeat, in order, lines the prompt already shows.

A file read again, the snippet an editor prints after an edit (the lines the agent's own call
just wrote), a background shell's output read again with everything it printed before: a run of
consecutive lines that is, line for line, a run of consecutive lines of one message shown above
(an output, a user message, or the text of an agent's call: a file it wrote, a replacement) says
nothing the prompt does not say. :func:`point_quotes` replaces such a run, when it is at least
``min_lines`` lines and ``min_chars`` chars long, by one line naming where it is shown and the
range it covers::

    [lines 40-80: the same text as iteration 12 (tool_call_id=toolu_7) shows above, its lines 38-78]

Lines are compared after their listing number (``    40→``, ``40<TAB>``) and trailing spaces,
indentation included. Each line of a run keeps its number in the pointer's range, so the new
numbering is never lost. Only lines that say something (8 chars or more after the number) start
a run; at most :data:`_CANDIDATES` earlier places are tried per line, so a text of many identical
lines costs linear time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..._messages import Message
from .._calls import call_arguments
from .._memo import run_memo

__all__ = ["LISTING_NUMBER", "LineIndex", "index_message", "point_quotes", "quote_lines"]

# A listing's line number and its separator (``cat -n``, ``nl``, an editor's view: a tab; Claude Code's
# Read: →), padded with spaces; the working memory reads the same listings (summary/memory/_code.py).
LISTING_NUMBER = r"(\d{1,9})(?:\u2192|\t)"
_NUMBER = re.compile(r"^ *" + LISTING_NUMBER)
_CANDIDATES = 8  # earlier places a line is looked up in
_INFORMATIVE = 8  # chars a line needs (after its number) to start a run


@dataclass(frozen=True, slots=True)
class Line:
    """A line as compared (after its listing number, without trailing spaces) and its number."""

    text: str
    number: int | None


@run_memo(16_384)
def quote_lines(text: str) -> tuple[Line, ...]:
    """The lines of ``text`` as compared."""
    out = []
    for raw in text.split("\n"):
        match = _NUMBER.match(raw)
        body = raw[match.end() :] if match else raw
        out.append(Line(body.rstrip(), int(match.group(1)) if match else None))
    return tuple(out)


@run_memo(4096)
def call_texts(message: Message) -> tuple[str, ...]:
    """The string values of ``message``'s calls' arguments that hold lines (a file the agent wrote, a
    replacement), as the message shows them."""
    texts: list[str] = []
    for call in message.tool_calls:
        values = call_arguments(call.arguments).values()
        texts += [v for v in values if isinstance(v, str) and "\n" in v]
    return tuple(texts)


@dataclass(slots=True)
class LineIndex:
    """The lines the prompt shows so far, by text: where each informative line stands (its first
    :data:`_CANDIDATES` places)."""

    sources: list[tuple[str, tuple[Line, ...]]] = field(default_factory=list)  # (where, lines)
    places: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # text -> (source, line)

    def add(self, where: str, lines: tuple[Line, ...]) -> None:
        source = len(self.sources)
        self.sources.append((where, lines))
        for position, line in enumerate(lines):
            if len(line.text) >= _INFORMATIVE:
                places = self.places.setdefault(line.text, [])
                if len(places) < _CANDIDATES:
                    places.append((source, position))

    def longest(self, lines: Sequence[Line], start: int) -> tuple[int, int, int]:
        """The longest run from ``lines[start]`` shown above: (its length, source, the source's line)."""
        best = (0, -1, -1)
        for source, at in self.places.get(lines[start].text, ()):
            shown = self.sources[source][1]
            length = 0
            while (
                start + length < len(lines)
                and at + length < len(shown)
                and lines[start + length].text == shown[at + length].text
            ):
                length += 1
            while length and not lines[start + length - 1].text:  # a run ends on a line that says something
                length -= 1
            best = max(best, (length, source, at), key=lambda b: b[0])
        return best


def point_quotes(text: str, index: LineIndex, min_lines: int, min_chars: int) -> str:
    """``text`` with each long run of lines the index shows replaced by a pointer (module docstring)."""
    lines = quote_lines(text)
    if not index.places or len(lines) < min_lines:
        return text
    raw = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        length, source, at = index.longest(lines, i) if len(lines[i].text) >= _INFORMATIVE else (0, -1, -1)
        if length >= min_lines and sum(len(r) + 1 for r in raw[i : i + length]) >= min_chars:
            where, shown = index.sources[source]
            out.append(_pointer(lines[i : i + length], shown[at : at + length], where))
            i += length
        else:
            out.append(raw[i])
            i += 1
    return "\n".join(out)


def _pointer(new: Sequence[Line], old: Sequence[Line], where: str) -> str:
    first, last = new[0].number, new[-1].number
    span = f"lines {first}-{last}" if first is not None and last is not None else f"{len(new)} lines"
    theirs = (old[0].number, old[-1].number)
    there = f", its lines {theirs[0]}-{theirs[1]}" if None not in theirs and theirs != (first, last) else ""
    if first is None:
        there += f', from "{_clip(new[0].text.strip())}"'
    return f"[{span}: the same text as {where} shows above{there}]"


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def index_message(index: LineIndex, message: Message, shown_text: str, where: str) -> None:
    """File the lines ``message`` (as the prompt shows it, its content ``shown_text``) shows in ``index``."""
    for text in (shown_text, *call_texts(message)):
        if text:
            index.add(where, quote_lines(text))
