"""The agent's own old messages, shortened: reasoning to its decisions, calls with long arguments cut.

* :func:`shorten_reasoning`: ``"first"`` keeps the first sentence (what the
  agent set out to do); ``"novel"`` also keeps each later sentence that names a
  reference (identifier, path, number) not shown later in the prompt, which is
  where reasoning states what it found and decided; ``"keep"`` keeps it all.
  Dropped sentences leave one ``[...]``.
* :func:`cut_arguments`: a call's JSON arguments over ``max_chars`` keep the
  head of each long string value and say how much was cut (the JSON stays
  valid: providers parse it back).
"""

from __future__ import annotations

import re
from typing import Any, Literal

import orjson

from ._refs import refs

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
    pieces: list[str] = []
    for raw in _SENTENCE_END.split(text):
        piece = raw.strip()
        if not piece:
            continue
        if pieces and _MARKER.match(pieces[-1]):  # "1." of a numbered list starts the next sentence
            pieces[-1] = f"{pieces[-1]} {piece}"
        else:
            pieces.append(piece)
    if len(pieces) > 1 and _LABEL.match(pieces[0]):
        pieces[:2] = [f"{pieces[0]} {pieces[1]}"]
    return pieces


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return (cut or text[:limit]).rstrip() + " " + MORE


def first_sentence(text: str, limit: int = _FIRST_CHARS) -> str:
    """The first sentence (or line) of ``text``, at most ``limit`` characters."""
    sentences = split_sentences(text)
    return _clip(sentences[0], limit) if sentences else ""


def shorten_reasoning(text: str, mode: ReasoningMode, seen: set[str]) -> str:
    """``text`` as an aged assistant message shows it (``seen`` gains what it shows)."""
    if mode == "keep" or not text.strip():
        seen |= refs(text)
        return text
    sentences = split_sentences(text)
    kept = [_clip(sentences[0], _FIRST_CHARS)]
    if mode == "novel":
        kept += [s for s in sentences[1:] if refs(s) - seen]
    if kept == sentences:  # nothing dropped or clipped
        seen |= refs(text)
        return text
    shown = " ".join(kept)
    shown = shown if shown.endswith(MORE) else f"{shown} {MORE}"
    result = shown if len(shown) < len(text) else text
    seen |= refs(result)
    return result


def _cut_value(value: Any, limit: int) -> Any:
    if isinstance(value, str) and len(value) > limit:
        head = value[: limit // 2]
        return f"{head}[... {len(value) - len(head):,} chars cut]"
    if isinstance(value, dict):
        return {key: _cut_value(item, limit) for key, item in value.items()}
    if isinstance(value, list):
        return [_cut_value(item, limit) for item in value]
    return value


def cut_arguments(arguments: str, max_chars: int) -> str:
    """``arguments`` with string values over ``max_chars`` cut to their head; unchanged when short.

    Arguments that are not a JSON object are cut as text only if they were not valid JSON.
    """
    if len(arguments) <= max_chars:
        return arguments
    try:
        data = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return arguments[:max_chars] + f"[... {len(arguments) - max_chars:,} chars cut]"
    if not isinstance(data, dict | list):
        return arguments
    cut = orjson.dumps(_cut_value(data, max_chars)).decode()
    return cut if len(cut) < len(arguments) else arguments
