"""End to end: `tiered-agent run --otel` (subprocess, real litellm against the loopback fake OpenAI
server) exports its spans and metrics over OTLP/HTTP to a receiver on 127.0.0.1 that decodes the
protobuf."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fake_openai_server import FakeOpenAIServer, HTTPRequest
from fakes import make_usage, text_reply, tool_reply
from otlp_receiver import OTLPReceiver

SECRET = "sk-" + "Zr4" * 8
INTERNAL, CLIENT = 1, 3  # OTLP Span.SpanKind
STATUS_UNSET = 0


def two_step_model(request: HTTPRequest) -> object:
    """Two concurrent reads, then the answer."""
    n = sum(1 for m in request.body["messages"] if m["role"] == "assistant")
    if n == 0:
        calls = [("c1", "list_dir", {"path": "."}), ("c2", "read_file", {"path": "notes.txt"})]
        return tool_reply(calls, make_usage(prompt=900, completion=30, cached=512))
    return text_reply(
        "The retry delay doubles each attempt.", make_usage(prompt=1000, completion=12, cached=800)
    )


def test_cli_run_exports_genai_spans_to_an_otlp_http_receiver(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("the retry delay doubles each attempt\n")
    traces = tmp_path / "traces"
    with FakeOpenAIServer() as server, OTLPReceiver() as receiver:
        server.respond = two_step_model
        env = {
            k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("OTEL_")
        }
        env |= {
            "OPENAI_API_KEY": "sk-test-not-real",
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
            "NO_PROXY": "127.0.0.1,localhost",
            "COLUMNS": "200",
        }
        args = ["run", f"Explain the retry delay; my token is {SECRET}", "--model", "openai/gpt-4o-mini"]
        args += ["--api-base", server.base_url, "--workspace", str(workspace), "--trace-dir", str(traces)]
        proc = subprocess.run(
            [sys.executable, "-m", "tiered_agent", *args, "--otel"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    spans = sorted(receiver.spans, key=lambda s: s.name)
    assert [s.name for s in spans] == [
        "chat gpt-4o-mini",
        "chat gpt-4o-mini",
        "execute_tool list_dir",
        "execute_tool read_file",
        "invoke_agent tiered-agent",
    ]
    run = spans[-1]
    chats = sorted(spans[:2], key=lambda s: s.start_ns)
    tools = spans[2:4]
    assert run.parent_span_id == "" and run.kind == INTERNAL
    assert {s.parent_span_id for s in (*chats, *tools)} == {run.span_id}
    assert {s.trace_id for s in spans} == {run.trace_id}
    assert [s.kind for s in chats] == [CLIENT, CLIENT] and [s.kind for s in tools] == [INTERNAL, INTERNAL]
    assert all(s.status_code == STATUS_UNSET for s in spans)
    assert run.resource["service.name"] == "tiered-agent" and run.scope == "tiered_agent"

    usage = [
        (c.attributes["gen_ai.usage.input_tokens"], c.attributes["gen_ai.usage.output_tokens"]) for c in chats
    ]
    assert usage == [(900, 30), (1000, 12)]
    assert [c.attributes["gen_ai.usage.cache_read.input_tokens"] for c in chats] == [512, 800]
    assert {c.attributes["gen_ai.provider.name"] for c in chats} == {"openai"}
    assert {c.attributes["gen_ai.response.model"] for c in chats} == {"gpt-4o-mini"}
    assert [c.attributes["gen_ai.response.finish_reasons"] for c in chats] == [("tool_calls",), ("stop",)]
    assert (chats[0].end_ns <= min(t.start_ns for t in tools)) and (
        max(t.end_ns for t in tools) <= chats[1].start_ns
    )
    assert {t.attributes["gen_ai.tool.call.id"] for t in tools} == {"c1", "c2"}
    assert tools[1].attributes["gen_ai.tool.call.result"].startswith("notes.txt (lines 1-1 of 1)")

    trace_file = next(traces.glob("*.jsonl"))
    assert run.attributes["gen_ai.conversation.id"] == trace_file.stem
    assert run.attributes["gen_ai.usage.input_tokens"] == 1900
    assert run.attributes["gen_ai.usage.cache_read.input_tokens"] == 1312
    assert run.attributes["tiered_agent.run.stop_reason"] == "answered"
    assert run.attributes["tiered_agent.tool.calls"] == 2
    # secrets never reach a prompt either (the runtime redacts every message it appends)
    assert SECRET not in str(server.chat_requests[0].body)
    assert "my token is [redacted]" in str(server.chat_requests[0].body)
    assert "my token is [redacted]" in run.attributes["gen_ai.input.messages"]
    assert all(SECRET.encode() not in body for body in receiver.bodies)
    check_metrics(receiver, run.attributes)


TOKEN_BOUNDS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)


def check_metrics(receiver: OTLPReceiver, run: dict[str, object]) -> None:
    """The token-usage histogram (and the rest) arrived over /v1/metrics with the run's numbers."""
    metrics = receiver.latest()
    assert {"gen_ai.client.token.usage", "gen_ai.client.operation.duration"} <= set(metrics)
    usage = metrics["gen_ai.client.token.usage"]
    assert (usage.kind, usage.unit, usage.scope) == ("histogram", "{token}", "tiered_agent")
    assert usage.resource["service.name"] == "tiered-agent"
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini",
    }
    by_type = {p.attributes["gen_ai.token.type"]: p for p in usage.points}
    assert sorted(by_type) == ["input", "output"]
    assert all(p.attributes == {**chat, "gen_ai.token.type": t} for t, p in by_type.items())
    assert (by_type["input"].count, by_type["input"].sum) == (2, 1900)  # 900 + 1000
    assert (by_type["output"].count, by_type["output"].sum) == (2, 42)  # 30 + 12
    assert by_type["input"].sum == run["gen_ai.usage.input_tokens"]
    assert by_type["input"].explicit_bounds == TOKEN_BOUNDS
    assert by_type["input"].bucket_counts == (0, 0, 0, 0, 0, 2, *[0] * 9)
    [duration] = metrics["gen_ai.client.operation.duration"].points
    assert (metrics["gen_ai.client.operation.duration"].unit, duration.count) == ("s", 2)
    assert duration.attributes == chat
    [sent] = metrics["tiered_agent.prompt.tokens"].points
    [full] = metrics["tiered_agent.prompt.full_history_tokens"].points
    assert metrics["tiered_agent.prompt.tokens"].monotonic
    assert (sent.value, full.value) == (
        run["tiered_agent.prompt.tokens"],
        run["tiered_agent.prompt.full_history_tokens"],
    )
