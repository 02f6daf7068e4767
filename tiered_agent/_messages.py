"""The runtime's message model: frozen, OpenAI-shaped, iteration-tagged.

Every message carries the iteration that produced it: ``0`` for the system
prompt and the task, ``k`` for the assistant reply of iteration ``k`` and the
tool results (or user replies) that answer it. The context pipeline groups by
that number, so a tool call and its result can never be separated.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ._text import clean_surrogates

__all__ = [
    "MAX_ITERATION",
    "Message",
    "Role",
    "ToolCall",
    "Usage",
    "as_iteration",
    "group_by_iteration",
    "shared_prefix",
    "to_openai",
    "token_count",
]

Role = Literal["system", "user", "assistant", "tool"]
MAX_ITERATION = 1_000_000  # no run makes a million model calls; a larger number is a corrupt record


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call requested by the model; ``arguments`` is the raw JSON text."""

    id: str
    name: str
    arguments: str

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }

    @classmethod
    def from_openai(cls, data: Mapping[str, Any]) -> ToolCall:
        """A call from its OpenAI form; raises ValueError (never another error) for a wrong shape."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a tool call is {_kind(data)}, not an object")
        function = data.get("function")
        if function is None:
            function = {}
        elif not isinstance(function, Mapping):
            raise ValueError(f"a tool call's function is {_kind(function)}, not an object")
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            from orjson import JSONEncodeError, dumps

            try:
                arguments = dumps(arguments if arguments is not None else {}).decode()
            except JSONEncodeError as exc:
                raise ValueError(f"a tool call's arguments cannot be written as JSON ({exc})") from None
        name = _scalar(function.get("name"), "a tool call's name")
        call_id = _scalar(data.get("id"), "a tool call's id")
        return cls(id=call_id, name=name, arguments=clean_surrogates(arguments))


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message. ``name`` is the tool name on ``tool`` messages.

    Its hash is computed once and kept: messages are the keys of the context
    pipeline's memos and token counts, looked up many times per prompt.
    """

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    iteration: int = 0
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        cached = self._hash
        if cached is None:
            cached = hash(
                (self.role, self.content, self.tool_calls, self.tool_call_id, self.name, self.iteration)
            )
            object.__setattr__(self, "_hash", cached)
        return cached

    def __reduce__(self) -> tuple[type[Message], tuple[Any, ...]]:
        # Rebuilt from its fields: a hash kept in one process is not valid in another.
        return Message, (
            self.role,
            self.content,
            self.tool_calls,
            self.tool_call_id,
            self.name,
            self.iteration,
        )

    def to_openai(self) -> dict[str, Any]:
        """The message as litellm / OpenAI expect it (no runtime-only fields)."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        if self.role == "tool":
            out["tool_call_id"] = self.tool_call_id
            if self.name:
                out["name"] = self.name
        return out

    def to_dict(self) -> dict[str, Any]:
        """Trace form: the OpenAI form plus the iteration."""
        out = self.to_openai()
        out["iteration"] = self.iteration
        return out

    @classmethod
    def from_openai(cls, data: Mapping[str, Any], iteration: int | None = None) -> Message:
        """A message from its OpenAI (or trace) form.

        Raises ValueError, and no other error, naming what has the wrong shape: a role other than
        the four, ``tool_calls`` that is not a list of objects, an id or name that is an object, an
        iteration that is not a whole number from 0 to :data:`MAX_ITERATION`. Lone surrogates in
        the text are written as escapes (:func:`~._text.clean_surrogates`).
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"a message is {_kind(data)}, not an object")
        role = data.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            raise ValueError(f"unknown message role {_short(role)}")
        content = data.get("content")
        if content is not None and not isinstance(content, str):
            content = _flatten_content(content)
        raw_calls = data.get("tool_calls") or ()
        if not isinstance(raw_calls, list | tuple):
            raise ValueError(f"tool_calls is {_kind(raw_calls)}, not a list")
        calls = tuple(ToolCall.from_openai(c) for c in raw_calls)
        tool_call_id = data.get("tool_call_id")
        name = data.get("name")
        return cls(
            role=role,
            content=None if content is None else clean_surrogates(content),
            tool_calls=calls,
            tool_call_id=None if tool_call_id is None else _scalar(tool_call_id, "tool_call_id"),
            name=None if name is None else _scalar(name, "name"),
            iteration=as_iteration(data.get("iteration", 0) if iteration is None else iteration),
        )

    @property
    def text(self) -> str:
        """The content as text ('' when absent)."""
        return self.content or ""


