"""The OpenAI Agents SDK adapter (adapters/_openai_agents.py) against the real package and a fake Model.

Request-only: what the model receives is lean, ``result.to_input_list()`` stays complete; the
retrieval round trip; dedup through the wrapped ``on_invoke_tool``; Responses items both ways.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("agents")

from adapter_runs import MARKER, file_text, run_demo
from agents import Agent, RunConfig, Runner, function_tool
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.tracing import TracingProcessor, set_trace_processors
from agents.tracing.processors import default_processor
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from tiered_agent import ContextSession, Policy, TokenCounter, Truncate
from tiered_agent.adapters import TieredInputFilter
from tiered_agent.adapters._openai_agents import from_responses, to_responses

COUNTER = TokenCounter()


def call(call_id: str, name: str, arguments: dict[str, Any]) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call", call_id=call_id, name=name, arguments=json.dumps(arguments), id=f"fc_{call_id}"
    )


def answer(text: str) -> ResponseOutputMessage:
    content = [ResponseOutputText(type="output_text", text=text, annotations=[])]
    return ResponseOutputMessage(
        id="msg", type="message", role="assistant", status="completed", content=content
    )


class Script(Model):
    """Reads ``paths`` one per request, then retrieves the marker, then answers; records each request."""

    def __init__(self, paths: list[str], retrieve: bool = True) -> None:
        self.paths = paths
        self.retrieve = retrieve
        self.seen: list[tuple[list[Any], list[str]]] = []

    async def get_response(  # the Model interface, keyword for keyword
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: Any,
        tracing: Any,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
    ) -> ModelResponse:
        self.seen.append((list(input), [t.name for t in tools]))
        n = len(self.seen)
        if n <= len(self.paths):
            output: list[Any] = [call(f"call_{n}", "read", {"path": self.paths[n - 1]})]
        elif n == len(self.paths) + 1 and self.retrieve:
            output = [call("call_r", "context_retrieve", {"topic": MARKER})]
        else:
            output = [answer("found" if MARKER in str(input[-1]) else "lost")]
        return ModelResponse(output=output, usage=Usage(requests=1), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def run(script: Script, context: TieredInputFilter, reads: list[str]) -> Any:
    @function_tool
    def read(path: str) -> str:
        """Read a file."""
        reads.append(path)
        return file_text(path)

    agent = Agent(name="t", instructions="audit", model=script, tools=context.tools(read))
    config = RunConfig(call_model_input_filter=context, tracing_disabled=True)

    async def go() -> Any:
        return await Runner.run(agent, "audit", run_config=config, max_turns=60)

    return anyio.run(go)


def tokens(items: list[Any]) -> int:
    return COUNTER.count_prompt(from_responses(items)[0])


def test_thirty_calls_lean_requests_complete_history_and_retrieval() -> None:
    script, reads = Script([f"f{i}" for i in range(1, 31)]), []
    context = TieredInputFilter(read_only_tools={"read"})
    result = run(script, context, reads)
    assert result.final_output == "found"
    history = result.to_input_list()
    outputs = [i["output"] for i in history if i.get("type") == "function_call_output"]
    assert outputs[:30] == [file_text(f"f{i}") for i in range(1, 31)]  # complete, untouched
    assert len(history) == 64
    before_retrieval, tools = script.seen[30]
    assert MARKER not in json.dumps(before_retrieval, default=str)
    assert tokens(before_retrieval) * 2 <= tokens(history[:61])
    assert tools == ["read", "context_retrieve"]  # the SDK sends every tool of the agent
    usage = context.usage
    assert (usage.requests, usage.retrievals, usage.dedup_hits) == (32, 1, 0)
    assert usage.last_prompt_tokens * 2 <= usage.last_full_history_tokens


def test_lean_request_pairs_every_call_with_its_output() -> None:
    script, reads = Script([f"f{i}" for i in range(1, 16)], retrieve=False), []
    run(script, TieredInputFilter(), reads)
    for items, _ in script.seen:
        called = [i["call_id"] for i in items if i.get("type") == "function_call"]
        answered = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
        assert called == answered


def test_repeated_read_is_served_from_the_cache() -> None:
    script, reads = Script(["f3", "f4", "f3"], retrieve=False), []
    context = TieredInputFilter(read_only_tools={"read"})
    result = run(script, context, reads)
    assert reads == ["f3", "f4"]
    outputs = [i["output"] for i in result.to_input_list() if i.get("type") == "function_call_output"]
    assert "already called in iteration 1" in outputs[2] and context.usage.dedup_hits == 1


def test_items_map_to_chat_and_back() -> None:
    big = file_text("f1") * 3
    items: list[Any] = [
        {"role": "user", "content": [{"type": "input_text", "text": "audit"}, {"type": "input_image"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Read f1 first."}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]},
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "read",
            "arguments": '{"path": "f1"}',
            "id": "fc_1",
        },
        {"type": "function_call_output", "call_id": "c1", "output": big},
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        {"type": "function_call", "call_id": "c2", "name": "read", "arguments": '{"path": "f2"}'},
        {"type": "function_call_output", "call_id": "c2", "output": "short"},
    ]
    chat, groups = from_responses(items)
    assert [m["role"] for m in chat] == ["user", "assistant", "tool", "assistant", "tool"]
    assert chat[0]["content"] == "audit\n[input_image]"
    assert chat[1]["content"] == "Read f1 first.\nReading." and chat[1]["tool_calls"][0]["id"] == "c1"
    assert chat[2]["name"] == "read" and groups == [(0,), (1, 2, 3), (4, 5), (6,), (7,)]

    async def lean() -> Any:
        return await ContextSession(Policy("cut", [Truncate(max_chars=10_000)])).prepare(chat)

    rebuilt = to_responses(items, anyio.run(lean), groups)
    assert rebuilt[:4] == items[:4] and all(a is b for a, b in zip(rebuilt[:4], items[:4], strict=True))
    cut = rebuilt[4]
    assert cut["call_id"] == "c1" and 'context_retrieve(tool_call_id="c1")' in cut["output"]
    assert len(cut["output"]) < len(big) and items[4]["output"] == big  # the run's item is untouched
    assert rebuilt[5] is items[5] and rebuilt[6:] == items[6:]


def test_demo_prints_the_report() -> None:
    report = run_demo("openai_agents_demo")
    assert report["framework"] == "openai-agents" and report["calls"] == 31
    assert report["retrieved_marker"] is True
    assert report["last_prompt_tokens"] * 2 <= report["full_history_tokens"]


class _Spans(TracingProcessor):
    """Keeps the exported data of every span that ends."""

    def __init__(self) -> None:
        self.ended: list[dict[str, Any]] = []

    def on_trace_start(self, trace: Any) -> None: ...

    def on_trace_end(self, trace: Any) -> None: ...

    def on_span_start(self, span: Any) -> None: ...

    def on_span_end(self, span: Any) -> None:
        self.ended.append(span.span_data.export())

    def shutdown(self) -> None: ...

    def force_flush(self) -> None: ...


def test_usage_goes_into_the_runs_trace() -> None:
    spans = _Spans()
    set_trace_processors([spans])  # instead of the exporter to OpenAI (no key, no network here)
    try:
        context = TieredInputFilter(read_only_tools={"read"})
        script = Script(["f1", "f2"], retrieve=False)

        @function_tool
        def read(path: str) -> str:
            """Read a file."""
            return file_text(path)

        agent = Agent(name="t", model=script, tools=context.tools(read))

        async def go() -> Any:
            return await Runner.run(agent, "audit", run_config=RunConfig(call_model_input_filter=context))

        anyio.run(go)
    finally:
        set_trace_processors([default_processor()])
    ours = [s["data"] for s in spans.ended if s.get("name") == "tiered_context"]
    assert len(ours) == 3 and ours[-1] == context.usage.to_dict()


_ITEM = st.one_of(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(
                ["function_call", "function_call_output", "reasoning", "message", "web_search_call"]
            )
        },
        optional={
            "role": st.sampled_from(["user", "assistant", "system", "developer", "wizard", None]),
            "call_id": st.one_of(st.sampled_from(["c1", "c2", ""]), st.integers(), st.none()),
            "name": st.one_of(st.text(max_size=5), st.none(), st.integers()),
            "arguments": st.one_of(st.text(max_size=20), st.none(), st.integers()),
            "output": st.one_of(
                st.text(max_size=50), st.lists(st.fixed_dictionaries({"text": st.text(max_size=5)}))
            ),
            "content": st.one_of(
                st.text(max_size=20),
                st.none(),
                st.lists(st.dictionaries(st.text(max_size=3), st.text(max_size=3))),
            ),
            "summary": st.lists(st.fixed_dictionaries({"text": st.text(max_size=5)}), max_size=2),
        },
    ),
    st.text(max_size=5),
    st.integers(),
)


@settings(max_examples=25, deadline=None)
@given(st.lists(_ITEM, max_size=8))
def test_hostile_items_never_break_a_request(items: list[Any]) -> None:
    """Whatever the items, the filter sends a list of items: lean, or as given."""

    async def lean() -> Any:
        chat, groups = from_responses(items)
        request = await ContextSession("tiered", counter=COUNTER).prepare(chat)
        return to_responses(items, request, groups)

    sent = anyio.run(lean)
    assert isinstance(sent, list)
    assert all(item in items for item in sent if not isinstance(item, dict))  # nothing invented but messages
