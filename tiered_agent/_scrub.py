"""Exact, fast regular-expression substitution over large texts: the mechanics of the trace's redaction.

``pattern.sub`` tries a pattern at every position of a text. For a pattern
whose matches can only start at a literal (:func:`sub_at`), or hold a literal
with a known shape around it (:func:`sub_around`), these return exactly what
``pattern.sub`` returns, while C finds the literal first; on a megabyte of tool
output that is milliseconds instead of a hundred.

:class:`CleanTexts` remembers texts that a redaction returned (by identity), so
a tool output redacted once when it joins the history is not scanned again
when the trace writes it.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterator

__all__ = ["CleanTexts", "sub_around", "sub_at"]


def _find_all(text: str, literal: str) -> Iterator[int]:
    position = text.find(literal)
    while position >= 0:
        yield position
        position = text.find(literal, position + 1)


def sub_at(pattern: re.Pattern[str], anchors: tuple[str, ...], repl: str, text: str) -> str:
    """``pattern.sub(repl, text)`` for a pattern whose every match is non-empty and starts with one of
    ``anchors`` (lookbehinds such as ``\\b`` still see the characters before it)."""
    if not any(anchor in text for anchor in anchors):
        return text
    starts = sorted({p for anchor in anchors for p in _find_all(text, anchor)})
    parts: list[str] = []
    end = 0
    for start in starts:
        if start < end:  # inside the previous match: re.sub would not look there either
            continue
        match = pattern.match(text, start)
        if match is not None:
            parts += (text[end:start], match.expand(repl))
            end = match.end()
    if not parts:
        return text
    parts.append(text[end:])
    return "".join(parts)


def sub_around(
    pattern: re.Pattern[str],
    anchor: str,
    repl: str,
    text: str,
    *,
    lead: re.Pattern[str],
    follow: re.Pattern[str],
) -> str:
    """``pattern.sub(repl, text)`` for a pattern whose every match holds ``anchor`` once, before it
    only characters that ``lead`` matches one at a time, and right after it what ``follow`` matches."""
    parts: list[str] = []
    end = 0
    position = text.find(anchor)
    while position >= 0:
        match = None
        if follow.match(text, position + len(anchor)):
            first = position
            while first > end and lead.match(text, first - 1):
                first -= 1
            tries = (pattern.match(text, start) for start in range(first, position + 1))
            match = next((m for m in tries if m is not None), None)
        if match is not None:
            parts += (text[end : match.start()], match.expand(repl))
            end = match.end()
        position = text.find(anchor, max(position + 1, end))
    if not parts:
        return text
    parts.append(text[end:])
    return "".join(parts)


class CleanTexts:
    """Texts a redaction returned, by identity, with the secrets they were cleaned of (bounded)."""

    def __init__(self, max_texts: int = 1024, max_chars: int = 64_000_000) -> None:
        self._texts: dict[int, tuple[str, Hashable]] = {}
        self._chars = 0
        self._max_texts = max_texts
        self._max_chars = max_chars

    def known(self, text: str, secrets: Hashable) -> bool:
        """Whether ``text`` (this very object) was redacted of ``secrets`` already."""
        entry = self._texts.get(id(text))
        return entry is not None and entry[0] is text and entry[1] is secrets

    def add(self, text: str, secrets: Hashable) -> None:
        """Remember ``text`` as clean of ``secrets`` (kept alive while remembered: its id stays its own)."""
        old = self._texts.pop(id(text), None)
        if old is not None:
            self._chars -= len(old[0])
        self._texts[id(text)] = (text, secrets)
        self._chars += len(text)
        while len(self._texts) > self._max_texts or self._chars > self._max_chars:
            oldest = next(iter(self._texts))
            self._chars -= len(self._texts.pop(oldest)[0])
