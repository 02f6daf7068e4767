"""The JSONL trace: every event round-trips, secrets never land, damage is reported precisely."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tiered_agent import Message, ToolCall, TraceFormatError, Usage
from tiered_agent._trace import (
    SCHEMA_VERSION,
    ErrorEvent,
    MessageEvent,
    ModelRequest,
    ModelResponse,
    RetrievalEvent,
    RunEnded,
    RunStarted,
    SummaryEvent,
    ToolResult,
    TraceWriter,
    load_history,
    read_trace,
    redact,
)

EVENTS = [
    RunStarted("r1", "openai/gpt-4o", "task", {"context": {"name": "tiered"}}, [{"type": "function"}], 1.5),
    MessageEvent(Message("system", "sys")),
    MessageEvent(Message("user", "task")),
    MessageEvent(Message("assistant", None, (ToolCall("c1", "read_file", '{"path": "a"}'),), iteration=1)),
    MessageEvent(Message("tool", "x" * 10_000, tool_call_id="c1", name="read_file", iteration=1)),
    ModelRequest(1, 3, 120, 130, 120, {"truncated_outputs": 0}),
    ModelResponse(1, Usage(100, 20, 64, 1, 0.001), "gpt-4o", "tool_calls", 0.5, 2),
    ToolResult(1, "c1", "read_file", False, 0.01, 10_000, None, None),
    ErrorEvent(2, "empty_reply", "nothing"),
    SummaryEvent(1, 5, "summary", None, 0, 0, 10),
    RetrievalEvent(3, {"tool_call_id": "c1"}, 1, 1, 2),
    RunEnded("answered", "done", 3, Usage(300, 60, 64, 3, None), 400, 900, None),
]


def test_every_event_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TraceWriter(path) as writer:
        for event in EVENTS:
            writer.write(event)
    assert read_trace(path) == EVENTS
    lines = path.read_bytes().splitlines()
    assert len(lines) == len(EVENTS)
    assert all(orjson.loads(line)["v"] == SCHEMA_VERSION for line in lines)
    history = load_history(path)
    assert [m.role for m in history] == ["system", "user", "assistant", "tool"]
    assert history[3].content == "x" * 10_000


def test_writer_appends_only_at_flush(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = TraceWriter(path)
    assert not path.exists()  # no side effect before open()
    writer.open()
    writer.write(EVENTS[1])
    assert path.read_bytes() == b""
    writer.flush()
    assert len(path.read_bytes().splitlines()) == 1
    writer.close()


def test_api_keys_and_authorization_headers_are_redacted(tmp_path: Path) -> None:
    secret = "sk-abcdefghijklmnopqrstuvwx"
    config = {
        "api_key": secret,
        "headers": {"Authorization": f"Bearer {secret}", "X-Other": "fine"},
        "nested": [{"openai_api_key": "value"}],
    }
    path = tmp_path / "t.jsonl"
    with TraceWriter(path) as writer:
        writer.write(RunStarted("r", "m", f"use key {secret} please", config))
    text = path.read_text()
    assert secret not in text and "Bearer sk" not in text
    started = read_trace(path)[0]
    assert isinstance(started, RunStarted)
    assert started.config["headers"] == {"Authorization": "[redacted]", "X-Other": "fine"}
    assert started.task == "use key [redacted] please"
    assert redact({"max_tokens": 5, "prompt_tokens": 3}) == {"max_tokens": 5, "prompt_tokens": 3}


def test_torn_last_line_is_skipped_but_a_corrupt_middle_line_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TraceWriter(path) as writer:
        writer.write(EVENTS[1])
        writer.write(EVENTS[2])
    with path.open("ab") as f:
        f.write(b'{"v": 1, "type": "mess')  # a crash mid-write
    assert len(read_trace(path)) == 2
    lines = path.read_bytes().splitlines()
    path.write_bytes(b"\n".join([lines[0], b"not json", lines[1]]) + b"\n")
    with pytest.raises(TraceFormatError, match=r"t\.jsonl:2:"):
        read_trace(path)


def test_unknown_schema_version_and_event_type_are_errors(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"v": 99, "type": "message"}\n{"v": 1, "type": "run_end"}\n')
    with pytest.raises(TraceFormatError, match="schema version 99"):
        read_trace(path)
    path.write_bytes(b'{"v": 1, "type": "mystery"}\n{"v": 1, "type": "run_end"}\n')
    with pytest.raises(TraceFormatError, match="unknown event type 'mystery'"):
        read_trace(path)
