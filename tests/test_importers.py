"""Recorded-run importers: each format on small hand-made files, errors, round trip, bundle, shared set."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tiered_agent._errors import ConfigurationError, TraceFormatError
from tiered_agent._messages import Message, ToolCall, Usage
from tiered_agent._trace import (
    MessageEvent,
    ModelRequest,
    ModelResponse,
    RunEnded,
    RunStarted,
    ToolResult,
    TraceWriter,
)
from tiered_agent.bench import _bundle
from tiered_agent.bench import _importers as importers
from tiered_agent.bench._bundle import (
    BUNDLE,
    BUNDLED_FORMATS,
    build_bundle,
    bundled_trace_paths,
    bundled_traces_dir,
)
from tiered_agent.bench._import_common import infer_schema, is_read_only, merge_schema
from tiered_agent.bench._importers import load_runs, write_run_trace
from tiered_agent.bench._recorded import RecordedRun

SHARED = Path(__file__).parents[1].parent / "shared" / "trajectories"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/trajectories is absent")


def _load(paths: list[Path]) -> list[RecordedRun]:
    """The runs in ``paths``; any unreadable input raises (``strict``)."""
    return list(load_runs(paths, strict=True).runs)


def _write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _cmd(command: str) -> str:
    return json.dumps({"command": command}, separators=(",", ":"))


# ---------------------------------------------------------------- mini-swe-agent
PATCH = "diff --git a/x.py b/x.py\n+fixed\n"


def _usage_extra(prompt: int, completion: int, cached: int, provider: str) -> dict[str, Any]:
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cost": 0.5,
        "prompt_tokens_details": {"cached_tokens": cached},
    }
    return {"response": {"model": "google/gemini-3-pro-preview", "provider": provider, "usage": usage}}


def mini_doc() -> dict[str, Any]:
    return {
        "trajectory_format": "mini-swe-agent-1",
        "instance_id": "demo__demo-1",
        "info": {
            "exit_status": "Submitted",
            "submission": PATCH,
            "mini_version": "1.15.0",
            "model_stats": {"instance_cost": 1.5, "api_calls": 3},
            "config": {"model": {"model_name": "google/gemini-3-pro-preview"}},
        },
        "messages": [
            {"role": "system", "content": "You are a shell agent."},
            {"role": "user", "content": "Fix the bug."},
            {
                "role": "assistant",
                "content": "THOUGHT: look around.\n\n```bash\nls -la\n```",
                "extra": _usage_extra(100, 10, 0, "Google"),
            },
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\nx.py\n</output>"},
            {
                "role": "assistant",
                "content": "THOUGHT: two things.\n```bash\ncat x.py\n```\n```bash\nls\n```",
                "extra": {"response": {}},
            },
            {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks."},
            {
                "role": "assistant",
                "content": "THOUGHT: submit.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```",
                "extra": _usage_extra(300, 30, 200, "Google AI Studio"),
            },
            {"role": "user", "content": PATCH},
        ],
    }


def test_mini_swe_agent_messages_iterations_calls_and_usage(tmp_path: Path) -> None:
    path = _write(tmp_path / "demo__demo-1.traj.json", mini_doc())
    [run] = _load([path])
    assert run.run_id == "mini-swe-agent/demo__demo-1"
    assert (run.format, run.source, run.model) == ("mini-swe-agent", str(path), "google/gemini-3-pro-preview")
    assert run.messages == (
        Message("system", "You are a shell agent."),
        Message("user", "Fix the bug."),
        Message(
            "assistant", "THOUGHT: look around.", tool_calls=(ToolCall("call_1", "bash", _cmd("ls -la")),),
            iteration=1,
        ),
        Message(
            "tool", "<returncode>0</returncode>\n<output>\nx.py\n</output>", tool_call_id="call_1",
            name="bash", iteration=1,
        ),
        Message("assistant", "THOUGHT: two things.\n```bash\ncat x.py\n```\n```bash\nls\n```", iteration=2),
        Message("user", "Please always provide EXACTLY ONE action in triple backticks.", iteration=2),
        Message(
            "assistant", "THOUGHT: submit.",
            tool_calls=(ToolCall("call_3", "bash", _cmd("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")),),
            iteration=3,
        ),
    )  # fmt: skip
    assert run.steps == 3
    assert run.usage == (
        Usage(prompt_tokens=100, completion_tokens=10, cached_tokens=0, requests=1, cost=0.5),
        None,
        Usage(prompt_tokens=300, completion_tokens=30, cached_tokens=200, requests=1, cost=0.5),
    )
    assert run.routes == ("Google", None, "Google AI Studio")  # the endpoint OpenRouter named
    assert [run.route(step) for step in (0, 1, 3, 4)] == [None, "Google", "Google AI Studio", None]
    assert [t["function"]["name"] for t in run.tools] == ["bash"]
    assert run.tools[0]["function"]["parameters"]["required"] == ["command"]
    assert run.read_only_tools == frozenset()
    assert run.task == "Fix the bug."
    assert run.metadata == {
        "instance_id": "demo__demo-1",
        "exit_status": "Submitted",
        "mini_version": "1.15.0",
        "api_calls": 3,
        "instance_cost": 1.5,
    }


def test_mini_swe_agent_resolved_from_results_summary(tmp_path: Path) -> None:
    path = _write(tmp_path / "demo__demo-1.traj.json", mini_doc())
    summary = {"instances": [{"instance_id": "demo__demo-1", "resolved": False}]}
    _write(tmp_path / "_results_summary.json", summary)
    [run] = _load([tmp_path])  # the summary itself is skipped, not read as a run
    assert run.metadata["resolved"] is False
    assert run.source == str(path)


def test_mini_swe_agent_keeps_a_last_user_message_that_is_not_the_patch(tmp_path: Path) -> None:
    doc = mini_doc()
    doc["messages"][-1] = {"role": "user", "content": "<returncode>0</returncode>\n<output>\n</output>"}
    [run] = _load([_write(tmp_path / "a.traj.json", doc)])
    assert run.messages[-1] == Message(
        "tool",
        "<returncode>0</returncode>\n<output>\n</output>",
        tool_call_id="call_3",
        name="bash",
        iteration=3,
    )


# ---------------------------------------------------------------- SWE-agent
def swe_text_doc() -> dict[str, Any]:
    system = (
        "SETTING: special interface.\n\nCOMMANDS:\nopen:\n  docstring: opens a file\n"
        "  signature: open <path>\n"
        "  arguments:\n    - path (string) [required]: the file\n\nsubmit:\n  docstring: submits\n"
        "  signature: submit\n\nRESPONSE FORMAT: ..."
    )
    steps = [("Open it.\n", "open x.py\n"), ("List.\n", "ls -la\n"), ("Done.\n", "submit\n")]
    history: list[dict[str, Any]] = [
        {"role": "system", "content": system, "agent": "primary"},
        {"role": "user", "content": "Fix the issue.", "agent": "primary"},
    ]
    for n, (thought, action) in enumerate(steps):
        history.append(
            {
                "role": "assistant",
                "content": f"{thought}```\n{action}```",
                "thought": thought,
                "action": action,
            }
        )
        if n < len(steps) - 1:
            history.append({"role": "user", "content": f"output {n + 1}\n(Open file: n/a)\nbash-$"})
    trajectory = [
        {"action": a, "observation": f"output {n + 1}", "thought": t, "response": "", "state": "{}"}
        for n, (t, a) in enumerate(steps)
    ]
    return {
        "environment": "swe_main",
        "trajectory": trajectory,
        "history": history,
        "info": {"exit_status": "submitted"},
    }


def test_swe_agent_text_actions_become_named_tool_calls(tmp_path: Path) -> None:
    [run] = _load([_write(tmp_path / "demo.traj", swe_text_doc())])
    assert (run.run_id, run.format, run.model) == ("swe-agent/demo", "swe-agent", None)
    assert run.messages[2:] == (
        Message(
            "assistant", "Open it.", tool_calls=(ToolCall("call_1", "open", _cmd("open x.py")),), iteration=1
        ),
        Message(
            "tool", "output 1\n(Open file: n/a)\nbash-$", tool_call_id="call_1", name="open", iteration=1
        ),
        Message("assistant", "List.", tool_calls=(ToolCall("call_2", "bash", _cmd("ls -la")),), iteration=2),
        Message(
            "tool", "output 2\n(Open file: n/a)\nbash-$", tool_call_id="call_2", name="bash", iteration=2
        ),
        Message(
            "assistant", "Done.", tool_calls=(ToolCall("call_3", "submit", _cmd("submit")),), iteration=3
        ),
    )
    assert [m.role for m in run.messages[:2]] == ["system", "user"]
    assert [t["function"]["name"] for t in run.tools] == ["open", "bash", "submit"]
    assert run.tools[0]["function"]["parameters"]["properties"] == {"command": {"type": "string"}}
    assert run.read_only_tools == frozenset({"open"})
    assert run.usage == (None, None, None)
    assert run.metadata == {"function_calling": False, "environment": "swe_main", "exit_status": "submitted"}


COMMAND_DOCS = (
    "bash:\n  docstring: runs the given command directly in bash\n  signature: <command>\n  arguments:\n"
    "    - command (string) [required]: a command to run\n\n"
    "goto:\n  docstring: moves the window\n  signature: goto <line_number>\n  arguments:\n"
    "    - line_number (integer) [required]: the line\n    - quiet (boolean) [optional]: no output\n\n"
    "submit:\n  docstring: submits the current file\n  signature: submit\n"
)


def swe_fc_doc() -> dict[str, Any]:
    def call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}

    history: list[dict[str, Any]] = [
        {"role": "system", "content": "SETTING: tools.", "message_type": "system_prompt"},
        {"role": "user", "content": "Fix it.", "message_type": "observation"},
        {"role": "assistant", "content": "Look.", "thought": "Look.", "action": "goto 5",
         "tool_calls": [call("call_a", "goto", {"line_number": 5})]},
        {"role": "tool", "content": "line 5", "tool_call_ids": ["call_a"]},
        {"role": "assistant", "content": "Again.", "thought": "Again.", "action": "ls",
         "tool_calls": [call("call_a", "bash", {"command": "ls"})]},
        {"role": "tool", "content": "x.py", "tool_call_ids": ["call_a"]},
        {"role": "assistant", "content": "Done.", "thought": "Done.", "action": "submit",
         "tool_calls": [call("call_submit", "submit", {})]},
    ]  # fmt: skip
    trajectory = [{"action": m["action"], "observation": "", "thought": m["thought"]} for m in history[2::2]]
    replay = {"agent": {"model": {"name": "gpt-4o"}, "tools": {"command_docs": COMMAND_DOCS}}}
    return {"environment": "main", "trajectory": trajectory, "history": history, "replay_config": replay}


def test_swe_agent_function_calling_keeps_calls_and_documented_schemas(tmp_path: Path) -> None:
    [run] = _load([_write(tmp_path / "fc.traj", swe_fc_doc())])
    assert run.model == "gpt-4o"
    goto = ToolCall("call_a", "goto", json.dumps({"line_number": 5}))
    bash = ToolCall("call_a_2", "bash", json.dumps({"command": "ls"}))  # the reused id made unique
    assert run.messages[2:] == (
        Message("assistant", "Look.", tool_calls=(goto,), iteration=1),
        Message("tool", "line 5", tool_call_id="call_a", name="goto", iteration=1),
        Message("assistant", "Again.", tool_calls=(bash,), iteration=2),
        Message("tool", "x.py", tool_call_id="call_a_2", name="bash", iteration=2),
        Message("assistant", "Done.", tool_calls=(ToolCall("call_submit", "submit", "{}"),), iteration=3),
    )
    tools = {t["function"]["name"]: t["function"] for t in run.tools}
    assert list(tools) == ["bash", "goto", "submit"]
    assert tools["goto"]["description"] == "moves the window"
    assert tools["goto"]["parameters"] == {
        "type": "object",
        "properties": {
            "line_number": {"type": "integer", "description": "the line"},
            "quiet": {"type": "boolean", "description": "no output"},
        },
        "required": ["line_number"],
    }
    assert run.read_only_tools == frozenset({"goto"})
    assert run.metadata["function_calling"] is True


# ---------------------------------------------------------------- tau-bench
def tau_doc() -> list[dict[str, Any]]:
    def call(call_id: str | None, name: str, args: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        if call_id:
            out["id"] = call_id
        return out

    first = [
        {"role": "system", "content": "Airline policy."},
        {"role": "user", "content": "Hi, change my flight."},
        {"role": "assistant", "content": "Your user id?"},
        {"role": "user", "content": "mia_1"},
        {"role": "assistant", "content": None,
         "tool_calls": [call("c1", "get_user_details", {"user_id": "mia_1"})]},
        {"role": "tool", "tool_call_id": "c1", "name": "get_user_details", "content": "{\"name\": \"Mia\"}"},
        {"role": "assistant", "content": None,
         "tool_calls": [call("c1", "calculate", {"expression": "1+2"})]},
        {"role": "tool", "tool_call_id": "c1", "name": "calculate", "content": "3.0"},
        {"role": "assistant", "content": None,
         "tool_calls": [call(None, "update_reservation_baggages", {"total": 2, "price": 1})]},
        {"role": "tool", "name": "update_reservation_baggages", "content": "ok"},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "###STOP###"},
    ]  # fmt: skip
    second = [
        {"role": "system", "content": "Airline policy."},
        {"role": "user", "content": "Bags?"},
        {"role": "assistant", "content": None,
         "tool_calls": [call("x9", "update_reservation_baggages", {"total": 1, "price": 2.5, "note": "n"})]},
        {"role": "tool", "tool_call_id": "x9", "name": "update_reservation_baggages", "content": "ok"},
    ]  # fmt: skip
    info = {"task": {"user_id": "mia_1", "instruction": "You are Mia."}}
    return [
        {"task_id": 7, "trial": 0, "reward": 1.0, "info": info, "traj": first},
        {"task_id": 2, "trial": 3, "reward": 0.0, "info": {}, "traj": second},
    ]


def test_tau_bench_conversations_in_file_order(tmp_path: Path) -> None:
    path = _write(tmp_path / "gpt-4o-airline.json", tau_doc())
    first, second = _load([path])
    assert (first.run_id, second.run_id) == ("tau-bench/task7_trial0", "tau-bench/task2_trial3")
    assert first.source == f"{path}#task7_trial0"
    calc = ToolCall("c1_3", "calculate", json.dumps({"expression": "1+2"}))
    bags = ToolCall("call_4", "update_reservation_baggages", json.dumps({"total": 2, "price": 1}))
    assert first.messages == (
        Message("system", "Airline policy."),
        Message("user", "Hi, change my flight."),
        Message("assistant", "Your user id?", iteration=1),
        Message("user", "mia_1", iteration=1),
        Message("assistant", None, tool_calls=(ToolCall("c1", "get_user_details", '{"user_id": "mia_1"}'),),
                iteration=2),
        Message("tool", '{"name": "Mia"}', tool_call_id="c1", name="get_user_details", iteration=2),
        Message("assistant", None, tool_calls=(calc,), iteration=3),
        Message("tool", "3.0", tool_call_id="c1_3", name="calculate", iteration=3),
        Message("assistant", None, tool_calls=(bags,), iteration=4),
        Message("tool", "ok", tool_call_id="call_4", name="update_reservation_baggages", iteration=4),
        Message("assistant", "Done.", iteration=5),
        Message("user", "###STOP###", iteration=5),
    )  # fmt: skip
    assert first.steps == 5 and first.usage == (None,) * 5
    assert first.metadata == {
        "task_id": 7, "trial": 0, "reward": 1.0, "user_id": "mia_1", "instruction": "You are Mia.",
    }  # fmt: skip
    assert first.read_only_tools == frozenset({"get_user_details", "calculate"})
    # tool schemas derived from every call in the file, the same for each conversation
    assert first.tools == second.tools
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in first.tools}
    assert list(tools) == ["get_user_details", "calculate", "update_reservation_baggages"]
    assert tools["update_reservation_baggages"] == {
        "type": "object",
        "properties": {"total": {"type": "integer"}, "price": {"type": "number"}, "note": {"type": "string"}},
        "required": ["total", "price"],
    }


def test_schema_inference_and_merge() -> None:
    a = infer_schema({"flights": [{"n": "HAT1", "d": "2024"}], "insurance": None})
    b = infer_schema({"flights": [{"n": "HAT2"}], "insurance": "no"})
    assert merge_schema(a, b) == {
        "type": "object",
        "properties": {
            "flights": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"n": {"type": "string"}, "d": {"type": "string"}},
                    "required": ["n"],
                },
            },
            "insurance": {"type": ["null", "string"]},
        },
        "required": ["flights", "insurance"],
    }


@pytest.mark.parametrize(
    ("name", "read_only"),
    [
        ("get_user_details", True), ("search_direct_flight", True), ("list_all_airports", True),
        ("find_file", True), ("read_file", True), ("open", True), ("view_range", True),
        ("calculate", True), ("think", True), ("search_dir", True), ("goto", True),
        ("scroll_up", True), ("scroll_down", True), ("bash", False), ("edit", False),
        ("book_reservation", False), ("submit", False), ("update_reservation_flights", False),
    ],
)  # fmt: skip
def test_read_only_naming_rule(name: str, read_only: bool) -> None:
    assert is_read_only(name) is read_only


# ---------------------------------------------------------------- own trace format
def test_own_trace_events_become_a_run(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]
    call = ToolCall("c1", "read_file", '{"path": "a.py"}')
    with TraceWriter(path) as writer:
        config = {"read_only_tools": ["read_file"]}
        writer.write(RunStarted("r1", "openai/gpt-4o-mini", "Do it.", config=config, tools=tools))
        writer.write(MessageEvent(Message("system", "sys")))
        writer.write(MessageEvent(Message("user", "Do it.")))
        writer.write(ModelRequest(1, 2, 10, 10, 10))
        writer.write(ModelResponse(1, Usage(50, 5, 0, 1)))
        writer.write(MessageEvent(Message("assistant", None, tool_calls=(call,), iteration=1)))
        writer.write(ToolResult(1, "c1", "read_file"))
        writer.write(
            MessageEvent(Message("tool", "print()", tool_call_id="c1", name="read_file", iteration=1))
        )
        writer.write(MessageEvent(Message("assistant", "done", iteration=2)))
        writer.write(RunEnded("final", "done", 2, Usage(50, 5, 0, 1)))
    [run] = _load([path])
    assert run == RecordedRun(
        run_id="r1",
        source=str(path),
        format="tiered-agent",
        messages=(
            Message("system", "sys"),
            Message("user", "Do it."),
            Message("assistant", None, tool_calls=(call,), iteration=1),
            Message("tool", "print()", tool_call_id="c1", name="read_file", iteration=1),
            Message("assistant", "done", iteration=2),
        ),
        tools=tuple(tools),
        read_only_tools=frozenset({"read_file"}),
        usage=(Usage(50, 5, 0, 1), None),
        model="openai/gpt-4o-mini",
    )


@pytest.mark.parametrize("name", ["mini.traj.json", "swe.traj", "fc.traj", "tau.json"])
def test_round_trip_through_the_trace_format(tmp_path: Path, name: str) -> None:
    doc = {"mini.traj.json": mini_doc, "swe.traj": swe_text_doc, "fc.traj": swe_fc_doc, "tau.json": tau_doc}[
        name
    ]()
    runs = _load([_write(tmp_path / "in" / name, doc)])
    for n, run in enumerate(runs):
        target = tmp_path / "out" / f"{n}.jsonl"
        write_run_trace(run, target)
        write_run_trace(run, target)  # replaces, never appends
        assert _load([target]) == [run]
    assert _load([tmp_path / "out"]) == runs


def test_trace_written_by_write_run_trace_has_the_documented_events(tmp_path: Path) -> None:
    [run] = _load([_write(tmp_path / "demo__demo-1.traj.json", mini_doc())])
    write_run_trace(run, tmp_path / "t.jsonl")
    events = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert Counter(e["type"] for e in events) == {"run_start": 1, "message": 7, "model_response": 2}
    start = events[0]
    assert start["config"] == {"read_only_tools": [], "format": "mini-swe-agent", "metadata": run.metadata}
    assert (start["source"], start["model"], start["task"]) == (run.source, run.model, "Fix the bug.")
    assert [e["iteration"] for e in events if e["type"] == "model_response"] == [1, 3]


# ---------------------------------------------------------------- detection, discovery, errors
def test_detection_by_content_not_by_extension(tmp_path: Path) -> None:
    mini = _write(tmp_path / "x" / "run.data", mini_doc())
    tau = _write(tmp_path / "x" / "conversations.txt", tau_doc())
    [run] = _load([mini])
    assert run.format == "mini-swe-agent"
    assert [r.format for r in _load([tau])] == ["tau-bench", "tau-bench"]
    write_run_trace(run, tmp_path / "trace.json")  # a trace named .json is still a trace
    assert _load([tmp_path / "trace.json"]) == [run]


def test_folders_are_walked_sorted_and_skip_non_trajectories(tmp_path: Path) -> None:
    _write(tmp_path / "b" / "zz.traj.json", mini_doc())
    _write(tmp_path / "a" / "swe.traj", swe_text_doc())
    for name in ("LICENSE", "LICENSE.md", "README.md", "SOURCES.md", "notes.txt", "_results_summary.json"):
        (tmp_path / name).write_text("{not json", encoding="utf-8")
    _write(tmp_path / ".cache" / "junk.json", {"foo": 1})
    runs = _load([tmp_path, tmp_path / "b"])  # the second path adds nothing new
    assert [r.run_id for r in runs] == ["swe-agent/swe", "mini-swe-agent/demo__demo-1"]
    assert _load([tmp_path / "LICENSE"]) == []


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("foo.traj.json", '{\n "messages": [\n    ,]}', r"not JSON \(line 3 col 5"),
        ("empty.traj", "  \n", "empty file"),
        ("bar.json", '{"hello": "world"}', r"unrecognized format \(expected mini-swe-agent, SWE-agent"),
        ("list.json", "[1, 2]", "unrecognized format"),
        (
            "m.traj.json",
            json.dumps({"trajectory_format": "mini-swe-agent-1", "messages": [{"role": "user"}]}),
            r"mini-swe-agent: messages\[0\]: missing 'content'",
        ),
        (
            "m2.traj.json",
            json.dumps({"trajectory_format": "mini-swe-agent-1", "messages": [], "info": []}),
            "mini-swe-agent: root.info: expected an object",
        ),
        (
            "s.traj",
            json.dumps({"trajectory": [], "history": ["not an object"]}),
            "swe-agent: root.history: every entry must be an object",
        ),
        (
            "s2.traj",
            json.dumps({"trajectory": [], "history": [{"role": "robot", "content": "x"}]}),
            r"swe-agent: history\[0\]: unexpected role 'robot'",
        ),
        (
            "t.json",
            json.dumps([{"task_id": 1, "traj": [{"role": "robot", "content": "hi"}]}]),
            r"tau-bench: \[0\].traj\[0\]: unknown message role 'robot'",
        ),
        (
            "t2.json",
            json.dumps([{"task_id": 1, "traj": {"role": "user"}}]),
            r"tau-bench: \[0\].traj: expected a list",
        ),
        (
            "t3.json",
            json.dumps([{"task_id": 1, "traj": [{"role": "tool", "tool_call_id": "z", "content": "x"}]}]),
            "tau-bench: .* tool result 'z' answers no call",
        ),
    ],
)
def test_unreadable_files_raise_naming_file_and_problem(
    tmp_path: Path, name: str, content: str, problem: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(TraceFormatError, match=re.escape(str(path)) + ": " + problem):
        _load([tmp_path])


def test_broken_own_traces_raise_naming_file(tmp_path: Path) -> None:
    [run] = _load([_write(tmp_path / "in" / "a.traj.json", mini_doc())])
    good = tmp_path / "good.jsonl"
    write_run_trace(run, good)
    lines = good.read_text().splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([lines[0], "{oops", *lines[1:]]) + "\n")
    with pytest.raises(TraceFormatError, match=re.escape(f"{broken}: line 2:")):
        _load([broken])
    headless = tmp_path / "headless.jsonl"
    headless.write_text("\n".join(lines[1:]) + "\n")
    with pytest.raises(TraceFormatError, match=re.escape(f"{headless}: no run_start event")):
        _load([headless])


def test_an_own_trace_with_odd_config_values_loads_or_is_skipped_with_a_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``run_start`` whose ``config.metadata`` is not an object (a hand-edited or mutated trace)
    loads without the metadata; anything else the trace reader did not foresee skips the file with
    its reason, never ends the load."""
    [run] = _load([_write(tmp_path / "in" / "a.traj.json", mini_doc())])
    good = tmp_path / "good.jsonl"
    write_run_trace(run, good)
    lines = good.read_text().splitlines()
    start = json.loads(lines[0])
    start["config"]["metadata"] = ["not", "an", "object"]
    odd = tmp_path / "odd.jsonl"
    odd.write_text("\n".join([json.dumps(start), *lines[1:]]) + "\n")
    [loaded] = _load([odd])
    assert loaded.metadata == {} and loaded.messages == run.messages

    def unforeseen(path: Path) -> RecordedRun:
        raise ValueError("dictionary update sequence element #0 has length 1; 2 is required")

    monkeypatch.setattr(importers, "load_trace_run", unforeseen)
    loaded_runs = load_runs([good])
    assert not loaded_runs.runs
    [skipped] = loaded_runs.skipped
    assert skipped.reason.startswith("tiered-agent: cannot convert (ValueError: dictionary update")


