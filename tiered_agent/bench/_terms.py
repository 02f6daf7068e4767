"""How the bench's rulers read text: terms, specific terms, normalized lines, an action's text.

The rulers (``_evidence.py``) ask what the next action of a recorded run needed
and whether the prompt a policy built showed it. This module is their own
reading of text, written for that question and for nothing else: it shares no
code and no constants with the context policies (a test checks the import
graph). Definitions (also in docs/rulers.md):

- A *term* is a maximal run of word characters (Unicode letters, digits, ``_``)
  with single ``.``, ``/`` or ``-`` between them: ``src/app.py``, ``1909``,
  ``self.settings_dict.get``, ``2024-05-20``, ``DataDocumenter``.
- A term is *specific* (a name or a value, not prose) when it has 3 or more
  characters and is not an ordinary word. An ordinary word is made of letters
  only, each ``-``-separated part either capitalized at most on its first letter
  (``error``, ``Error``, ``read-only``) or all capitals (``ERROR``); single
  letters joined by dots (``e.g``, ``i.e``) are ordinary too. So ``405``,
  ``HAT017``, ``utils.py``, ``TIME_ZONE``, ``DataDocumenter`` and ``HTTPServer``
  are specific; ``localtime`` is not (the word ruler counts it).
- The escapes ``\\n``, ``\\t`` and ``\\r`` written inside code (``print("\\nAll")``)
  separate terms: that is ``All``, not ``nAll``.
- A term *occurs* in a text where it is not preceded or followed by a word
  character: ``utils.py`` occurs in ``django/db/utils.py``, ``405`` in
  ``base.py:405`` and not in ``14059``.
- Text is compared *normalized*: every line break (``\\n``, ``\\r\\n``, ``\\r`` and
  the other characters :meth:`str.splitlines` breaks at) becomes ``\\n``, every
  escape ``\\n``, ``\\t``, ``\\r`` written as text and every other run of whitespace
  one space, and lines lose their leading and trailing spaces. A renderer that
  re-indents a line or collapses its spacing still shows the same line.
- An *action's text* is what the agent wrote in it: its content, each tool
  call's name and the values of its JSON arguments, decoded (a heredoc in a
  ``command`` argument is its own lines, not one line of ``\\n`` escapes);
  arguments that are not JSON are taken as written.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from .._messages import Message

__all__ = [
    "action_text",
    "first_occurrence",
    "is_specific",
    "joined",
    "message_text",
    "normalize",
    "occurrences",
    "occurrences_backward",
    "specific_terms",
    "terms",
]

_TERM = re.compile(r"\w+(?:[./\-]\w+)*")
_MIN_SPECIFIC = 3
_CODE_CHARS = re.compile(r"[\d_./]")  # any of these makes a term specific
_INITIALS = re.compile(r"[^\W\d_](?:[./\-][^\W\d_])+")  # e.g, i.e: single letters joined
_ESCAPES = re.compile(r"\\[nrt]")  # an escape written in code separates terms
_BREAKS = re.compile(r"\r\n|[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_ASCII_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")  # what _BREAKS finds in ASCII text


def terms(text: str) -> list[str]:
    """The terms of ``text``, in order (repeats included)."""
    return _TERM.findall(_ESCAPES.sub(" ", text))


def _ordinary(part: str) -> bool:
    return part.isalpha() and (part[1:] == part[1:].lower() or part == part.upper())


def is_specific(term: str) -> bool:
    """A name or a value: 3+ characters and not an ordinary word (see the module docstring)."""
    if len(term) < _MIN_SPECIFIC:
        return False
    if term.isalpha():  # letters only (most terms): no code character, no initials, one part
        rest = term[1:]
        return not (rest == rest.lower() or term == term.upper())
    code = _CODE_CHARS.search(term) is not None
    if (code or "-" in term) and _INITIALS.fullmatch(term):  # initials hold a separator: . / (code) or -
        return False
    if code:
        return True
    return not all(_ordinary(part) for part in term.split("-"))


def specific_terms(text: str) -> set[str]:
    """The distinct specific terms of ``text``."""
    return {t for t in set(terms(text)) if is_specific(t)}


def normalize(text: str) -> str:
    """``text`` with line breaks unified, whitespace runs collapsed and lines stripped (a pattern
    is applied only where it can match: the plain searches cost less than the regular ones).

    Once every line break is ``\\n``, a line's whitespace (what :meth:`str.isspace` says, the
    same characters as the ``\\s`` of a ``str`` pattern) is its own: ``" ".join(line.split())``
    collapses each run of it to one space and strips the line, at C speed (a regular
    substitution of every run cost three times as much)."""
    if not text.isascii() or any(c in text for c in _ASCII_BREAKS):
        text = _BREAKS.sub("\n", text)
    if "\\" in text:
        text = _ESCAPES.sub(" ", text)
    return "\n".join([" ".join(line.split()) for line in text.split("\n")])


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def occurrences(text: str, term: str, start: int = 0, end: int | None = None) -> Iterator[int]:
    """Positions where ``term`` occurs in ``text[start:end]`` (not inside a longer word), in order."""
    stop = len(text) if end is None else end
    size = len(term)
    at = text.find(term, start, stop)
    while at >= 0:
        before = text[at - 1] if at > 0 else ""
        after = text[at + size] if at + size < len(text) else ""
        if not (before and _is_word(before)) and not (after and _is_word(after)):
            yield at
        at = text.find(term, at + 1, stop)


def first_occurrence(text: str, term: str, start: int = 0, end: int | None = None) -> int:
    """The first of :func:`occurrences` (-1 if none), without a generator: most searches want one."""
    stop = len(text) if end is None else end
    size, length = len(term), len(text)
    at = text.find(term, start, stop)
    while at >= 0:
        before = text[at - 1] if at > 0 else ""
        after = text[at + size] if at + size < length else ""
        if not (before and (before.isalnum() or before == "_")) and not (
            after and (after.isalnum() or after == "_")
        ):
            return at
        at = text.find(term, at + 1, stop)
    return -1


def occurrences_backward(text: str, term: str) -> Iterator[int]:
    """Positions where ``term`` occurs in ``text``, last first (lazily: a search can stop early)."""
    size = len(term)
    at = text.rfind(term)
    while at >= 0:
        before = text[at - 1] if at > 0 else ""
        after = text[at + size] if at + size < len(text) else ""
        if not (before and _is_word(before)) and not (after and _is_word(after)):
            yield at
        at = text.rfind(term, 0, at + size - 1) if at > 0 else -1


def _leaves(value: Any, out: list[str]) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif item is not None:
            out.append(orjson.dumps(item).decode())


def _arguments(arguments: str) -> list[str]:
    try:
        decoded = orjson.loads(arguments) if arguments else None
    except orjson.JSONDecodeError:
        return [arguments]
    out: list[str] = []
    _leaves(decoded, out)
    return out


def action_text(message: Message) -> str:
    """What the agent wrote in an assistant message: its content, then each call's name and decoded
    argument values, one per line."""
    parts = [message.text]
    for call in message.tool_calls:
        parts.append(call.name)
        parts.extend(_arguments(call.arguments))
    return "\n".join(p for p in parts if p)


def message_text(message: Message) -> str:
    """What a reader of a message sees of it: an assistant message's :func:`action_text`, any other
    message's content."""
    return action_text(message) if message.role == "assistant" else message.text


def joined(texts: Sequence[str]) -> tuple[str, list[int]]:
    """``texts`` joined by line breaks (one text to search at C speed), and where each starts in it
    (``bisect_right(starts, position) - 1`` is the text a found position lies in)."""
    starts: list[int] = []
    position = 0
    for text in texts:
        starts.append(position)
        position += len(text) + 1
    return "\n".join(texts), starts


def texts_holding(corpus: tuple[str, list[int]], string: str) -> list[int]:
    """The indexes of the texts of a :func:`joined` ``corpus`` that hold ``string`` (one without a
    line break, so it lies in one text), by one search that skips to the next text after each hit."""
    text, starts = corpus
    out: list[int] = []
    at = text.find(string)
    while at >= 0:
        index = bisect_right(starts, at) - 1
        out.append(index)
        if index + 1 >= len(starts):
            break
        at = text.find(string, starts[index + 1])
    return out
