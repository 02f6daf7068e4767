"""pydantic-ai: the tiered policy as a capability (``Agent(capabilities=[TieredContext()])``).

Seams (pydantic-ai-slim 2.68):

- ``before_model_request`` rewrites ``request_context.messages`` only: the request, never
  ``ctx.messages`` (the run's history stays complete, unlike the ``ProcessHistory`` capability);
  ``context_retrieve``'s definition is left out of the request's ``function_tools`` until the
  policy hides something;
- ``get_toolset`` registers ``context_retrieve`` as a pydantic-ai tool;
- ``wrap_tool_execute`` runs each tool call through the session's dispatch, so an identical call
  of a read-only tool (``read_only_tools``) in a later reply is answered from the cache;
- ``for_run`` gives every run its own :class:`~tiered_agent.ContextSession`; after each request
  the run's usage carries the savings in ``RunUsage.details`` (``tiered_*`` keys), and
  :attr:`TieredContext.last_usage` holds the last run's :class:`~tiered_agent.SessionUsage`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import messages as pm
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import RunContext, Tool, ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from .._messages import Message
from ..context._names import RETRIEVE_TOOL_NAME
from ..context._policy import Policy
from ..context._session import ContextSession, LeanRequest, SessionUsage
from ..context.retrieve._tool import RETRIEVE_DESCRIPTION

__all__ = ["TieredContext", "from_pydantic_ai", "to_pydantic_ai"]

# (native message index, part index or -1 for a whole response) of each OpenAI message
Origin = tuple[int, int]


@dataclass
class TieredContext(AbstractCapability[Any]):
    """The tiered context policy for a pydantic-ai agent (see the module docstring)."""

    policy: Policy | str = "tiered"
    read_only_tools: Iterable[str] = ()
    model: str | None = None  # a litellm model name: the tokenizer, cache and price terms
    context_window: int | None = None
    session: ContextSession | None = field(default=None, repr=False)  # the run's (set by for_run)
    last_usage: SessionUsage | None = field(default=None, repr=False)  # the last run's usage
    _parent: TieredContext | None = field(default=None, repr=False)

    async def for_run(self, ctx: RunContext[Any]) -> TieredContext:
        session = ContextSession(
            self.policy,
            model=self.model,
            read_only_tools=self.read_only_tools,
            context_window=self.context_window,
        )
        return dataclasses.replace(self, session=session, _parent=self)

    def get_toolset(self) -> FunctionToolset[Any] | None:
        schema = ContextSession(self.policy).retrieve_schema
        if schema is None:
            return None
        retrieve = Tool.from_schema(
            self._retrieve, RETRIEVE_TOOL_NAME, RETRIEVE_DESCRIPTION, schema["function"]["parameters"]
        )
        return FunctionToolset([retrieve])

    async def _retrieve(self, **arguments: Any) -> str:
        return await self._session().retrieve(arguments)

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        session = self._session()
        messages, origins = from_pydantic_ai(request_context.messages)
        parameters = request_context.model_request_parameters
        tools = [_schema(tool) for tool in parameters.function_tools]
        lean = await session.prepare(messages, tools)
        request_context.messages = to_pydantic_ai(request_context.messages, lean, origins)
        if not lean.retrieval:
            kept = [t for t in parameters.function_tools if t.name != RETRIEVE_TOOL_NAME]
            request_context.model_request_parameters = dataclasses.replace(parameters, function_tools=kept)
        self._report(ctx, session.usage)
        return request_context

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: pm.ToolCallPart,
        tool_def: ToolDefinition,
        args: Any,
        handler: Callable[[Any], Any],
    ) -> Any:
        async def execute() -> Any:
            return await handler(args)

        return await self._session().run_tool(
            call.tool_name, call.args_as_json_str(), call.tool_call_id, execute
        )

    def _session(self) -> ContextSession:
        if self.session is None:  # a hook outside a run (pydantic-ai calls for_run first)
            self.session = ContextSession(self.policy, model=self.model, read_only_tools=self.read_only_tools)
        return self.session

    def _report(self, ctx: RunContext[Any], usage: SessionUsage) -> None:
        """The savings the pydantic-ai way: integer ``details`` on the run's usage."""
        ctx.usage.details.update(_details(usage))
        if self._parent is not None:
            self._parent.last_usage = usage
        self.last_usage = usage

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a live session: not spec-serializable


def _details(usage: SessionUsage) -> dict[str, int]:
    return {
        "tiered_prompt_tokens": usage.prompt_tokens,
        "tiered_full_history_tokens": usage.full_history_tokens,
        "tiered_saved_tokens": usage.saved_tokens,
        "tiered_dedup_hits": usage.dedup_hits,
        "tiered_retrievals": usage.retrievals,
        "tiered_step_errors": usage.step_errors,
    }


def _schema(tool: ToolDefinition) -> dict[str, Any]:
    function = {
        "name": tool.name,
        "description": tool.description or "",
        "parameters": tool.parameters_json_schema,
    }
    return {"type": "function", "function": function}


