"""LangChain 1.5: the tiered policy as an agent middleware (``create_agent(..., middleware=[...])``).

Seams (langchain 1.5, langchain-core 1.8, langgraph 1.2):

- ``wrap_model_call`` / ``awrap_model_call`` hand the model ``request.override(messages=...)``:
  the request only, the agent state's ``messages`` stay complete; ``context_retrieve`` is left
  out of ``request.tools`` until the policy hides something;
- the middleware's ``tools`` register ``context_retrieve``; ``wrap_tool_call`` /
  ``awrap_tool_call`` answer it from the run's full history, and run every other call through
  the session's dispatch (an identical call of a read-only tool in a later reply is answered from
  the dedup cache; a ``ToolMessage`` with ``status="error"`` is never remembered);
- every invocation (a thread: a conversation) gets its own :class:`~tiered_agent.ContextSession`,
  named by a private state key the middleware sets in ``before_agent``; the savings go into each
  model reply's ``response_metadata["tiered_context"]`` and :attr:`TieredMiddleware.usage`.

The system message travels apart from ``messages`` in LangChain and is not counted.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Annotated, Any, NotRequired, TypeVar

import orjson
from cachetools import LRUCache
from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
)
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from ..context._names import RETRIEVE_TOOL_NAME
from ..context._policy import Policy
from ..context._session import ContextSession, LeanRequest, SessionUsage
from ..context.retrieve._tool import RETRIEVE_DESCRIPTION

__all__ = ["TieredMiddleware", "TieredState", "from_langchain", "to_langchain"]

T = TypeVar("T")
MAX_SESSIONS = 256  # runs kept at once (least recently used first out)
_STATE_KEY = "tiered_run"


class TieredState(AgentState[Any]):
    """The agent state with the key naming the invocation's session (private: not input nor output)."""

    tiered_run: NotRequired[Annotated[str, PrivateStateAttr]]


class TieredMiddleware(AgentMiddleware[TieredState, Any]):
    """The tiered context policy for a LangChain agent (see the module docstring)."""

    state_schema = TieredState

    def __init__(
        self,
        policy: Policy | str = "tiered",
        *,
        read_only_tools: Iterable[str] = (),
        model: str | None = None,
        context_window: int | None = None,
    ) -> None:
        super().__init__()
        self.policy = policy
        self.read_only_tools = frozenset(read_only_tools)
        self.model = model
        self.context_window = context_window
        self._sessions: LRUCache[str, ContextSession] = LRUCache(maxsize=MAX_SESSIONS)
        self._last: ContextSession | None = None
        schema = self._new_session().retrieve_schema
        self.tools: Sequence[BaseTool] = [_retrieve_tool(schema)] if schema is not None else []

    @property
    def usage(self) -> SessionUsage | None:
        """The usage of the session that served the latest request (None before any)."""
        return self._last.usage if self._last is not None else None

    # ------------------------------------------------------------------ lifecycle
    def before_agent(self, state: TieredState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return None if state.get(_STATE_KEY) else {_STATE_KEY: uuid.uuid4().hex}

    async def abefore_agent(self, state: TieredState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)

    # ------------------------------------------------------------------ model calls
    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResponse[Any]:
        session = self._session(request.state)
        lean = _run(self._lean(session, request))
        return self._report(session, handler(lean))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        session = self._session(request.state)
        lean = await self._lean(session, request)
        return self._report(session, await handler(lean))

    async def _lean(self, session: ContextSession, request: ModelRequest[Any]) -> ModelRequest[Any]:
        chat = from_langchain(request.messages)
        tools = [_schema(tool) for tool in request.tools]
        lean = await session.prepare(chat, [t for t in tools if t is not None])
        messages = to_langchain(request.messages, lean)
        if lean.retrieval:
            return request.override(messages=messages)
        kept = [tool for tool in request.tools if _name(tool) != RETRIEVE_TOOL_NAME]
        return request.override(messages=messages, tools=kept)

    def _report(self, session: ContextSession, response: ModelResponse[Any]) -> ModelResponse[Any]:
        """The savings the LangChain way: in the reply's ``response_metadata``."""
        self._last = session
        usage = session.usage.to_dict()
        for message in response.result:
            if isinstance(message, AIMessage):
                message.response_metadata["tiered_context"] = usage
        return response

    # ------------------------------------------------------------------ tool calls
    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]]
    ) -> ToolMessage | Command[Any]:
        async def execute() -> ToolMessage | Command[Any]:
            return handler(request)

        return _run(self._tool(request, execute))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        async def execute() -> ToolMessage | Command[Any]:
            return await handler(request)

        return await self._tool(request, execute)

    async def _tool(
        self, request: ToolCallRequest, execute: Callable[[], Awaitable[ToolMessage | Command[Any]]]
    ) -> ToolMessage | Command[Any]:
        session = self._session(request.state)
        call = request.tool_call
        name, call_id = call["name"], call.get("id") or ""
        arguments = orjson.dumps(call.get("args") or {}).decode()
        if name == RETRIEVE_TOOL_NAME:
            text = await session.retrieve(arguments, call_id=call_id)
            return ToolMessage(content=text, tool_call_id=call_id, name=name)
        result = await session.run_tool(name, arguments, call_id, execute, describe=_describe)
        if isinstance(result, str):  # served from the cache
            return ToolMessage(content=result, tool_call_id=call_id, name=name)
        return result

    # ------------------------------------------------------------------ sessions
    def _session(self, state: Any) -> ContextSession:
        key = state.get(_STATE_KEY) if isinstance(state, Mapping) else None
        key = key if isinstance(key, str) and key else "default"
        session = self._sessions.get(key)
        if session is None:
            session = self._sessions[key] = self._new_session()
        return session

    def _new_session(self) -> ContextSession:
        return ContextSession(
            self.policy,
            model=self.model,
            read_only_tools=self.read_only_tools,
            context_window=self.context_window,
        )


