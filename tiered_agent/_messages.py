"""The runtime's message model: frozen, OpenAI-shaped, iteration-tagged.

Every message carries the iteration that produced it: ``0`` for the system
prompt and the task, ``k`` for the assistant reply of iteration ``k`` and the
tool results (or user replies) that answer it. The context pipeline groups by
that number, so a tool call and its result can never be separated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Message", "Role", "ToolCall", "Usage", "group_by_iteration", "to_openai"]

Role = Literal["system", "user", "assistant", "tool"]


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
        function = data.get("function") or {}
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            from orjson import dumps

            arguments = dumps(arguments if arguments is not None else {}).decode()
        return cls(id=str(data.get("id") or ""), name=str(function.get("name") or ""), arguments=arguments)


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
        role = data.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            raise ValueError(f"unknown message role {role!r}")
        content = data.get("content")
        if content is not None and not isinstance(content, str):
            content = _flatten_content(content)
        calls = tuple(ToolCall.from_openai(c) for c in data.get("tool_calls") or ())
        it = data.get("iteration", 0) if iteration is None else iteration
        return cls(
            role=role,
            content=content,
            tool_calls=calls,
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
            iteration=int(it or 0),
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


def to_openai(messages: Iterable[Message]) -> list[dict[str, Any]]:
    return [m.to_openai() for m in messages]


def group_by_iteration(messages: Sequence[Message]) -> dict[int, list[Message]]:
    """Messages keyed by iteration, in order (iteration 0 = system prompt and task)."""
    groups: dict[int, list[Message]] = {}
    for message in messages:
        groups.setdefault(message.iteration, []).append(message)
    return groups
