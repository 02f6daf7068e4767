"""Text that crosses a boundary: lone surrogates, terminal control codes, NUL bytes, non-UTF-8 input.

Three places where an arbitrary string can do harm, each with one function:

- :func:`clean_surrogates`: a lone surrogate (a model's ``"\\ud800"``, a non-UTF-8 command-line
  argument decoded with ``surrogateescape``) cannot be encoded as UTF-8, so a JSON encoder or a
  terminal refuses the whole text. It is written as its escape (``\\ud800``, ``\\udcff``) instead:
  the rest of the text is kept and the odd code point stays visible.
- :func:`terminal_safe`: control characters (ESC starts colour, cursor and OSC title sequences,
  ``\\r`` and backspace overwrite what was printed) and Unicode bidirectional overrides (U+202E
  shows text reversed) are shown as escapes, so text from a model or a trace cannot rewrite the
  user's terminal. Newlines and tabs stay.
- :func:`escape_nul`: NUL bytes, which many providers and tokenizers reject or truncate at, are
  shown to the model as ``\\x00``.

:func:`undecodable` finds the first non-UTF-8 byte of a command-line value (Python decodes such
bytes as lone surrogates), for a one-sentence refusal.
"""

from __future__ import annotations

import re

__all__ = [
    "NUL_ESCAPE",
    "clean_surrogates",
    "escape_nul",
    "json_terminal_safe",
    "terminal_safe",
    "undecodable",
]

NUL_ESCAPE = "\\x00"
_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls but tab and newline, DEL, C1 controls; bidi embeddings, overrides and isolates
# (U+202A-U+202E, U+2066-U+2069), the Arabic letter mark, line/paragraph separators; and lone
# surrogates (a non-UTF-8 path), which a UTF-8 terminal stream refuses to encode.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_SHORT_ESCAPES = {"\r": "\\r", "\x1b": "\\x1b", "\x00": "\\x00"}
# What JSON encoders leave raw in strings but a terminal acts on: DEL, C1 controls, bidi controls.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def clean_surrogates(text: str) -> str:
    """``text`` with every lone surrogate written as its ``\\uXXXX`` escape (``text`` itself when
    it has none: the common case costs one scan)."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def terminal_safe(text: str) -> str:
    """``text`` with terminal control characters, bidi overrides and lone surrogates shown as
    escapes (``\\x1b``, ``\\u202e``, ``\\udcff``); newlines and tabs are kept."""
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def json_terminal_safe(data: bytes) -> bytes:
    """JSON text (UTF-8) with the characters a terminal acts on, which encoders leave raw inside
    strings (DEL, C1 controls, bidi overrides), written as ``\\uXXXX`` escapes: the same JSON value,
    safe to print. (Encoders already escape C0 controls such as ESC.)"""
    text = data.decode("utf-8")
    if _JSON_UNSAFE.search(text) is None:
        return data
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


def escape_nul(text: str) -> str:
    """``text`` with each NUL character shown as ``\\x00``."""
    return text.replace("\x00", NUL_ESCAPE) if "\x00" in text else text


def undecodable(text: str) -> str | None:
    """The first byte of ``text`` that was not UTF-8 (``"0xff at character 4"``), or None.

    Python decodes a command-line argument's invalid bytes as lone surrogates (U+DC80-U+DCFF);
    any other lone surrogate is reported as itself.
    """
    match = None if text.isascii() else _SURROGATE.search(text)
    if match is None:
        return None
    code = ord(match.group())
    shown = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
    return f"{shown} at character {match.start() + 1}"