def test_missing_path_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="no such file or folder"):
        _load([tmp_path / "nope"])


# ---------------------------------------------------------------- bundled traces
def test_bundled_traces_load() -> None:
    folder = bundled_traces_dir()
    paths = bundled_trace_paths()
    assert paths == [folder / fmt for fmt in ("mini-swe-agent", "swe-agent", "tau-bench", "openhands")]
    runs = _load(paths)
    assert len(runs) == len(BUNDLE) == 27
    assert Counter(r.format for r in runs) == {
        "mini-swe-agent": 8, "swe-agent": 3, "tau-bench": 13, "openhands": 3,
    }  # fmt: skip
    steps = {r.run_id: r.steps for r in runs}
    assert steps["mini-swe-agent/django__django-16560"] == 145
    assert steps["mini-swe-agent/django__django-12708"] == 19
    assert steps["tau-bench/task3_trial0"] == 30
    assert steps["swe-agent/marshmallow-1867__function_calling_replace"] == 11
    assert [steps[f"openhands/traj_safety-{n}"] for n in ("daemon", "transitions", "clockout")] == [5, 8, 8]
    mini = [r for r in runs if r.format == "mini-swe-agent"]
    assert all(u is not None and u.prompt_tokens > 0 for r in mini for u in r.usage)
    repos = ("gruckion/", "SWE-agent/", "sierra-research/", "OpenHands/benchmarks@")
    assert all(r.source.startswith(repos) for r in runs)
    assert {r.model for r in runs if r.format == "tau-bench"} == {"gpt-4o"}
    assert {r.model for r in runs if r.format == "openhands"} == {"gpt-4o-2024-08-06"}
    total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and "runs" not in p.parts)
    assert total < 5_000_000
    sources = (folder / "SOURCES.md").read_text()
    for trace in (t for p in paths for t in p.glob("*.jsonl")):
        assert f"`{trace.relative_to(folder).as_posix()}`" in sources
    assert sorted(
        p.relative_to(folder / "licenses").as_posix() for p in (folder / "licenses").rglob("LICENSE*")
    ) == [
        "OpenHands__benchmarks/LICENSE",
        "SWE-agent__SWE-agent/LICENSE",
        "gruckion__mini-swe-agent/LICENSE.md",
        "sierra-research__tau-bench/LICENSE",
    ]
    assert "Copyright (c) 2025 All Hands AI" in sources
    assert "`openhands-sdk_gpt-4o/`: OpenHands software-agent-SDK runs" in sources


