"""Opt-in span content in the GenAI conventions' JSON shapes, always redacted, texts capped.

``gen_ai.input.messages`` / ``gen_ai.output.messages`` follow the conventions' message schemas
(``{"role", "parts": [{"type": "text", "content"}, {"type": "tool_call", "id", "name",
"arguments"}, {"type": "tool_call_response", "id", "response"}]}``), recorded as JSON strings as
the conventions allow on spans. Every value goes through the trace's secret redaction
(:func:`tiered_agent._trace.redact`) before it is capped and serialized.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from .._messages import Message, ToolCall
from .._trace import redact

__all__ = ["capped", "input_messages", "output_messages", "redacted_text", "tool_arguments"]


def redacted_text(text: str, limit: int) -> str:
    """``text`` redacted, then cut to ``limit`` chars with a marker saying how much was left out."""
    return capped(str(redact(text)), limit)


def capped(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}[... {len(text) - limit:,} chars omitted]"


def input_messages(messages: Sequence[Message], limit: int) -> str:
    return _dumps([_chat_message(m, limit) for m in messages])


def output_messages(message: Message | None, finish_reason: str | None, limit: int) -> str:
    """The model's one choice (``gen_ai.output.messages``); an empty list when no reply arrived."""
    if message is None:
        return _dumps([])
    out = _chat_message(message, limit)
    out["finish_reason"] = finish_reason or ""
    return _dumps([out])


def tool_arguments(call: ToolCall, limit: int) -> str:
    """``gen_ai.tool.call.arguments``: the parsed arguments (redacted), or the raw text when not JSON."""
    return _dumps(_parsed(call.arguments, limit))


def _chat_message(message: Message, limit: int) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if message.role == "tool":
        response = redacted_text(message.text, limit)
        parts.append({"type": "tool_call_response", "id": message.tool_call_id, "response": response})
    elif message.content:
        parts.append({"type": "text", "content": redacted_text(message.content, limit)})
    for call in message.tool_calls:
        arguments = _parsed(call.arguments, limit)
        parts.append({"type": "tool_call", "id": call.id, "name": call.name, "arguments": arguments})
    return {"role": message.role, "parts": parts}


def _parsed(arguments: str, limit: int) -> Any:
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return redacted_text(arguments, limit)
    return _capped_strings(redact(value), limit)


def _capped_strings(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return capped(value, limit)
    if isinstance(value, dict):
        return {k: _capped_strings(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_capped_strings(v, limit) for v in value]
    return value


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()
