"""Test doubles for code that uses tiered_agent: models that never touch the network.

``FunctionModel`` answers with a Python function of the request, like
pydantic-ai's test model of the same name. It bypasses litellm entirely, so
it is for testing *your* tools and loop logic fast; the runtime's own tests
drive the real litellm path with a ``litellm.CustomLLM`` provider and a fake
HTTP server.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ._messages import Message, ToolCall, Usage
from ._model import ModelReply
from ._tokens import TokenCounter
from ._tools import Tool, tool

__all__ = ["AgentRequest", "FunctionModel", "calls", "scripted_tools", "text"]


@dataclass(frozen=True, slots=True)
class AgentRequest:
    """What the model was asked: the prompt messages (OpenAI form), the tool schemas, the call number."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    index: int


Reply = Message | str
ReplyFunction = Callable[[AgentRequest], Reply | Awaitable[Reply]]


def text(content: str) -> Message:
    """A final answer."""
    return Message("assistant", content)


def calls(
    *items: tuple[str, dict[str, Any]] | tuple[str, str, dict[str, Any]], content: str | None = None
) -> Message:
    """An assistant message calling tools: ``calls(("read_file", {"path": "a.py"}))`` or with explicit ids."""
    built = []
    for number, item in enumerate(items, start=1):
        call_id, name, args = item if len(item) == 3 else (f"call_{number}", *item)  # type: ignore[misc, unused-ignore]
        built.append(ToolCall(str(call_id), str(name), orjson.dumps(args).decode()))
    return Message("assistant", content, tool_calls=tuple(built))


def scripted_tools(outputs: Mapping[str, str]) -> list[Tool]:
    """Two tools whose results are scripted, for replies scripted with :meth:`FunctionModel.scripted`:
    ``bash(command, ref)`` and the read-only ``read(path, ref)`` return ``outputs[ref]`` (``""`` for a
    ref it does not hold), whatever the command or path says."""

    @tool
    def bash(command: str, ref: str) -> str:
        """Run a command.

        Args:
            command: The command.
            ref: Which output to return.
        """
        return outputs.get(ref, "")

    @tool(read_only=True)
    def read(path: str, ref: str) -> str:
        """Read a file.

        Args:
            path: The path.
            ref: Which output to return.
        """
        return outputs.get(ref, "")

    return [bash, read]


@dataclass
class FunctionModel:
    """A :class:`~tiered_agent.Model` whose replies come from ``function(request)``.

    Usage is computed with the local tokenizer (prompt = the messages and
    tools as sent, completion = the reply), so token accounting stays realistic.
    """

    function: ReplyFunction
    name: str = "function-model/gpt-4o"
    window: int | None = 128_000
    requests: list[AgentRequest] = field(default_factory=list)
    _counter: TokenCounter = field(default_factory=lambda: TokenCounter("o200k_base"))

    @classmethod
    def scripted(cls, replies: Sequence[Reply], **kwargs: Any) -> FunctionModel:
        """Replies in order; asking for more than scripted is an error in the test."""

        def next_reply(request: AgentRequest) -> Reply:
            if request.index >= len(replies):
                raise AssertionError(f"FunctionModel: no scripted reply for call {request.index + 1}")
            return replies[request.index]

        return cls(next_reply, **kwargs)

    def context_window(self) -> int | None:
        return self.window

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelReply:
        request = AgentRequest(messages, tools, len(self.requests))
        self.requests.append(request)
        reply = self.function(request)
        if isinstance(reply, Awaitable):
            reply = await reply
        message = Message("assistant", reply) if isinstance(reply, str) else reply
        usage = Usage(
            prompt_tokens=self._counter.count_prompt(messages, tools),
            completion_tokens=self._counter.count_message(message),
            requests=1,
        )
        return ModelReply(message=message, usage=usage, finish_reason="stop", model=self.name)
