"""The pydantic-ai adapter (adapters/_pydantic_ai.py) against the real package and its FunctionModel.

Request-only: what the model receives is lean, ``result.all_messages()`` stays complete; the
retrieval round trip; dedup through ``wrap_tool_execute``; usage in ``RunUsage.details``.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytest.importorskip("pydantic_ai")

from adapter_runs import MARKER, file_text, run_demo
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tiered_agent import ContextSession, Policy, TokenCounter, Truncate
from tiered_agent.adapters import TieredContext
from tiered_agent.adapters._pydantic_ai import from_pydantic_ai, to_pydantic_ai

COUNTER = TokenCounter()


class Script:
    """Reads ``paths`` one per request, then retrieves the marker, then answers; records each request."""

    def __init__(self, paths: list[str], retrieve: bool = True) -> None:
        self.paths = paths
        self.retrieve = retrieve
        self.seen: list[tuple[list[ModelMessage], list[str]]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append((list(messages), [t.name for t in info.function_tools]))
        n = len(self.seen)
        if n <= len(self.paths):
            return ModelResponse(parts=[ToolCallPart("read", {"path": self.paths[n - 1]}, f"call_{n}")])
        if n == len(self.paths) + 1 and self.retrieve:
            return ModelResponse(parts=[ToolCallPart("context_retrieve", {"topic": MARKER}, "call_r")])
        returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        return ModelResponse(parts=[TextPart("found" if MARKER in str(returns[-1].content) else "lost")])


def make_agent(script: Script, context: TieredContext, reads: list[str]) -> Agent[None, str]:
    agent = Agent(FunctionModel(script), capabilities=[context])

    @agent.tool_plain
    def read(path: str) -> str:
        """Read a file."""
        reads.append(path)
        return file_text(path)

    return agent


def tokens(messages: list[ModelMessage]) -> int:
    return COUNTER.count_prompt(from_pydantic_ai(messages)[0])


def test_thirty_calls_lean_requests_complete_history_and_retrieval() -> None:
    script, reads = Script([f"f{i}" for i in range(1, 31)]), []
    context = TieredContext(read_only_tools={"read"})
    result = make_agent(script, context, reads).run_sync("audit")
    assert result.output == "found"
    history = result.all_messages()
    # the framework's history is complete: every read's full output, every call
    returned = [
        p for m in history for p in m.parts if isinstance(p, ToolReturnPart) and p.tool_name == "read"
    ]
    assert [p.content for p in returned] == [file_text(f"f{i}") for i in range(1, 31)]
    assert len(history) == 64
    # the requests were lean: the one before the retrieval at most half its full history, no marker
    before_retrieval, tools = script.seen[30]
    assert MARKER not in str(before_retrieval)
    full = history[: len(history) - 3]  # what the framework held at that request
    assert tokens(before_retrieval) * 2 <= tokens(full)
    assert tools == ["read", "context_retrieve"] and script.seen[0][1] == ["read"]
    # usage the pydantic-ai way, and the session's own
    usage = context.last_usage
    assert usage is not None and usage.requests == 32 and usage.retrievals == 1
    details = result.usage.details
    assert details["tiered_retrievals"] == 1 and details["tiered_saved_tokens"] == usage.saved_tokens
    assert usage.last_prompt_tokens * 2 <= usage.last_full_history_tokens


def test_lean_request_pairs_every_call_with_its_result() -> None:
    script, reads = Script([f"f{i}" for i in range(1, 16)], retrieve=False), []
    make_agent(script, TieredContext(), reads).run_sync("audit")
    for messages, _ in script.seen:
        called = [p.tool_call_id for m in messages for p in m.parts if isinstance(p, ToolCallPart)]
        answered = [p.tool_call_id for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        assert called == answered
        assert isinstance(messages[-1], ModelRequest)


def test_repeated_read_is_served_from_the_cache() -> None:
    script, reads = Script(["f3", "f4", "f3", "f3"], retrieve=False), []
    context = TieredContext(read_only_tools={"read"})
    result = make_agent(script, context, reads).run_sync("audit")
    assert reads == ["f3", "f4"]  # the two later reads of f3 were served
    returned = [p for m in result.all_messages() for p in m.parts if isinstance(p, ToolReturnPart)]
    assert "already called in iteration 1" in str(returned[2].content)
    assert result.usage.details["tiered_dedup_hits"] == 2


def test_without_read_only_tools_nothing_is_served() -> None:
    script, reads = Script(["f3", "f3"], retrieve=False), []
    make_agent(script, TieredContext(), reads).run_sync("audit")
    assert reads == ["f3", "f3"]


def test_each_run_has_its_own_session() -> None:
    context = TieredContext(read_only_tools={"read"})
    reads: list[str] = []
    first = Script(["f3"], retrieve=False)
    make_agent(first, context, reads).run_sync("audit")
    second = Script(["f3"], retrieve=False)
    make_agent(second, context, reads).run_sync("audit")
    assert reads == ["f3", "f3"]  # the second run's cache did not see the first run's read
    assert context.session is None and context.last_usage is not None and context.last_usage.requests == 2


def test_conversion_keeps_unchanged_parts_and_rewrites_only_what_the_policy_changed() -> None:
    big = file_text("f1") * 3  # over Truncate's 10,000 chars
    messages: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart("sys"), UserPromptPart(["look", "at this"])]),
        ModelResponse(parts=[TextPart("reading"), ToolCallPart("read", {"path": "f1"}, "c1")]),
        ModelRequest(parts=[ToolReturnPart("read", big, "c1")]),
        ModelResponse(parts=[ToolCallPart("read", {"path": "f2"}, "c2")]),
        ModelRequest(parts=[ToolReturnPart("read", "bad path", "c2", outcome="retried")]),
        ModelResponse(parts=[TextPart("done?")]),
        ModelRequest(parts=[RetryFeedbackPart("give the answer", retry=RetryInfo(cause="model_retry"))]),
    ]
    chat, origins = from_pydantic_ai(messages)
    roles = ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "user"]
    assert [m["role"] for m in chat] == roles
    assert chat[1]["content"] == "look\nat this" and chat[5]["is_error"] is True

    async def lean() -> Any:
        return await ContextSession(Policy("cut", [Truncate(max_chars=10_000)])).prepare(chat)

    request = anyio.run(lean)
    rebuilt = to_pydantic_ai(messages, request, origins)
    assert rebuilt[0] is not messages[0] and rebuilt[0].parts == messages[0].parts
    assert rebuilt[1] is messages[1] and rebuilt[3] is messages[3]
    cut = rebuilt[2].parts[0]
    assert isinstance(cut, ToolReturnPart) and cut.tool_call_id == "c1"
    assert 'context_retrieve(tool_call_id="c1")' in str(cut.content) and len(str(cut.content)) < len(big)
    assert rebuilt[4].parts[0] is messages[4].parts[0] and rebuilt[6].parts[0] is messages[6].parts[0]
    assert messages[2].parts[0].content == big  # the original is untouched


def test_demo_prints_the_report() -> None:
    report = run_demo("pydantic_ai_demo")
    assert report["framework"] == "pydantic-ai" and report["calls"] == 31
    assert report["retrieved_marker"] is True
    assert report["last_prompt_tokens"] * 2 <= report["full_history_tokens"]
