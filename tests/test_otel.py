"""OpenTelemetry spans from a run's events (in-memory exporter): names, parents, kinds, attributes,
errors, concurrency, content opt-in with redaction, and when telemetry switches itself on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tiered_agent import Agent, ContextConfig, MCPStdioServer, Message, Telemetry, tool
from tiered_agent._errors import ConfigurationError, MCPServerError, ModelError
from tiered_agent._trace import (
    ContextRecord,
    ModelRequest,
    ModelResponse,
    RetrievalEvent,
    RunStarted,
    SummaryEvent,
    ToolResult,
    event_from_dict,
    event_to_dict,
    read_trace,
)
from tiered_agent.telemetry import run_observer
from tiered_agent.telemetry._attributes import request_attributes, split_model
from tiered_agent.telemetry._environment import CAPTURE_CONTENT_ENV, endpoint_configured
from tiered_agent.telemetry._export import build_provider
from tiered_agent.telemetry._pipelines import cli_telemetry
from tiered_agent.testing import AgentRequest, FunctionModel, calls, text

pytestmark = pytest.mark.anyio

BIG = "".join(f"line {i:04d} of the big file\n" for i in range(400))  # 10,400 chars: truncated at 500
SECRET = "sk-" + "Q7w" * 8
CONTENT_KEYS = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}
OTEL_ENVS = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    "OTEL_SDK_DISABLED",
    CAPTURE_CONTENT_ENV,
)


@tool(read_only=True)
def read_big(name: str) -> str:
    """Return a big text.

    Args:
        name: Which text.
    """
    return BIG


@tool
def broken(path: str) -> str:
    """Always fails.

    Args:
        path: Ignored.
    """
    raise ValueError("disk on fire")


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return f"found: api_key={key}"


@pytest.fixture(autouse=True)
def _clean_otel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OTEL_ENVS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def provider() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield tracer_provider, exporter
    tracer_provider.shutdown()


def make_agent(tmp_path: Path, model: FunctionModel, provider: TracerProvider, **kwargs: Any) -> Agent:
    kwargs.setdefault("tools", [read_big])
    kwargs.setdefault("context", ContextConfig(name="500-chars"))
    kwargs.setdefault("telemetry", Telemetry(tracer_provider=provider))
    return Agent(model, trace_dir=tmp_path, **kwargs)


def by_name(spans: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return sorted((s for s in spans if s.name.startswith(prefix)), key=lambda s: s.start_time or 0)


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent else None


def span_id(span: ReadableSpan) -> int:
    return span.context.span_id if span.context else 0


def all_attribute_text(spans: tuple[ReadableSpan, ...]) -> str:
    texts = [json.dumps(attrs(s), default=str) for s in spans]
    texts += [json.dumps(dict(e.attributes or {}), default=str) for s in spans for e in s.events]
    texts += [s.status.description or "" for s in spans]
    return "\n".join(texts)


# ---------------------------------------------------------------- spans of a run
async def test_run_chat_and_tool_spans_follow_the_genai_conventions(
    tmp_path: Path, provider: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    tracer_provider, exporter = provider
    model = FunctionModel.scripted([calls(("call_a", "read_big", {"name": "x"})), text("done")])
    result = await make_agent(tmp_path, model, tracer_provider).run("read it")
    spans = exporter.get_finished_spans()
    events = read_trace(result.trace_path)
    started = next(e for e in events if isinstance(e, RunStarted))
    requests = [e for e in events if isinstance(e, ModelRequest)]
    responses = [e for e in events if isinstance(e, ModelResponse)]
    tool_result = next(e for e in events if isinstance(e, ToolResult))

    [run] = by_name(spans, "invoke_agent")
    chats = by_name(spans, "chat ")
    [tool_span] = by_name(spans, "execute_tool")
    assert len(spans) == 4 and run.name == "invoke_agent tiered-agent"
    assert [c.name for c in chats] == [
        "chat gpt-4o",
        "chat gpt-4o",
    ] and tool_span.name == "execute_tool read_big"
    assert (run.kind, chats[0].kind, tool_span.kind) == (
        SpanKind.INTERNAL,
        SpanKind.CLIENT,
        SpanKind.INTERNAL,
    )
    assert run.parent is None
    assert [parent_id(s) for s in (*chats, tool_span)] == [span_id(run)] * 3
    assert len({s.context.trace_id for s in spans if s.context}) == 1
    assert all(s.status.status_code is StatusCode.UNSET for s in spans)
    assert tool_span.instrumentation_scope is not None
    assert tool_span.instrumentation_scope.name == "tiered_agent"

    run_attrs = attrs(run)
    assert run_attrs["gen_ai.operation.name"] == "invoke_agent"
    assert run_attrs["gen_ai.provider.name"] == "function-model"
    assert run_attrs["gen_ai.request.model"] == "gpt-4o"
    assert run_attrs["gen_ai.agent.name"] == "tiered-agent"
    assert run_attrs["gen_ai.conversation.id"] == result.trace_path.stem
    assert run_attrs["tiered_agent.run.id"] == started.run_id
    assert run_attrs["gen_ai.usage.input_tokens"] == result.usage.prompt_tokens
    assert run_attrs["gen_ai.usage.output_tokens"] == result.usage.completion_tokens
    assert run_attrs["tiered_agent.run.stop_reason"] == "answered"
    assert run_attrs["tiered_agent.run.iterations"] == 2
    assert run_attrs["tiered_agent.prompt.tokens"] == result.prompt_tokens_local
    assert run_attrs["tiered_agent.prompt.full_history_tokens"] == result.counterfactual_tokens
    assert run_attrs["tiered_agent.prompt.savings"] == pytest.approx(result.savings)
    assert result.savings > 0
    assert run_attrs["tiered_agent.tool.calls"] == 1 and run_attrs["tiered_agent.tool.errors"] == 0
    assert run_attrs["tiered_agent.context.policy"] == "500-chars"

    for chat, request, response in zip(chats, requests, responses, strict=True):
        chat_attrs = attrs(chat)
        assert chat_attrs["gen_ai.operation.name"] == "chat"
        assert chat_attrs["gen_ai.provider.name"] == "function-model"
        assert chat_attrs["gen_ai.conversation.id"] == result.trace_path.stem
        assert chat_attrs["tiered_agent.iteration"] == request.iteration
        assert chat_attrs["tiered_agent.prompt.tokens"] == request.prompt_tokens_local
        assert chat_attrs["tiered_agent.prompt.full_history_tokens"] == request.counterfactual_tokens
        assert chat_attrs["gen_ai.usage.input_tokens"] == response.usage.prompt_tokens
        assert chat_attrs["gen_ai.usage.output_tokens"] == response.usage.completion_tokens
        assert chat_attrs["gen_ai.usage.cache_read.input_tokens"] == 0
        assert chat_attrs["gen_ai.response.model"] == "function-model/gpt-4o"
        assert chat_attrs["gen_ai.response.finish_reasons"] == ("stop",)
    second = attrs(chats[1])
    assert second["tiered_agent.context.truncated_outputs"] == 1
    assert second["tiered_agent.context.truncated_call_ids"] == ("call_a",)
    truncated = ContextRecord.from_dict(requests[1].context).truncated_chars
    assert second["tiered_agent.context.truncated_chars"] == truncated > 9_000
    assert second["tiered_agent.prompt.saved_tokens"] == (
        requests[1].counterfactual_tokens - requests[1].prompt_tokens_local
    )
    assert attrs(chats[0])["tiered_agent.context.truncated_outputs"] == 0

    tool_attrs = attrs(tool_span)
    assert tool_attrs["gen_ai.operation.name"] == "execute_tool"
    assert tool_attrs["gen_ai.tool.name"] == "read_big" and tool_attrs["gen_ai.tool.call.id"] == "call_a"
    assert tool_attrs["gen_ai.tool.type"] == "function"
    assert tool_attrs["gen_ai.tool.description"].startswith("Return a big text.")
    assert tool_attrs["tiered_agent.tool.output_chars"] == len(BIG)
    assert tool_attrs["tiered_agent.tool.read_only"] is True
    assert tool_result.started_at is not None
    assert tool_span.start_time == round(tool_result.started_at * 1e9)
    assert tool_span.end_time == tool_span.start_time + round(tool_result.duration_s * 1e9)
    assert (chats[0].end_time or 0) <= (tool_span.start_time or 0) <= (chats[1].start_time or 0)
    assert (run.start_time or 0) <= (chats[0].start_time or 0) and (chats[1].end_time or 0) <= (
        run.end_time or 0
    )
    assert not CONTENT_KEYS & {k for s in spans for k in attrs(s)}  # content is opt-in
    assert "read it" not in all_attribute_text(spans)


async def test_concurrent_tool_spans_keep_their_own_start_and_end(
    tmp_path: Path, provider: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    tracer_provider, exporter = provider
    arrived: list[str] = []
    both = anyio.Event()

    @tool
    async def meet(label: str) -> str:
        """Return once both calls are running.

        Args:
            label: Which call.
        """
        arrived.append(label)
        if len(arrived) == 2:
            both.set()
        await both.wait()
        return label

    model = FunctionModel.scripted(
        [calls(("c1", "meet", {"label": "a"}), ("c2", "meet", {"label": "b"})), text("ok")]
    )
    result = await make_agent(tmp_path, model, tracer_provider, tools=[meet]).run("x")
    assert result.output == "ok"
    [run] = by_name(exporter.get_finished_spans(), "invoke_agent")
    tools = by_name(exporter.get_finished_spans(), "execute_tool")
    assert sorted(attrs(s)["gen_ai.tool.call.id"] for s in tools) == ["c1", "c2"]
    first, second = tools
    # each call waited for the other, so the spans overlap as the calls did
    assert (first.start_time or 0) < (second.end_time or 0) and (second.start_time or 0) < (
        first.end_time or 0
    )
    assert all(parent_id(s) == span_id(run) for s in tools)


async def test_failing_tool_span_has_error_status_and_the_run_still_answers(
    tmp_path: Path, provider: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    tracer_provider, exporter = provider
    model = FunctionModel.scripted([calls(("c1", "broken", {"path": "a"})), text("gave up")])
    result = await make_agent(tmp_path, model, tracer_provider, tools=[broken]).run("x")
    assert result.output == "gave up"
    [tool_span] = by_name(exporter.get_finished_spans(), "execute_tool")
    [run] = by_name(exporter.get_finished_spans(), "invoke_agent")
    assert tool_span.status.status_code is StatusCode.ERROR
    assert attrs(tool_span)["error.type"] == "exception"
    assert run.status.status_code is StatusCode.UNSET
    assert attrs(run)["tiered_agent.tool.errors"] == 1


async def test_model_error_marks_the_chat_and_the_run_and_redacts_the_message(
    tmp_path: Path, provider: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    tracer_provider, exporter = provider

    async def fail(request: AgentRequest) -> Message:
        raise ModelError(f"provider is down after 4 attempts (key {SECRET})")

    result = await make_agent(tmp_path, FunctionModel(fail), tracer_provider).run("x")
    assert result.stop_reason.value == "error"
    spans = exporter.get_finished_spans()
    [chat] = by_name(spans, "chat ")
    [run] = by_name(spans, "invoke_agent")
    assert chat.status.status_code is StatusCode.ERROR and attrs(chat)["error.type"] == "ModelError"
    assert "provider is down" in (chat.status.description or "")
    assert run.status.status_code is StatusCode.ERROR and attrs(run)["error.type"] == "error"
    assert SECRET not in all_attribute_text(spans) and "[redacted]" in (chat.status.description or "")


async def test_cancelled_run_ends_its_span_and_the_unanswered_tool_call_with_errors(
    tmp_path: Path, provider: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    tracer_provider, exporter = provider

    @tool
    async def hang() -> str:
        """Never return."""
        await anyio.sleep_forever()
        return ""

    model = FunctionModel.scripted([calls(("c1", "hang", {}))])
    with anyio.move_on_after(0.3):
        await make_agent(tmp_path, model, tracer_provider, tools=[hang]).run("x")
    [run] = by_name(exporter.get_finished_spans(), "invoke_agent")
    [tool_span] = by_name(exporter.get_finished_spans(), "execute_tool")
    assert attrs(run)["error.type"] == "cancelled" and run.status.status_code is StatusCode.ERROR
    # the run records the unanswered call as interrupted (a tool_result), and its span says so
    assert attrs(tool_span)["error.type"] == "interrupted"
    assert attrs(tool_span)["gen_ai.tool.call.id"] == "c1"
    assert trace.get_current_span() is trace.INVALID_SPAN  # the run's context was detached


async def test_pipeline_decisions_summaries_retrievals_and_dedup_hits_reach_the_spans(
    tmp_path: Path, provider: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    tracer_provider, exporter = provider
    replies = [calls((f"c{i}", "read_big", {"name": str(i)})) for i in range(1, 4)]
    replies += [
        calls(("r1", "context_retrieve", {"tool_call_id": "c1"})),
        calls(("d1", "read_big", {"name": "3"})),  # identical to c3: served from the dedup cache
        text("done"),
    ]
    config = ContextConfig(name="t", window_iterations=1, summary_every=2, compact_at=None)
    result = await make_agent(tmp_path, FunctionModel.scripted(replies), tracer_provider, context=config).run(
        "x"
    )
    assert result.output == "done"
    events = read_trace(result.trace_path)
    spans = exporter.get_finished_spans()
    [run] = by_name(spans, "invoke_agent")
    chats = by_name(spans, "chat ")

    summaries = [e for e in events if isinstance(e, SummaryEvent)]
    summary_events = [e for e in run.events if e.name == "tiered_agent.summary"]
    assert summaries and len(summary_events) == len(summaries) == attrs(run)["tiered_agent.summaries"]
    assert [
        (
            e.attributes["tiered_agent.summary.first_iteration"],
            e.attributes["tiered_agent.summary.last_iteration"],
        )
        for e in summary_events
        if e.attributes
    ] == [(s.first_iteration, s.last_iteration) for s in summaries]
    [retrieval] = [e for e in events if isinstance(e, RetrievalEvent)]
    [retrieval_event] = [e for e in run.events if e.name == "tiered_agent.retrieval"]
    assert dict(retrieval_event.attributes or {}) == {
        "tiered_agent.iteration": retrieval.iteration,
        "tiered_agent.retrieval.filters": '{"tool_call_id":"c1"}',
        "tiered_agent.retrieval.matched": retrieval.matched,
        "tiered_agent.retrieval.page": retrieval.page,
        "tiered_agent.retrieval.pages": retrieval.pages,
    }
    assert attrs(run)["tiered_agent.retrievals"] == 1

    requests = [e for e in events if isinstance(e, ModelRequest)]
    for chat, request in zip(chats, requests, strict=True):
        chat_attrs, context = attrs(chat), request.context
        record = ContextRecord.from_dict(context)
        summary = context["summary_range"] or [None, None]
        assert chat_attrs.get("tiered_agent.context.summary.first_iteration") == summary[0]
        assert chat_attrs.get("tiered_agent.context.summary.last_iteration") == summary[1]
        assert chat_attrs["tiered_agent.context.windowed_out_iterations"] == tuple(context["windowed_out"])
        assert chat_attrs["tiered_agent.context.windowed_out"] == len(context["windowed_out"])
        assert chat_attrs["tiered_agent.context.masked_outputs"] == record.hidden_outputs
        assert chat_attrs["tiered_agent.context.masked_chars"] == record.hidden_chars
        assert chat_attrs["tiered_agent.dedup.hits"] == context["dedup_hits"]
    assert any(attrs(c)["tiered_agent.context.windowed_out"] > 0 for c in chats)

    [dedup_span] = [s for s in by_name(spans, "execute_tool") if attrs(s)["gen_ai.tool.call.id"] == "d1"]
    assert attrs(dedup_span)["tiered_agent.tool.dedup_of"] == "c3"
    assert dedup_span.start_time == dedup_span.end_time  # nothing ran
    assert attrs(run)["tiered_agent.dedup.hits"] == 1


async def test_a_resumed_run_keeps_the_conversation_id(
    tmp_path: Path, provider: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    tracer_provider, exporter = provider
    agent = make_agent(tmp_path, FunctionModel.scripted([text("first"), text("second")]), tracer_provider)
    first = await agent.run("x")
    await agent.resume(first.trace_path, follow_up="and more?")
    runs = by_name(exporter.get_finished_spans(), "invoke_agent")
    assert len(runs) == 2
    assert {attrs(r)["gen_ai.conversation.id"] for r in runs} == {first.trace_path.stem}
    assert len({attrs(r)["tiered_agent.run.id"] for r in runs}) == 2
    assert attrs(runs[1])["tiered_agent.run.source"] == f"resume of {first.trace_path.name}"


# ---------------------------------------------------------------- context propagation
async def test_spans_join_the_callers_trace_and_nest_spans_made_inside_tools_and_model_calls(
    tmp_path: Path, provider: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    tracer_provider, exporter = provider
    app = tracer_provider.get_tracer("app")

    @tool
    async def work() -> str:
        """Do work in a span of the application's own."""
        with app.start_as_current_span("inside tool"):
            return "worked"

    def reply(request: AgentRequest) -> Message:
        with app.start_as_current_span("inside model call"):
            return calls(("c1", "work", {})) if request.index == 0 else text("done")

    with app.start_as_current_span("request") as outer:
        await make_agent(tmp_path, FunctionModel(reply), tracer_provider, tools=[work]).run("x")
        assert trace.get_current_span() is outer
    spans = exporter.get_finished_spans()
    [run] = by_name(spans, "invoke_agent")
    chats = by_name(spans, "chat ")
    assert parent_id(run) == outer.get_span_context().span_id
    [tool_span] = by_name(spans, "execute_tool")
    assert parent_id(tool_span) == span_id(run)
    assert parent_id(by_name(spans, "inside tool")[0]) == span_id(tool_span)  # the tool's span was current
    assert [parent_id(s) for s in by_name(spans, "inside model call")] == [span_id(c) for c in chats]