def _retrieve_tool(schema: Mapping[str, Any]) -> BaseTool:
    def answered_by_middleware(**arguments: Any) -> str:
        return "Error: context_retrieve is answered by TieredMiddleware; add it to the agent's middleware."

    return StructuredTool.from_function(
        func=answered_by_middleware,
        name=RETRIEVE_TOOL_NAME,
        description=RETRIEVE_DESCRIPTION,
        args_schema=dict(schema["function"]["parameters"]),
    )


def _describe(result: ToolMessage | Command[Any]) -> tuple[str, bool]:
    if isinstance(result, ToolMessage):
        return result.text, result.status == "error"
    return repr(result), True  # a Command changes the graph: never served from the cache


def _schema(tool: BaseTool | dict[str, Any]) -> dict[str, Any] | None:
    try:
        return dict(convert_to_openai_tool(tool))
    except Exception:  # a provider's built-in tool with no function form: not counted
        return None


def _name(tool: BaseTool | dict[str, Any]) -> str | None:
    if isinstance(tool, BaseTool):
        return tool.name
    function = tool.get("function")
    name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
    return name if isinstance(name, str) else None


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """A session call from LangChain's synchronous path (``agent.invoke``): on its own event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    coroutine.close()
    raise RuntimeError("TieredMiddleware's synchronous hooks ran inside an event loop: use agent.ainvoke")


# --------------------------------------------------------------------------- LangChain <-> chat
def from_langchain(messages: Sequence[AnyMessage]) -> list[dict[str, Any]]:
    """OpenAI chat messages for LangChain messages, one for one."""
    return [_chat(message) for message in messages]


def _chat(message: BaseMessage) -> dict[str, Any]:
    if isinstance(message, AIMessage):
        calls = [
            {
                "id": call.get("id") or "",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": orjson.dumps(call.get("args") or {}).decode(),
                },
            }
            for call in message.tool_calls
        ]
        data: dict[str, Any] = {"role": "assistant", "content": message.text or None}
        return {**data, "tool_calls": calls} if calls else data
    if isinstance(message, ToolMessage):
        return {
            "role": "tool",
            "content": message.text,
            "tool_call_id": message.tool_call_id,
            "name": message.name or "",
            "is_error": message.status == "error",
        }
    role = "system" if isinstance(message, SystemMessage) else "user"
    return {"role": role, "content": message.text}


def to_langchain(messages: Sequence[AnyMessage], lean: LeanRequest) -> list[AnyMessage]:
    """The request's messages for a lean request: the original message where the policy left it
    unchanged, a copy with the new text where it rewrote it (a reply keeps its tool calls), a new
    message where it added one."""
    out: list[AnyMessage] = []
    for data, source, same in zip(lean.messages, lean.sources, lean.unchanged, strict=True):
        text = str(data.get("content") or "")
        if source is None:
            out.append(SystemMessage(text) if data.get("role") == "system" else HumanMessage(text))
        elif same:
            out.append(messages[source])
        else:
            out.append(messages[source].model_copy(update={"content": text}))
    return out
