"""The shape of a trace line's fields, checked against the event class's own type hints.

Every event type is a frozen dataclass; :func:`checked_fields` reads its annotations once and
checks each field of a parsed line against them, so a new event type (or field) is validated
with no code here. What is checked:

- ``str``, ``bool``, ``dict``, ``list`` (and ``list[dict]``) by type; ``X | None`` allows null;
- ``int`` fields are whole numbers >= 0, and a field whose name says ``iteration`` is also at most
  :data:`~._messages.MAX_ITERATION` (bounded where it is read, so no loop over iterations can run
  away); ``float`` fields are finite numbers;
- ``Usage`` through :meth:`Usage.from_dict` (a negative or odd count reads as missing), ``Message``
  through :meth:`Message.from_openai`;
- the tool schemas of a ``run_start`` are objects whose ``function`` (if any) is an object with a
  text ``name``.

Each problem is a ``ValueError`` naming the event type and the field (``message.tool_calls is a
JSON string, not a list``); nothing else is raised.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from ._messages import Message, Usage, as_iteration

__all__ = ["checked_fields"]

Check = Callable[[Any, str], Any]


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    check: Check
    required: bool


def checked_fields(cls: Any, data: Mapping[str, Any], *, complete: bool = True) -> dict[str, Any]:
    """The keyword arguments of ``cls`` found in ``data``, each checked (see the module docstring).
    ``complete=False`` lets required fields be missing (a reader of older traces fills them in)."""
    kind = getattr(cls, "type", cls.__name__)
    values: dict[str, Any] = {}
    for spec in _fields(cls):
        if spec.name not in data:
            if spec.required and complete:
                raise ValueError(f"{kind}: the field {spec.name!r} is missing")
            continue
        values[spec.name] = spec.check(data[spec.name], f"{kind}.{spec.name}")
    extra = _EXTRA.get(kind)
    if extra is not None:
        extra(values, kind)
    return values


@cache
def _fields(cls: Any) -> tuple[_Field, ...]:
    """The checked fields of an event class (transient fields, never written, are left out)."""
    hints = typing.get_type_hints(cls)
    specs = []
    for f in dataclasses.fields(cls):
        if f.metadata.get("transient"):
            continue
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        specs.append(_Field(f.name, _checker(hints[f.name], f.name), required))
    return tuple(specs)


def _checker(hint: Any, name: str) -> Check:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        inner = _checker(options[0], name) if len(options) == 1 else _any_of(options, name)
        return _nullable(inner) if len(options) < len(typing.get_args(hint)) else inner
    if hint is int:
        return _iteration if "iteration" in name else _count
    simple = _SIMPLE.get(hint) or _SIMPLE.get(origin)
    if simple is not None:
        if origin is list and typing.get_origin(typing.get_args(hint)[0]) is dict:
            return _list_of_objects
        return simple
    raise TypeError(f"no shape check for {hint!r} ({name})")  # a new field type: add it here


def _any_of(options: list[Any], name: str) -> Check:
    checks = [_checker(option, name) for option in options]

    def check(value: Any, where: str) -> Any:
        for one in checks:
            try:
                return one(value, where)
            except ValueError:
                continue
        raise ValueError(f"{where} has the wrong type ({_kind(value)})")

    return check


def _nullable(check: Check) -> Check:
    def nullable(value: Any, where: str) -> Any:
        return None if value is None else check(value, where)

    return nullable


def _kind(value: Any) -> str:
    return "null" if value is None else f"a JSON {_JSON_KINDS.get(type(value), type(value).__name__)}"


_JSON_KINDS = {str: "string", int: "number", float: "number", bool: "boolean", list: "list", dict: "object"}


def _typed(expected: type[Any], noun: str) -> Check:
    def check(value: Any, where: str) -> Any:
        if not isinstance(value, expected) or (expected is not bool and isinstance(value, bool)):
            raise ValueError(f"{where} is {_kind(value)}, not {noun}")
        return value

    return check


def _count(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{where} is {_kind(value)}, not a whole number")
    if value < 0:
        raise ValueError(f"{where} is negative ({value})")
    return value


def _iteration(value: Any, where: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{where} is a JSON boolean, not a whole number")
    try:
        return as_iteration(value)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _finite(value: Any, where: str) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise ValueError(f"{where} is {_kind(value)}, not a finite number")
    return float(value)


def _usage(value: Any, where: str) -> Usage:
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} is {_kind(value)}, not an object")
    return Usage.from_dict(value)


def _message(value: Any, where: str) -> Message:
    try:
        return Message.from_openai(value)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _list_of_objects(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{where} is {_kind(value)}, not a list")
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise ValueError(f"{where}[{index}] is {_kind(item)}, not an object")
    return value


_SIMPLE: dict[Any, Check] = {
    str: _typed(str, "text"),
    bool: _typed(bool, "true or false"),
    float: _finite,
    dict: _typed(dict, "an object"),
    list: _typed(list, "a list"),
    Usage: _usage,
    Message: _message,
}


def _tool_schemas(values: dict[str, Any], kind: str) -> None:
    """A ``run_start``'s tools: each ``function`` an object naming the tool with text."""
    for index, schema in enumerate(values.get("tools", ())):
        function = schema.get("function")
        if function is None:
            continue
        where = f"{kind}.tools[{index}].function"
        if not isinstance(function, dict):
            raise ValueError(f"{where} is {_kind(function)}, not an object")
        if not isinstance(function.get("name"), str):
            raise ValueError(f"{where}.name is {_kind(function.get('name'))}, not text")


_EXTRA: dict[str, Callable[[dict[str, Any], str], None]] = {"run_start": _tool_schemas}