def test_bundled_traces_dir_missing_says_to_pass_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_bundle, "__file__", str(tmp_path / "pkg" / "bench" / "_bundle.py"))
    with pytest.raises(ConfigurationError, match="Pass PATH"):
        bundled_traces_dir()


# ---------------------------------------------------------------- the whole shared set
def _stats_table() -> dict[str, int]:
    """Steps per file as the shared stats.md (first folders) and SOURCES.md (added folders) document them.

    SOURCES.md counts the OpenHands runs' actions (tool calls), not their model calls.
    """
    stats = (SHARED / "stats.md").read_text()
    table = {
        m[1]: int(m[2])
        for m in re.finditer(r"^\| ((?:mini-swe-agent|swe-agent)[^|/\s]*/\S+) \| (\d+) \|", stats, re.M)
    }
    sources = (SHARED / "SOURCES.md").read_text()
    table |= {m[1]: int(m[2]) for m in re.finditer(r"^\| `([^`]+)` \|.* \| (\d+) \|$", sources, re.M)}
    return table


# Model calls per OpenHands run: one per response (parallel calls share one), plus final text replies.
OPENHANDS_STEPS = {
    "attendance": 7, "backchannel": 12, "backup-cron-job": 7, "business-intelligence": 9, "clockout": 8,
    "daemon": 5, "election-data": 7, "external-auditor": 19, "meeting-topics": 6, "migrate": 6,
    "misconfig": 9, "open-features": 4, "paper-trail": 7, "qr-code": 7, "relocation": 19,
    "reuse-cache": 13, "tmp-file-cleanup": 8, "transitions": 8,
}  # fmt: skip


