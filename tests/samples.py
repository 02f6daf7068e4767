"""Recorded runs built by hand, shared by the benchmark tests."""

from __future__ import annotations

from tiered_agent._messages import Message, ToolCall
from tiered_agent.bench._recorded import RecordedRun


def one_call(call_id: str, name: str, args: str) -> tuple[ToolCall, ...]:
    return (ToolCall(call_id, name, args),)


HAND_RUN = RecordedRun(
    run_id="hand",
    source="test",
    format="tiered-agent",
    messages=(
        Message("system", "You are an agent. Use the tools."),
        Message("user", "Fix the bug in src/app.py"),
        Message(
            "assistant", None, tool_calls=one_call("c1", "read_file", '{"path": "src/app.py"}'), iteration=1
        ),
        Message(
            "tool",
            "def compute_total(x):\n    return helper_fn(x) + 4096\n",
            tool_call_id="c1",
            name="read_file",
            iteration=1,
        ),
        Message(
            "assistant",
            "I will check helper_fn",
            tool_calls=one_call("c2", "grep", '{"pattern": "helper_fn"}'),
            iteration=2,
        ),
        Message("tool", "src/utils.py:12: def helper_fn(y):", tool_call_id="c2", name="grep", iteration=2),
        Message(
            "assistant",
            None,
            tool_calls=one_call(
                "c3", "edit", '{"path": "src/utils.py", "text": "compute_total 4096 newThing"}'
            ),
            iteration=3,
        ),
        Message("tool", "ok", tool_call_id="c3", name="edit", iteration=3),
    ),
    read_only_tools=frozenset({"read_file", "grep"}),
)