async def test_spans_started_inside_concurrent_tools_nest_under_their_own_execute_tool_span(
    tmp_path: Path, provider: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    tracer_provider, exporter = provider
    app = tracer_provider.get_tracer("app")
    arrived: list[str] = []
    both = anyio.Event()

    @tool
    async def meet(label: str) -> str:
        """Open a span and wait inside it until both calls have opened theirs.

        Args:
            label: Which call.
        """
        with app.start_as_current_span(f"inside {label}"):
            arrived.append(label)
            if len(arrived) == 2:
                both.set()
            await both.wait()  # both tools are inside their own spans at once
            with app.start_as_current_span(f"nested {label}"):
                return label

    @tool
    def blocking(label: str) -> str:
        """A synchronous tool (it runs in a worker thread) opening a span.

        Args:
            label: Which call.
        """
        with app.start_as_current_span(f"inside {label}"):
            return label

    reply = calls(
        ("c1", "meet", {"label": "a"}), ("c2", "meet", {"label": "b"}), ("c3", "blocking", {"label": "t"})
    )
    model = FunctionModel.scripted([reply, text("ok")])
    result = await make_agent(tmp_path, model, tracer_provider, tools=[meet, blocking]).run("x")
    assert result.output == "ok"
    spans = exporter.get_finished_spans()
    [run] = by_name(spans, "invoke_agent")
    tools = {attrs(s)["gen_ai.tool.call.id"]: s for s in by_name(spans, "execute_tool")}
    assert sorted(tools) == ["c1", "c2", "c3"]
    assert {parent_id(s) for s in tools.values()} == {span_id(run)}
    for call_id, label in (("c1", "a"), ("c2", "b"), ("c3", "t")):
        [inside] = by_name(spans, f"inside {label}")
        assert parent_id(inside) == span_id(tools[call_id]), label
    for label in "ab":
        [inside], [nested] = by_name(spans, f"inside {label}"), by_name(spans, f"nested {label}")
        assert parent_id(nested) == span_id(inside)
    assert len({s.context.trace_id for s in spans if s.context}) == 1
    assert trace.get_current_span() is trace.INVALID_SPAN  # every tool's context was detached


async def test_an_mcp_clients_request_span_is_a_child_of_its_execute_tool_span(
    tmp_path: Path, provider: tuple[TracerProvider, InMemorySpanExporter], monkeypatch: pytest.MonkeyPatch
) -> None:
    import mcp.shared._otel

    tracer_provider, exporter = provider
    # the MCP SDK traces each request with its module's tracer (from the global provider): ours here
    monkeypatch.setattr(mcp.shared._otel, "_tracer", tracer_provider.get_tracer("mcp-python-sdk"))
    server = MCPStdioServer("test", sys.executable, (str(Path(__file__).parent / "mcp_test_server.py"),))
    model = FunctionModel.scripted(
        [calls(("c1", "test__add", {"a": 2, "b": 3}), ("c2", "test__pid", {})), text("done")]
    )
    agent = make_agent(tmp_path, model, tracer_provider, tools=[], mcp_servers=[server])
    assert (await agent.run("x")).output == "done"
    spans = exporter.get_finished_spans()
    tools = {attrs(s)["gen_ai.tool.call.id"]: s for s in by_name(spans, "execute_tool")}
    [add] = by_name(spans, "MCP send tools/call add")
    [pid] = by_name(spans, "MCP send tools/call pid")
    assert add.kind is SpanKind.CLIENT
    assert (parent_id(add), parent_id(pid)) == (span_id(tools["c1"]), span_id(tools["c2"]))


async def test_mcp_startup_spans_are_children_of_the_run_span(
    tmp_path: Path, provider: tuple[TracerProvider, InMemorySpanExporter], monkeypatch: pytest.MonkeyPatch
) -> None:
    import mcp.shared._otel

    tracer_provider, exporter = provider
    monkeypatch.setattr(mcp.shared._otel, "_tracer", tracer_provider.get_tracer("mcp-python-sdk"))
    server = MCPStdioServer("test", sys.executable, (str(Path(__file__).parent / "mcp_test_server.py"),))
    model = FunctionModel.scripted([calls(("c1", "test__add", {"a": 2, "b": 3})), text("done")])
    agent = make_agent(tmp_path, model, tracer_provider, tools=[], mcp_servers=[server])
    assert (await agent.run("x")).output == "done"
    spans = exporter.get_finished_spans()
    [run] = by_name(spans, "invoke_agent")
    startup = [s for s in by_name(spans, "MCP send") if "tools/call" not in s.name]  # discovery, tools/list
    assert len(startup) >= 2 and {parent_id(s) for s in startup} == {span_id(run)}
    assert len({s.context.trace_id for s in spans if s.context}) == 1  # no orphan root traces
    assert attrs(run)["gen_ai.request.model"] and attrs(run)["tiered_agent.run.id"]  # run_start's, set late
    assert run.start_time is not None and all(run.start_time <= (s.start_time or 0) for s in startup)


async def test_a_run_whose_mcp_server_cannot_start_ends_its_span_with_the_error(
    tmp_path: Path, provider: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    tracer_provider, exporter = provider
    broken = MCPStdioServer("broken", sys.executable, ("-c", "raise SystemExit('no key')"))
    agent = make_agent(tmp_path, FunctionModel.scripted([]), tracer_provider, tools=[], mcp_servers=[broken])
    with pytest.raises(MCPServerError):
        await agent.run("x")
    [run] = by_name(exporter.get_finished_spans(), "invoke_agent")
    assert run.status.status_code is StatusCode.ERROR and attrs(run)["error.type"] == "MCPServerError"
    assert "exited during startup" in (run.status.description or "")
    assert trace.get_current_span() is trace.INVALID_SPAN  # the run's context was detached


# ---------------------------------------------------------------- content opt-in
@pytest.mark.parametrize("how", ["env", "flag"])
async def test_content_capture_records_messages_and_tool_io_with_secrets_redacted(
    tmp_path: Path,
    provider: tuple[TracerProvider, InMemorySpanExporter],
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    tracer_provider, exporter = provider
    if how == "env":
        monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
        telemetry = Telemetry(tracer_provider=tracer_provider)
    else:
        telemetry = Telemetry(tracer_provider=tracer_provider, capture_content=True)
    model = FunctionModel.scripted([calls(("c1", "lookup", {"key": SECRET})), text("the answer")])
    agent = make_agent(tmp_path, model, tracer_provider, tools=[lookup], telemetry=telemetry)
    await agent.run(f"Use the key {SECRET} to look it up")
    spans = exporter.get_finished_spans()
    [run] = by_name(spans, "invoke_agent")
    chats = by_name(spans, "chat ")
    [tool_span] = by_name(spans, "execute_tool")

    assert SECRET not in all_attribute_text(spans)
    assert json.loads(attrs(run)["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Use the key [redacted] to look it up"}]}
    ]
    assert json.loads(attrs(run)["gen_ai.output.messages"])[0]["parts"] == [
        {"type": "text", "content": "the answer"}
    ]
    first_in = json.loads(attrs(chats[0])["gen_ai.input.messages"])
    assert [m["role"] for m in first_in] == ["system", "user"]
    first_out = json.loads(attrs(chats[0])["gen_ai.output.messages"])
    assert first_out == [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {"key": "[redacted]"}}
            ],
            "finish_reason": "stop",
        }
    ]
    second_in = json.loads(attrs(chats[1])["gen_ai.input.messages"])
    assert second_in[-1] == {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "c1", "response": "found: api_key=[redacted]"}],
    }
    assert json.loads(attrs(tool_span)["gen_ai.tool.call.arguments"]) == {"key": "[redacted]"}
    assert attrs(tool_span)["gen_ai.tool.call.result"] == "found: api_key=[redacted]"