def _flatten_content(content: Any) -> str:
    """Join OpenAI content parts (``[{"type": "text", "text": ...}]``) into one string."""
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping):
                parts.append(str(part.get("text", "")))
            else:
                parts.append(str(part))
        return "\n".join(parts)
    return str(content)


def as_iteration(value: Any) -> int:
    """An iteration number: a whole number from 0 to :data:`MAX_ITERATION` (``None`` is 0); ValueError
    otherwise. Bounding it where a message is read keeps any loop over iterations finite."""
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"iteration {_short(value)} is not a whole number")
    if not 0 <= value <= MAX_ITERATION:
        raise ValueError(f"iteration {value} is out of range (0 to {MAX_ITERATION:,})")
    return value


def _scalar(value: Any, what: str) -> str:
    """An id or a name: text, a number written as text, '' for none; ValueError for an object."""
    if value is None:
        return ""
    if isinstance(value, str):
        return clean_surrogates(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"{what} is {_kind(value)}, not text")


def _kind(value: Any) -> str:
    return "null" if value is None else f"a JSON {_JSON_KINDS.get(type(value), type(value).__name__)}"


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_JSON_KINDS = {str: "string", int: "number", float: "number", bool: "boolean", list: "list", dict: "object"}


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage of one model request, or the sum of several.

    ``prompt_tokens`` is every input token of the request, cached or not.
    ``cached_tokens`` is the part of it the provider billed as a cache hit
    (read), ``cache_write_tokens`` the part it billed as written to the cache
    (Anthropic's ``cache_creation_input_tokens``; 0 where writes are free).
    ``requests`` counts model calls (1 for one request).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    requests: int = 0
    cost: float | None = None
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usage:
        """Usage as a trace records it. A count that is negative, fractional or not a number reads
        as missing (0), a cost that is not a finite number >= 0 as unknown: a provider's or a
        file's bad figures never make a total negative."""
        cost = data.get("cost")
        return cls(
            prompt_tokens=token_count(data.get("prompt_tokens")),
            completion_tokens=token_count(data.get("completion_tokens")),
            cached_tokens=token_count(data.get("cached_tokens")),
            requests=token_count(data.get("requests")),
            cost=float(cost)
            if isinstance(cost, int | float) and _number(cost) and 0 <= cost < math.inf
            else None,
            cache_write_tokens=token_count(data.get("cache_write_tokens")),
        )

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost is None and other.cost is None else (self.cost or 0.0) + (other.cost or 0.0)
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            requests=self.requests + other.requests,
            cost=cost,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )


def token_count(value: Any) -> int:
    """A reported token count: a whole number >= 0, else 0 (missing). Negative, fractional, huge
    (over 10^15) or non-numeric reports are treated as no report."""
    if not _number(value) or not 0 <= value <= _MAX_TOKENS:
        return 0
    return int(value) if float(value).is_integer() else 0


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_MAX_TOKENS = 10**15


def to_openai(messages: Iterable[Message]) -> list[dict[str, Any]]:
    return [m.to_openai() for m in messages]


def group_by_iteration(messages: Sequence[Message]) -> dict[int, list[Message]]:
    """Messages keyed by iteration, in order (iteration 0 = system prompt and task)."""
    groups: dict[int, list[Message]] = {}
    for message in messages:
        groups.setdefault(message.iteration, []).append(message)
    return groups


def shared_prefix(old: Sequence[object], new: Sequence[object]) -> int:
    """How many leading items ``new`` has equal to ``old``'s (0 to the shorter length): the messages
    two histories or prompts share, in either form (:class:`Message` or its OpenAI dict)."""
    count = 0
    for before, now in zip(old, new, strict=False):
        if before != now:
            break
        count += 1
    return count
