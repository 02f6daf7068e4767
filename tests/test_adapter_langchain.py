"""The LangChain adapter (adapters/_langchain.py) against langchain 1.5 and its GenericFakeChatModel.

Request-only: what the model receives is lean, the agent state's messages stay complete; the
retrieval round trip; dedup through ``wrap_tool_call``; one session per invocation; sync and async.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest

pytest.importorskip("langchain.agents")

from adapter_runs import MARKER, file_text, run_demo
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import tool
from pydantic import Field

from tiered_agent import ContextSession, Policy, TokenCounter, Truncate
from tiered_agent.adapters import TieredMiddleware
from tiered_agent.adapters._langchain import _describe, from_langchain, to_langchain

COUNTER = TokenCounter()


class Fake(GenericFakeChatModel):
    """Scripted replies; records each request's messages and the tools bound."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)
    bound: list[list[str]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Fake:
        self.bound.append([getattr(t, "name", None) or t["function"]["name"] for t in tools])
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def replies(paths: list[str], retrieve: bool = True) -> list[AIMessage]:
    out = [
        AIMessage("", tool_calls=[{"name": "read", "args": {"path": p}, "id": f"call_{n}"}])
        for n, p in enumerate(paths, start=1)
    ]
    if retrieve:
        out.append(
            AIMessage("", tool_calls=[{"name": "context_retrieve", "args": {"topic": MARKER}, "id": "r"}])
        )
    return [*out, AIMessage("done")]


def agent_for(model: Fake, middleware: TieredMiddleware, reads: list[str]) -> Any:
    @tool
    def read(path: str) -> str:
        """Read a file."""
        reads.append(path)
        return file_text(path)

    return create_agent(model, tools=[read], middleware=[middleware])


def invoke(agent: Any) -> list[BaseMessage]:
    state = agent.invoke({"messages": [{"role": "user", "content": "audit"}]}, {"recursion_limit": 200})
    return list(state["messages"])


def tokens(messages: list[BaseMessage]) -> int:
    return COUNTER.count_prompt(from_langchain(messages))


def test_thirty_calls_lean_requests_complete_history_and_retrieval() -> None:
    model, reads = Fake(messages=iter(replies([f"f{i}" for i in range(1, 31)]))), []
    middleware = TieredMiddleware(read_only_tools={"read"})
    history = invoke(agent_for(model, middleware, reads))
    outputs = [m.text for m in history if isinstance(m, ToolMessage) and m.name == "read"]
    assert outputs == [file_text(f"f{i}") for i in range(1, 31)] and len(history) == 64
    before_retrieval = model.seen[30]
    assert MARKER not in str([m.content for m in before_retrieval])
    assert tokens(before_retrieval) * 2 <= tokens(history[:61])
    retrieval = history[-2]
    assert isinstance(retrieval, ToolMessage) and MARKER in retrieval.text
    assert model.bound[0] == ["read"] and sorted(model.bound[-1]) == ["context_retrieve", "read"]
    usage = middleware.usage
    assert usage is not None and (usage.requests, usage.retrievals) == (32, 1)
    assert history[-1].response_metadata["tiered_context"]["saved_tokens"] == usage.saved_tokens
    assert usage.last_prompt_tokens * 2 <= usage.last_full_history_tokens


def test_async_invocation_and_dedup() -> None:
    model, reads = Fake(messages=iter(replies(["f3", "f4", "f3"], retrieve=False))), []
    middleware = TieredMiddleware(read_only_tools={"read"})
    agent = agent_for(model, middleware, reads)

    async def go() -> Any:
        return await agent.ainvoke({"messages": [HumanMessage("audit")]}, {"recursion_limit": 50})

    history = anyio.run(go)["messages"]
    assert reads == ["f3", "f4"]
    served = [m for m in history if isinstance(m, ToolMessage)][2]
    assert "already called in iteration 1" in served.text and served.tool_call_id == "call_3"
    assert middleware.usage is not None and middleware.usage.dedup_hits == 1


def test_each_invocation_has_its_own_session() -> None:
    middleware = TieredMiddleware(read_only_tools={"read"})
    reads: list[str] = []
    for _ in range(2):
        model = Fake(messages=iter(replies(["f3"], retrieve=False)))
        invoke(agent_for(model, middleware, reads))
    assert reads == ["f3", "f3"]  # the second invocation's cache did not see the first's read


def test_lean_request_pairs_every_call_with_its_result() -> None:
    model, reads = Fake(messages=iter(replies([f"f{i}" for i in range(1, 16)], False))), []
    invoke(agent_for(model, TieredMiddleware(), reads))
    for messages in model.seen:
        called = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
        answered = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
        assert called == answered


def test_messages_map_to_chat_and_back() -> None:
    big = file_text("f1") * 3
    messages: list[Any] = [
        HumanMessage("audit"),
        AIMessage("reading", tool_calls=[{"name": "read", "args": {"path": "f1"}, "id": "c1"}]),
        ToolMessage(big, tool_call_id="c1", name="read"),
        AIMessage("", tool_calls=[{"name": "read", "args": {"path": "f2"}, "id": "c2"}]),
        ToolMessage("no such file", tool_call_id="c2", name="read", status="error"),
    ]
    chat = from_langchain(messages)
    assert [m["role"] for m in chat] == ["user", "assistant", "tool", "assistant", "tool"]
    assert chat[1]["tool_calls"][0]["function"]["arguments"] == '{"path":"f1"}' and chat[4]["is_error"]

    async def lean() -> Any:
        return await ContextSession(Policy("cut", [Truncate(max_chars=10_000)])).prepare(chat)

    rebuilt = to_langchain(messages, anyio.run(lean))
    assert all(rebuilt[i] is messages[i] for i in (0, 1, 3, 4))
    assert isinstance(rebuilt[2], ToolMessage) and rebuilt[2].tool_call_id == "c1"
    assert 'context_retrieve(tool_call_id="c1")' in rebuilt[2].text and messages[2].text == big
    assert _describe(messages[4]) == ("no such file", True) and _describe(messages[2]) == (big, False)
    assert isinstance(to_langchain([], _added())[0], SystemMessage)


def _added() -> Any:
    from tiered_agent import LeanRequest

    return LeanRequest(({"role": "system", "content": "note"},), (), (None,), (False,), 1, 1)


def test_demo_prints_the_report() -> None:
    report = run_demo("langchain_demo")
    assert report["framework"] == "langchain" and report["calls"] == 31
    assert report["retrieved_marker"] is True
    assert report["last_prompt_tokens"] * 2 <= report["full_history_tokens"]
