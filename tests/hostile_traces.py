"""A small trace holding every event type, for the fault tests and the trace fuzzer.

Six iterations of a run that read files (a call and its result each), with the prompt records
(an aging epoch), usage, tool results, a summary, a retrieval, an error and the run's end; written
by the runtime's own :class:`TraceWriter`, so it is exactly what a run leaves behind.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from tiered_agent import Workspace, workspace_tools
from tiered_agent._messages import Message, ToolCall, Usage
from tiered_agent._trace import (
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
)
from tiered_agent.context._presets import preset

__all__ = [
    "ITERATIONS",
    "hang_guard",
    "provider_problems",
    "sample_lines",
    "write_lines",
    "write_sample_trace",
]

ITERATIONS = 6


def _events(workspace: Path) -> list[Any]:
    tools = [t.schema() for t in workspace_tools(Workspace(workspace))]
    config = {
        "context": preset("tiered").to_dict(),
        "context_window": 128_000,
        "limits": {"max_iterations": 30, "token_budget": None, "max_parallel_tools": 8},
        "read_only_tools": ["list_dir", "read_file", "search_text"],
        "api_base": None,
    }
    events: list[Any] = [
        RunStarted("run1", "openai/gpt-4o-mini", "Explain the retry delay", config, tools, 1.0e9),
        MessageEvent(Message("system", "You are an agent.")),
        MessageEvent(Message("user", "Explain the retry delay")),
    ]
    for k in range(1, ITERATIONS + 1):
        epoch = {"at": k - 1, "through": max(k - 3, 0), "condensed": 0}
        context = {"aging": {"epoch": epoch}} if k >= 4 else {}
        events.append(ModelRequest(k, 2 * k + 1, 100 * k, 110 * k, 120 * k, context))
        call = ToolCall(f"c{k}", "read_file", orjson.dumps({"path": "notes.txt", "start_line": k}).decode())
        events.append(MessageEvent(Message("assistant", f"Reading part {k}.", (call,), iteration=k)))
        events.append(ModelResponse(k, Usage(100 * k, 10, 50, 1, 0.001), "gpt-4o-mini", "tool_calls", 0.5))
        events.append(
            MessageEvent(
                Message("tool", f"notes line {k}", tool_call_id=f"c{k}", name="read_file", iteration=k)
            )
        )
        events.append(ToolResult(k, f"c{k}", "read_file", duration_s=0.01, output_chars=12))
    events += [
        SummaryEvent(1, 3, "Read notes lines 1-3.", None, 0, 0, 4),
        RetrievalEvent(5, {"tool_call_id": "c1"}, 1, 1, 1),
        ErrorEvent(5, "empty_reply", "the model replied with neither text nor tool calls"),
        RunEnded("cancelled", None, ITERATIONS, Usage(2100, 60, 300, 6, 0.006), 2100, 2520, "cancelled"),
    ]
    return events


def write_sample_trace(path: Path, workspace: Path) -> Path:
    """Write the sample trace at ``path`` (its tools are those of ``workspace``)."""
    with TraceWriter(path) as writer:
        for event in _events(workspace):
            writer.write(event)
    return path


def sample_lines(path: Path) -> list[dict[str, Any]]:
    """The trace's lines as dicts (to edit one and write them back)."""
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def write_lines(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def provider_problems(messages: list[dict[str, Any]]) -> list[str]:
    """What an OpenAI-compatible provider rejects in a request's messages (empty: it accepts them):
    each assistant message's tool calls must be answered, right after it, once each; a tool message
    must answer a call of that assistant message."""
    problems = []
    pending: list[str] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id in pending:
                pending.remove(call_id)
            else:
                problems.append(f"message {index}: tool result {call_id!r} answers no pending call")
            continue
        if pending:
            problems.append(f"message {index}: calls {pending} were not answered")
            pending = []
        if role == "assistant":
            pending = [c["id"] for c in message.get("tool_calls") or ()]
    if pending:
        problems.append(f"the last calls {pending} were not answered")
    return problems


@contextmanager
def hang_guard(seconds: float, what: str = "the call") -> Iterator[None]:
    """Raise TimeoutError in the main thread if the block runs longer than ``seconds``: a blocking
    ``open()`` of a FIFO or a pure-Python loop is interrupted (SIGALRM), so a hang fails the test."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"{what} did not return within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
