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
_ANY_NUMBER = re.compile(r"^ *" + LISTING_NUMBER, re.MULTILINE)
_CANDIDATES = 8  # earlier places a line is looked up in
_INFORMATIVE = 8  # chars a line needs (after its number) to start a run


@dataclass(frozen=True, slots=True)
class Lines:
    """The lines of a text as compared (after their listing number, without trailing spaces) and
    their numbers (None: a line without one), position by position."""

    texts: tuple[str, ...]
    numbers: tuple[int | None, ...]


@run_memo(4)  # a text is read as it is tidied, then filed: the index keeps no line of it
def quote_lines(text: str) -> Lines:
    """The lines of ``text`` as compared."""
    raw = text.split("\n")
    if not _ANY_NUMBER.search(text):  # no listing: each line as it is, less its trailing spaces
        return Lines(tuple(map(str.rstrip, raw)), (None,) * len(raw))
    texts: list[str] = []
    numbers: list[int | None] = []
    for line in raw:
        match = _NUMBER.match(line)
        texts.append((line[match.end() :] if match else line).rstrip())
        numbers.append(int(match.group(1)) if match else None)
    return Lines(tuple(texts), tuple(numbers))


@run_memo(4096)
def call_texts(message: Message) -> tuple[str, ...]:
    """The string values of ``message``'s calls' arguments that hold lines (a file the agent wrote, a
    replacement), as the message shows them."""
    texts: list[str] = []
    for call in message.tool_calls:
        values = call_arguments(call.arguments).values()
        texts += [v for v in values if isinstance(v, str) and "\n" in v]
    return tuple(texts)


_SHIFT = 32  # a place packed in one int: its source << _SHIFT | its line (an int, not a tuple in a list)
_LINE = (1 << _SHIFT) - 1
_READ = 8  # sources whose lines an index keeps read while runs are looked up in them


@dataclass(slots=True)
class LineIndex:
    """The lines the prompt shows so far: where each informative line stands (its first
    :data:`_CANDIDATES` places, each packed in one int; one place alone is the int itself, the
    common case, so a line filed once costs no list).

    Lines are filed by their hash and a source by its text as the prompt shows it (the message's own
    string), so the index holds no copy of a line: a run is looked up in a source's lines read
    again (:func:`quote_lines`; the last :data:`_READ` sources read are kept), and compared as
    text, so equal hashes of different lines never make a run. (Two lines of one run sharing a
    64-bit hash, keyed per process, would only take one of a line's candidate places.)"""

    sources: list[tuple[str, str]] = field(default_factory=list)  # (where, text)
    places: dict[int, int | list[int]] = field(default_factory=dict)  # a line's hash -> its places
    _read: dict[int, Lines] = field(default_factory=dict)  # source -> its lines

    def add(self, where: str, text: str) -> None:
        """File the lines of ``text``, shown at ``where``."""
        source = len(self.sources)
        self.sources.append((where, text))
        places = self.places
        base = source << _SHIFT
        for position, line in enumerate(quote_lines(text).texts):
            if len(line) >= _INFORMATIVE and position <= _LINE:
                key = hash(line)
                found = places.get(key)
                if found is None:
                    places[key] = base | position
                elif isinstance(found, int):
                    places[key] = [found, base | position]
                elif len(found) < _CANDIDATES:
                    found.append(base | position)

    def lines(self, source: int) -> Lines:
        """The lines of the source numbered ``source``, read again (the last :data:`_READ` kept)."""
        found = self._read.get(source)
        if found is None:
            if len(self._read) >= _READ:
                del self._read[next(iter(self._read))]
            found = self._read[source] = quote_lines(self.sources[source][1])
        return found

    def longest(self, texts: Sequence[str], start: int, at_least: int = 1) -> tuple[int, int, int]:
        """The longest run from ``texts[start]`` shown above: (its length, source, the source's line),
        among the runs of ``at_least`` lines or more (a shorter one may stand for none)."""
        best = (0, -1, -1)
        found = self.places.get(hash(texts[start]), ())
        for place in (found,) if isinstance(found, int) else found:
            if at_least > 1 and self._shorter(texts, start, place, at_least):
                continue  # told by the index alone: its source is not read again
            source, at = place >> _SHIFT, place & _LINE
            shown = self.lines(source).texts
            length = 0
            while (
                start + length < len(texts)
                and at + length < len(shown)
                and texts[start + length] == shown[at + length]
            ):
                length += 1
            while length and not texts[start + length - 1]:  # a run ends on a line that says something
                length -= 1
            if length > best[0]:
                best = (length, source, at)
        return best

    def _shorter(self, texts: Sequence[str], start: int, place: int, at_least: int) -> bool:
        """Whether the run from ``texts[start]`` at ``place`` is shorter than ``at_least`` lines, as the
        index tells without reading the source: one of the next lines is past the end of ``texts``,
        or is informative and its hash's places are all filed (fewer than :data:`_CANDIDATES`) but
        none at that line of the place's source (the source's line there is another text: equal
        lines have equal hashes, and every informative line of a source is filed). False when it
        cannot tell (a line that says little, or a hash filed at its most places)."""
        places = self.places
        if start + at_least > len(texts):
            return True
        if (place & _LINE) + at_least - 1 > _LINE:
            return False
        for step in range(1, at_least):
            line = texts[start + step]
            if len(line) < _INFORMATIVE:
                continue
            found = places.get(hash(line), ())
            if isinstance(found, int):
                if found != place + step:
                    return True
            elif len(found) < _CANDIDATES and place + step not in found:  # () too: filed nowhere
                return True
        return False


def point_quotes(text: str, index: LineIndex, min_lines: int, min_chars: int) -> str:
    """``text`` with each long run of lines the index shows replaced by a pointer (module docstring)."""
    lines = quote_lines(text)
    texts, places = lines.texts, index.places
    if not places or len(texts) < min_lines:
        return text
    starts = [i for i, line in enumerate(texts) if hash(line) in places]  # lines perhaps shown above
    if not starts:
        return text
    raw = text.split("\n")
    out: list[str] = []
    done = 0
    for i in starts:
        if i < done:
            continue
        length, source, at = index.longest(texts, i, min_lines)
        if length >= min_lines and sum(len(r) + 1 for r in raw[i : i + length]) >= min_chars:
            out += raw[done:i]
            out.append(_pointer(lines, (i, i + length), index.lines(source), at, index.sources[source][0]))
            done = i + length
    return "\n".join(out + raw[done:]) if out else text


def _pointer(new: Lines, span: tuple[int, int], old: Lines, at: int, where: str) -> str:
    """The line that stands for ``new``'s lines ``span`` (start, stop), shown by ``old`` from ``at``."""
    start, stop = span
    first, last = new.numbers[start], new.numbers[stop - 1]
    shown = f"lines {first}-{last}" if first is not None and last is not None else f"{stop - start} lines"
    theirs = (old.numbers[at], old.numbers[at + stop - start - 1])
    there = f", its lines {theirs[0]}-{theirs[1]}" if None not in theirs and theirs != (first, last) else ""
    if first is None:
        there += f', from "{_clip(new.texts[start].strip())}"'
    return f"[{shown}: the same text as {where} shows above{there}]"


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def index_message(index: LineIndex, message: Message, shown_text: str, where: str) -> None:
    """File the lines ``message`` (as the prompt shows it, its content ``shown_text``) shows in ``index``."""
    for text in (shown_text, *call_texts(message)):
        if text:
            index.add(where, text)