@needs_shared
def test_the_whole_shared_set_loads_with_the_documented_step_counts() -> None:
    loaded = load_runs([SHARED])
    runs = list(loaded.runs)
    assert loaded.skipped == ()
    folders = Counter(Path(r.source).relative_to(SHARED).parts[0] for r in runs)
    assert folders == {
        "mini-swe-agent_gemini-3-pro": 33, "mini-swe-agent_gemini-3-pro_long": 30, "swe-agent_demos": 5,
        "tau-bench": 200, "openhands-sdk_gpt-4o": 18,
    }  # fmt: skip
    documented = _stats_table()
    by_file = {
        Path(r.source).relative_to(SHARED).as_posix(): r.steps
        for r in runs
        if r.format in ("mini-swe-agent", "swe-agent")
    }
    assert by_file == {k: v for k, v in documented.items() if not k.startswith("openhands")}
    assert by_file["mini-swe-agent_gemini-3-pro/django__django-16560.traj.json"] == 145
    steps = Counter()
    for run in runs:
        steps[Path(run.source).relative_to(SHARED).parts[0]] += run.steps
    assert steps == {
        "mini-swe-agent_gemini-3-pro": 1819, "mini-swe-agent_gemini-3-pro_long": 2514, "swe-agent_demos": 62,
        "tau-bench": 2454, "openhands-sdk_gpt-4o": 161,
    }  # fmt: skip
    mini = [r for r in runs if r.format == "mini-swe-agent"]
    assert all(len(r.usage) == r.steps and None not in r.usage for r in mini)
    assert all(not r.messages[-1].text.startswith("diff --git") for r in mini)
    tau = {r.run_id: r.steps for r in runs if r.format == "tau-bench"}
    assert tau["tau-bench/task3_trial0"] == tau["tau-bench/task33_trial0"] == 30
    assert tau["tau-bench/task13_trial0"] == 28