# --------------------------------------------------------------------------- pydantic-ai -> OpenAI
def from_pydantic_ai(messages: Sequence[pm.ModelMessage]) -> tuple[list[dict[str, Any]], list[Origin]]:
    """OpenAI chat messages for pydantic-ai messages, and where each came from. Parts with no chat
    form (instruction deltas, native tool parts) are left to the request they belong to."""
    out: list[dict[str, Any]] = []
    origins: list[Origin] = []
    for index, message in enumerate(messages):
        if isinstance(message, pm.ModelResponse):
            out.append(_response(message))
            origins.append((index, -1))
            continue
        for number, part in enumerate(message.parts):
            data = _request_part(part)
            if data is not None:
                out.append(data)
                origins.append((index, number))
    return out, origins


def _response(message: pm.ModelResponse) -> dict[str, Any]:
    text = "\n".join(part.content for part in message.parts if isinstance(part, pm.TextPart))
    calls = [
        {
            "id": part.tool_call_id,
            "type": "function",
            "function": {"name": part.tool_name, "arguments": part.args_as_json_str()},
        }
        for part in message.parts
        if isinstance(part, pm.ToolCallPart)
    ]
    data: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        data["tool_calls"] = calls
    return data


def _request_part(part: Any) -> dict[str, Any] | None:
    if isinstance(part, pm.ToolReturnPart):
        return _tool(part.tool_call_id, part.tool_name, part.model_response_str(), part.outcome != "success")
    if isinstance(part, pm.RetryPromptPart) and part.tool_name is not None:  # pydantic-ai < 2.60 histories
        return _tool(part.tool_call_id, part.tool_name, part.model_response(), True)
    if isinstance(part, pm.SystemPromptPart):
        return {"role": "system", "content": part.content}
    if isinstance(part, pm.UserPromptPart):
        return {"role": "user", "content": _user_text(part.content)}
    if isinstance(part, pm.RetryFeedbackPart | pm.RetryPromptPart):
        return {"role": "user", "content": part.model_response()}
    return None


def _tool(call_id: str, name: str, content: str, error: bool) -> dict[str, Any]:
    return {"role": "tool", "content": content, "tool_call_id": call_id, "name": name, "is_error": error}


def _user_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(item if isinstance(item, str) else f"[{type(item).__name__}]" for item in content)


# --------------------------------------------------------------------------- lean request -> pydantic-ai
def to_pydantic_ai(
    messages: Sequence[pm.ModelMessage], lean: LeanRequest, origins: Sequence[Origin]
) -> list[pm.ModelMessage]:
    """The request's pydantic-ai messages for a lean request: each message the policy left
    unchanged is the original part (or response), a rewritten one a copy with the new text, one the
    policy added a new user (or system) prompt. Consecutive parts of one request stay one request."""
    out: list[pm.ModelMessage] = []
    mapped = set(origins)
    open_request: tuple[int, list[Any]] | None = None  # (native index, parts) being collected
    for data, source, same in zip(lean.messages, lean.sources, lean.unchanged, strict=True):
        origin = origins[source] if source is not None else None
        if origin is not None and origin[1] == -1:
            open_request = None
            response = messages[origin[0]]
            out.append(response if same else _rewritten_response(response, data))
            continue
        index = origin[0] if origin is not None else -1
        part = _part(messages, origin, data, same)
        if open_request is not None and open_request[0] == index and index >= 0:
            open_request[1].append(part)
            continue
        native = messages[index] if index >= 0 else None
        parts: list[Any] = [part]
        if isinstance(native, pm.ModelRequest):  # parts with no chat form stay with their request
            parts[:0] = [p for k, p in enumerate(native.parts) if (index, k) not in mapped]
        open_request = (index, parts)
        if isinstance(native, pm.ModelRequest):
            out.append(dataclasses.replace(native, parts=parts))
        else:
            out.append(pm.ModelRequest(parts=parts))
    return out


def _part(
    messages: Sequence[pm.ModelMessage], origin: Origin | None, data: Mapping[str, Any], same: bool
) -> Any:
    if origin is None:
        text = str(data.get("content") or "")
        return pm.SystemPromptPart(text) if data.get("role") == "system" else pm.UserPromptPart(text)
    native = messages[origin[0]]
    assert isinstance(native, pm.ModelRequest)
    part: Any = native.parts[origin[1]]
    if same:
        return part
    rewritable = (
        pm.ToolReturnPart,
        pm.RetryPromptPart,
        pm.RetryFeedbackPart,
        pm.SystemPromptPart,
        pm.UserPromptPart,
    )
    if type(part) in rewritable:  # typed tool parts (tool search, capabilities) are sent as they are
        changed: Any = dataclasses.replace(part, content=str(data.get("content") or ""))
        return changed
    return part


def _rewritten_response(response: pm.ModelMessage, data: Mapping[str, Any]) -> pm.ModelMessage:
    assert isinstance(response, pm.ModelResponse)
    message = Message.from_openai(data)
    parts: list[Any] = [pm.TextPart(message.text)] if message.text else []
    parts += [pm.ToolCallPart(call.name, call.arguments, call.id) for call in message.tool_calls]
    return dataclasses.replace(response, parts=parts)
