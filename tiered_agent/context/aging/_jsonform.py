"""JSON outputs as one field per line, so that line-based elision can work on them.

Tool outputs of API-style tools are often one long JSON line (a reservation, a
search result): cutting lines does nothing there. :func:`json_fields` turns such
an output into one ``path: value`` line per scalar field
(``flights[0].flight_number: HAT017``), and gives the value of each line
separately, so that only values (never key names) decide what is new.

A string value that holds lines (a shell tool's ``output`` field, a file's
text) is shown as those lines: its first after the path (``output: total 80``),
each next one alone, as the program printed it. The aged form and the condensed
notes then keep and leave out its lines by the rules of plain outputs, instead of
cutting the whole value at one line's length. :func:`output_lines` is the lines
an old output is judged by, JSON or not.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from .._memo import run_memo

__all__ = ["JsonFields", "json_fields", "output_lines"]

_MIN_LINE_CHARS = 200  # only outputs with a line this long are rewritten
_MAX_FIELDS = 2_000  # scalar fields
_MAX_LINES = 20_000  # lines, those of multi-line strings included
_MAX_DEPTH = 64  # nested objects and arrays: deeper, the output is read as its own lines


class _TooDeep(Exception):
    """A value nested deeper than :data:`_MAX_DEPTH` (orjson reads up to 1,024 levels)."""


@dataclass(frozen=True, slots=True)
class JsonFields:
    """``lines[i]`` is ``path: value`` (or the next line of a multi-line string value); ``values[i]``
    is the value (or that line) alone."""

    lines: tuple[str, ...]
    values: tuple[str, ...]
    multiline: bool = False  # some string value was shown as its lines


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def _walk(value: Any, path: str, depth: int = 0) -> Iterator[tuple[str, str, bool]]:
    """``(line, value, starts a field)`` for each line of the fields under ``path``; raises
    :class:`_TooDeep` past :data:`_MAX_DEPTH` levels."""
    if depth > _MAX_DEPTH:
        raise _TooDeep
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from _walk(item, f"{path}.{key}" if path else str(key), depth + 1)
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from _walk(item, f"{path}[{index}]", depth + 1)
    elif isinstance(value, str) and ("\n" in value or "\r" in value):
        first, *rest = value.splitlines() or [""]
        yield f"{path or '(value)'}: {first}", first, True
        for line in rest:
            yield line, line, False
    else:
        scalar = _scalar(value)
        yield f"{path or '(value)'}: {scalar}", scalar, True


@run_memo(64)
def json_fields(text: str) -> JsonFields | None:
    """The fields of a JSON object or array written on long lines; None for anything else (one
    nested past 64 levels, or with over 2,000 fields or 20,000 lines, too).

    Memoized for the run (the last few texts): an old output is read by its estimated aged form, its
    aged form, its condensed line and its note's reading, each a few prompts apart."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[" or max(map(len, stripped.splitlines())) < _MIN_LINE_CHARS:
        return None
    try:
        data = orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict | list):
        return None
    lines: list[str] = []
    values: list[str] = []
    fields = 0
    try:
        for line, value, starts in _walk(data, ""):
            lines.append(line)
            values.append(value)
            fields += starts
            if fields > _MAX_FIELDS or len(lines) > _MAX_LINES:
                return None
    except _TooDeep:
        return None
    return JsonFields(tuple(lines), tuple(values), multiline=fields < len(lines))


def output_lines(text: str) -> tuple[str, ...]:
    """The lines of an output as aging judges them: a JSON output's fields (:func:`json_fields`),
    else its own lines."""
    fields = json_fields(text)
    return fields.lines if fields is not None else tuple(text.splitlines())
