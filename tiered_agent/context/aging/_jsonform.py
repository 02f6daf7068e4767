"""JSON outputs as one field per line, so that line-based elision can work on them.

Tool outputs of API-style tools are often one long JSON line (a reservation, a
search result): cutting lines does nothing there. :func:`json_fields` turns such
an output into one ``path: value`` line per scalar field
(``flights[0].flight_number: HAT017``), and gives the value of each line
separately, so that only values (never key names) decide what is new.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["JsonFields", "json_fields"]

_MIN_LINE_CHARS = 200  # only outputs with a line this long are rewritten
_MAX_FIELDS = 2_000


@dataclass(frozen=True, slots=True)
class JsonFields:
    """``lines[i]`` is ``path: value``; ``values[i]`` is the value alone."""

    lines: tuple[str, ...]
    values: tuple[str, ...]


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def _walk(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from _walk(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from _walk(item, f"{path}[{index}]")
    else:
        yield path or "(value)", _scalar(value)


def json_fields(text: str) -> JsonFields | None:
    """The fields of a JSON object or array written on long lines; None for anything else."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[" or max(map(len, stripped.splitlines())) < _MIN_LINE_CHARS:
        return None
    try:
        data = orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict | list):
        return None
    pairs = []
    for pair in _walk(data, ""):
        pairs.append(pair)
        if len(pairs) > _MAX_FIELDS:
            return None
    return JsonFields(tuple(f"{path}: {value}" for path, value in pairs), tuple(v for _, v in pairs))