@needs_shared
def test_the_shared_openhands_runs() -> None:
    runs = list(load_runs([SHARED / "openhands-sdk_gpt-4o"], strict=True).runs)
    assert {r.run_id.removeprefix("openhands/traj_safety-"): r.steps for r in runs} == OPENHANDS_STEPS
    documented = _stats_table()
    for run in runs:  # every recorded action is a tool call; SOURCES.md counts those
        calls = sum(len(m.tool_calls) for m in run.messages)
        assert calls == documented[Path(run.source).relative_to(SHARED).as_posix()], run.run_id
    parallel = [m for r in runs for m in r.messages if len(m.tool_calls) > 1]
    assert len(parallel) == 10
    assert sum(r.metadata["task_missing"] for r in runs) == 14
    assert all(r.usage == (None,) * r.steps and r.model is None for r in runs)
    transitions = next(r for r in runs if r.run_id.endswith("transitions"))
    assert [len(m.tool_calls) for m in transitions.messages if m.role == "assistant"] == [
        2,
        1,
        2,
        1,
        1,
        1,
        2,
        1,
    ]
    assert transitions.read_only_tools == frozenset({"think"})
    meeting = next(r for r in runs if r.run_id.endswith("meeting-topics"))
    view = meeting.messages[0].tool_calls[0]
    assert json.loads(view.arguments)["command"] == "view" and meeting.is_read_only(view)
    assert not meeting.is_read_only(meeting.messages[2].tool_calls[0])  # execute_bash


@needs_shared
def test_build_bundle_reproduces_the_committed_traces(tmp_path: Path) -> None:
    written = build_bundle(SHARED, tmp_path)
    committed = bundled_traces_dir()
    assert len(written) == 27
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["SOURCES.md", "licenses", *BUNDLED_FORMATS])
    for path in sorted(p for p in tmp_path.rglob("*") if p.is_file()):
        assert path.read_bytes() == (committed / path.relative_to(tmp_path)).read_bytes(), path
    raw = {r.run_id: r for r in _load([SHARED])}
    for run in _load([tmp_path]):
        original = raw[run.run_id]
        assert replace(run, source=original.source, model=original.model) == original