async def test_content_stays_out_unless_opted_in(
    tmp_path: Path, provider: tuple[TracerProvider, InMemorySpanExporter], monkeypatch: pytest.MonkeyPatch
) -> None:
    tracer_provider, exporter = provider
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")  # the flag wins over the environment
    telemetry = Telemetry(tracer_provider=tracer_provider, capture_content=False)
    model = FunctionModel.scripted([calls(("c1", "lookup", {"key": "k1"})), text("the answer")])
    await make_agent(tmp_path, model, tracer_provider, tools=[lookup], telemetry=telemetry).run("Look k1 up")
    spans = exporter.get_finished_spans()
    assert len(spans) == 4
    assert not CONTENT_KEYS & {k for s in spans for k in attrs(s)}
    text_of_spans = all_attribute_text(spans)
    assert (
        "Look k1 up" not in text_of_spans
        and "found:" not in text_of_spans
        and "the answer" not in text_of_spans
    )


async def test_long_captured_text_is_cut_with_a_marker(
    tmp_path: Path, provider: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    tracer_provider, exporter = provider
    telemetry = Telemetry(tracer_provider=tracer_provider, capture_content=True, max_content_chars=100)
    model = FunctionModel.scripted([calls(("c1", "read_big", {"name": "x"})), text("done")])
    await make_agent(tmp_path, model, tracer_provider, telemetry=telemetry).run("x")
    [tool_span] = by_name(exporter.get_finished_spans(), "execute_tool")
    assert (
        attrs(tool_span)["gen_ai.tool.call.result"] == BIG[:100] + f"[... {len(BIG) - 100:,} chars omitted]"
    )


# ---------------------------------------------------------------- switching on
def test_telemetry_is_off_unless_configured_or_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_observer(None) is None and run_observer(False) is None
    assert run_observer(True) is not None
    assert not endpoint_configured()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4318/v1/traces")
    assert endpoint_configured()
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert not endpoint_configured()
    assert cli_telemetry(False) is None


async def test_an_applications_global_provider_is_used_by_default(
    tmp_path: Path, provider: tuple[TracerProvider, InMemorySpanExporter], monkeypatch: pytest.MonkeyPatch
) -> None:
    tracer_provider, exporter = provider
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", tracer_provider)  # as trace.set_tracer_provider would
    model = FunctionModel.scripted([text("done")])
    await make_agent(tmp_path, model, tracer_provider, telemetry=None).run("x")
    assert [s.name for s in exporter.get_finished_spans()] == ["chat gpt-4o", "invoke_agent tiered-agent"]
    await make_agent(tmp_path, FunctionModel.scripted([text("done")]), tracer_provider, telemetry=False).run(
        "x"
    )
    assert len(exporter.get_finished_spans()) == 2


def test_exporter_settings_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin")
    with pytest.raises(ConfigurationError, match="OTEL_TRACES_EXPORTER=zipkin is not supported"):
        build_provider()
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    with pytest.raises(ConfigurationError, match="http/protobuf"):
        build_provider()
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    built = build_provider()
    assert built.resource.attributes["service.name"] == "tiered-agent"
    built.shutdown()
    monkeypatch.setenv("OTEL_SERVICE_NAME", "my-service")
    built = build_provider()
    assert built.resource.attributes["service.name"] == "my-service"
    built.shutdown()


def test_provider_names_follow_the_conventions() -> None:
    assert split_model("openai/gpt-4o-mini") == ("openai", "gpt-4o-mini")
    assert split_model("anthropic/claude-sonnet-4-5") == ("anthropic", "claude-sonnet-4-5")
    assert split_model("gemini/gemini-2.5-pro") == ("gcp.gemini", "gemini-2.5-pro")
    assert split_model("bedrock/anthropic.claude-v2") == ("aws.bedrock", "anthropic.claude-v2")
    assert split_model("hosted_vllm/qwen") == ("hosted_vllm", "qwen")
    assert split_model("gpt-4o") == ("openai", "gpt-4o")
    assert split_model("mystery") == ("_OTHER", "mystery")


def test_new_event_fields_are_optional_and_the_prompt_stays_out_of_the_trace() -> None:
    request = ModelRequest(1, 2, 10, 10, 12, prompt=(Message("user", "hi"),))
    assert "prompt" not in event_to_dict(request)
    assert event_from_dict(event_to_dict(request)) == request  # the prompt is for observers only
    old_tool = {"v": 1, "type": "tool_result", "iteration": 1, "tool_call_id": "c1", "name": "read_file"}
    old_start = {"v": 1, "type": "run_start", "run_id": "r", "model": "m", "task": "t"}
    assert event_from_dict(old_tool) == ToolResult(1, "c1", "read_file", started_at=None)
    assert event_from_dict(old_start) == RunStarted("r", "m", "t", conversation_id=None)


# ---------------------------------------------------------------- zero cost when off
ZERO_IMPORT = """
import sys, tempfile, anyio
from tiered_agent import Agent
from tiered_agent.testing import FunctionModel, text
agent = Agent(FunctionModel.scripted([text("ok")]), trace_dir=tempfile.mkdtemp())
assert anyio.run(agent.run, "x").output == "ok"
print(sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry"))
"""


def _python(code: str, env_extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | env_extra
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_a_run_without_telemetry_never_imports_opentelemetry() -> None:
    proc = _python(ZERO_IMPORT, {})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
    # the same run with an endpoint configured does load it (no exporter, so nothing is sent)
    no_exporter = {"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}
    configured = _python(ZERO_IMPORT, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", **no_exporter})
    assert configured.returncode == 0, configured.stderr
    assert "'opentelemetry.trace'" in configured.stdout and "'opentelemetry.sdk.trace'" in configured.stdout
    assert "'opentelemetry.sdk.metrics'" not in configured.stdout  # metrics switched off: no SDK for them


def test_cli_otel_without_the_extra_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "for name in ('opentelemetry.sdk', 'opentelemetry.exporter'):\n"
        "    sys.modules[name] = None  # as if the otel extra were not installed\n"
        "from tiered_agent.cli import main\n"
        "sys.argv = ['tiered-agent', 'run', 'x', '--model', 'openai/gpt-4o-mini', '--otel']\n"
        "main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert (
        proc.stderr.strip()
        == 'error: OpenTelemetry export needs the otel extra: pip install "tiered-agent[otel]"'
    )


def test_aging_and_dedup_pointers_reach_the_chat_span_attributes() -> None:
    context = {"dedup_pointers": 2, "dedup_pointer_chars": 1_500, "aging": {"through": 40, "condensed": 30}}
    attributes = request_attributes(ModelRequest(50, 60, 9_000, 9_100, 30_000, context))
    assert attributes["tiered_agent.dedup.pointers"] == 2
    assert attributes["tiered_agent.dedup.pointer_chars"] == 1_500
    assert attributes["tiered_agent.context.aged_through"] == 40
    assert attributes["tiered_agent.context.condensed_through"] == 30
    assert attributes["tiered_agent.context.aging_epoch"] is False
    epoch = {"aging": {"through": 45, "condensed": 30, "epoch": {"at": 47, "through": 45, "condensed": 30}}}
    assert request_attributes(ModelRequest(47, 60, 9_000, 9_100, 30_000, epoch))[
        "tiered_agent.context.aging_epoch"
    ]
    assert "tiered_agent.context.aged_through" not in request_attributes(ModelRequest(1, 2, 3, 3, 3, {}))
