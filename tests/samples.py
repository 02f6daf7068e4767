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


def read_messages(
    run_id: str, steps: int, *, lines: int = 60, system_repeat: int = 40
) -> tuple[Message, ...]:
    """A synthetic run's messages: a long system prompt, the task, then ``steps`` iterations that each read
    a new module of ``lines`` distinct lines (``value_k line i = ...``) and name the previous one."""
    out = [Message("system", "You are a coding agent. " * system_repeat), Message("user", f"Fix {run_id}.")]
    for k in range(1, steps + 1):
        call = ToolCall(f"c{k}", "read_file", f'{{"path": "src/mod_{k}.py"}}')
        out.append(Message("assistant", f"Check value_{k - 1}", (call,), iteration=k))
        body = "\n".join(f"value_{k} line {i} = {k * 100 + i}" for i in range(lines))
        out.append(Message("tool", body, tool_call_id=f"c{k}", name="read_file", iteration=k))
    return tuple(out)
