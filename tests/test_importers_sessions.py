"""OpenHands, Claude Code and Codex importers on hand-made logs; skipping unreadable input; the CLI."""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import structlog
from click.testing import CliRunner
from structlog.testing import capture_logs

from tiered_agent._errors import TraceFormatError
from tiered_agent._messages import Message, ToolCall, Usage
from tiered_agent.bench._import_claude import read_only_tool as claude_read_only
from tiered_agent.bench._import_codex import read_only_tool as codex_read_only
from tiered_agent.bench._importers import NO_STEPS, SkippedInput, SkippedLines, load_runs, write_run_trace
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.cli import cli

FIXTURES = Path(__file__).parent / "fixtures" / "home"
CLAUDE_SESSION = "5f0c1d2e-0000-4000-8000-000000000001"
CODEX_ROLLOUT = "rollout-2025-10-29T10-00-00-0199aaaa-0000-7000-8000-000000000001"
CODEX_FLAT = "rollout-2025-06-01T09-00-00-0197bbbb-0000-7000-8000-000000000002"


def _load(*paths: Path) -> list[RecordedRun]:
    return list(load_runs(list(paths), strict=True).runs)


def _write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    shutil.copytree(FIXTURES, home)
    return home


# ---------------------------------------------------------------- OpenHands
def _action(rid: str, call_id: str, name: str, args: dict[str, Any], thought: str = "") -> dict[str, Any]:
    return {
        "kind": "ActionEvent", "id": f"ev-{call_id}", "timestamp": "2025-10-30T13:42:00", "source": "agent",
        "thought": [{"type": "text", "text": thought}] if thought else [], "reasoning_content": "hidden",
        "thinking_blocks": [], "action": {"kind": "SomeAction", **args}, "tool_name": name,
        "tool_call_id": call_id,
        "tool_call": {"id": call_id, "name": name, "arguments": json.dumps(args), "origin": "completion"},
        "llm_response_id": rid, "security_risk": "LOW",
    }  # fmt: skip


def _observation(call_id: str, name: str, observation: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "ObservationEvent", "id": f"obs-{call_id}", "timestamp": "2025-10-30T13:42:01",
        "source": "environment", "tool_name": name, "tool_call_id": call_id, "observation": observation,
        "action_id": f"ev-{call_id}",
    }  # fmt: skip


def _bash(output: str, code: int) -> dict[str, Any]:
    suffix = f"\n[The command completed with exit code {code}.]"
    meta = {"exit_code": code, "prefix": "", "suffix": suffix, "working_dir": "/workspace"}
    return {
        "kind": "ExecuteBashObservation",
        "output": output,
        "command": "x",
        "error": False,
        "metadata": meta,
    }


def _message(source: str, role: str, text: str) -> dict[str, Any]:
    return {
        "kind": "MessageEvent", "id": f"msg-{text[:5]}", "timestamp": "2025-10-30T13:41:00", "source": source,
        "llm_message": {"role": role, "content": [{"type": "text", "text": text, "cache_prompt": False}]},
        "activated_skills": [], "extended_content": [],
    }  # fmt: skip


VIEW = {"command": "view", "path": "/workspace/notes.txt"}
CREATE = {"command": "create", "path": "/workspace/out.txt", "file_text": "done"}
BASH_TOOL = {  # the SDK's own tool form (name, description, parameters)
    "name": "execute_bash",
    "description": "Run bash",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}
EDITOR_TOOL = {
    "type": "function",
    "function": {"name": "str_replace_editor", "description": "View and edit files", "parameters": {}},
}


def openhands_events() -> list[dict[str, Any]]:
    system = {
        "kind": "SystemPromptEvent", "id": "sys", "timestamp": "2025-10-30T13:40:00", "source": "agent",
        "system_prompt": {"type": "text", "text": "You are OpenHands."},
        "tools": [EDITOR_TOOL, BASH_TOOL],
    }  # fmt: skip
    return [
        system,
        _message("user", "user", "Summarize notes.txt into out.txt."),
        # one response, two calls: a read and a write; an observation arrives between them
        _action("resp-1", "c1", "str_replace_editor", VIEW, thought="Read, then write."),
        _observation(
            "c1", "str_replace_editor", {"kind": "FileEditorObservation", "output": "line 1\nline 2"}
        ),
        _action("resp-1", "c2", "str_replace_editor", CREATE),
        _observation("c2", "str_replace_editor", {"kind": "FileEditorObservation", "output": "File created"}),
        {
            "kind": "Condensation",
            "id": "cond",
            "timestamp": "t",
            "source": "environment",
            "forgotten_event_ids": [],
        },
        _action("resp-2", "c3", "execute_bash", {"command": "wc -l out.txt"}),
        {
            "kind": "AgentErrorEvent",
            "id": "err",
            "timestamp": "t",
            "source": "agent",
            "tool_name": "execute_bash",
            "tool_call_id": "c3",
            "error": "Command timed out",
        },
        _action("resp-3", "c4", "execute_bash", {"command": "cat out.txt"}),
        _observation("c4", "execute_bash", _bash("done", 0)),
        _action("resp-4", "c5", "think", {"thought": "All good."}),
        {
            "kind": "UserRejectObservation",
            "id": "rej",
            "timestamp": "t",
            "source": "environment",
            "tool_name": "think",
            "tool_call_id": "c5",
            "rejection_reason": "Not now",
            "action_id": "ev-c5",
        },
        _message("agent", "assistant", "out.txt holds the summary."),
        _message("user", "user", "Thanks."),
    ]


def test_openhands_parallel_calls_of_one_response_are_one_step(tmp_path: Path) -> None:
    path = _write(tmp_path / "traj_demo.json", openhands_events())
    [run] = _load(path)
    assert (run.run_id, run.format, run.source, run.model) == (
        "openhands/traj_demo",
        "openhands",
        str(path),
        None,
    )
    view = ToolCall("c1", "str_replace_editor", json.dumps(VIEW))
    create = ToolCall("c2", "str_replace_editor", json.dumps(CREATE))
    assert run.messages == (
        Message("system", "You are OpenHands."),
        Message("user", "Summarize notes.txt into out.txt."),
        Message("assistant", "Read, then write.", tool_calls=(view, create), iteration=1),
        Message("tool", "line 1\nline 2", tool_call_id="c1", name="str_replace_editor", iteration=1),
        Message("tool", "File created", tool_call_id="c2", name="str_replace_editor", iteration=1),
        Message(
            "assistant",
            None,
            tool_calls=(ToolCall("c3", "execute_bash", '{"command": "wc -l out.txt"}'),),
            iteration=2,
        ),
        Message("tool", "Command timed out", tool_call_id="c3", name="execute_bash", iteration=2),
        Message(
            "assistant",
            None,
            tool_calls=(ToolCall("c4", "execute_bash", '{"command": "cat out.txt"}'),),
            iteration=3,
        ),
        Message(
            "tool",
            "done\n[The command completed with exit code 0.]",
            tool_call_id="c4",
            name="execute_bash",
            iteration=3,
        ),
        Message(
            "assistant", None, tool_calls=(ToolCall("c5", "think", '{"thought": "All good."}'),), iteration=4
        ),
        Message("tool", "Action rejected: Not now", tool_call_id="c5", name="think", iteration=4),
        Message("assistant", "out.txt holds the summary.", iteration=5),
        Message("user", "Thanks.", iteration=5),
    )
    assert run.steps == 5 and run.usage == (None,) * 5
    assert run.task == "Summarize notes.txt into out.txt."
    assert run.metadata == {"events": 15, "task_missing": False, "ignored_events": {"Condensation": 1}}
    # the schemas the system prompt event lists, in either form
    assert [t["function"]["name"] for t in run.tools] == ["str_replace_editor", "execute_bash"]
    assert run.tools[1]["function"]["parameters"]["required"] == ["command"]
    # read-only: by tool (think) and by call (the editor's view, not its create)
    assert run.read_only_tools == frozenset({"think"})
    assert run.read_only_calls == frozenset({"c1"})
    assert [run.is_read_only(c) for c in (view, create)] == [True, False]


def test_openhands_log_without_the_task_starts_at_the_first_action(tmp_path: Path) -> None:
    events = openhands_events()[2:6]  # cut before the task: no system prompt, no user message
    [run] = _load(_write(tmp_path / "cut.json", events))
    assert run.task == ""
    assert [m for m in run.messages if m.iteration == 0] == []
    assert run.messages[0].role == "assistant" and run.messages[0].iteration == 1
    assert run.steps == 1 and len(run.messages[0].tool_calls) == 2
    assert run.metadata["task_missing"] is True
    # no schemas recorded: derived from the calls
    assert [t["function"]["name"] for t in run.tools] == ["str_replace_editor"]
    assert set(run.tools[0]["function"]["parameters"]["properties"]) == {"command", "path", "file_text"}


def test_openhands_persisted_conversation_folder_is_one_run(tmp_path: Path) -> None:
    conversation = tmp_path / "persist" / "conv-42"
    (conversation / "base_state.json").parent.mkdir(parents=True)
    (conversation / "base_state.json").write_text('{"id": "conv-42"}', encoding="utf-8")
    for index, event in enumerate(openhands_events()):
        _write(conversation / "events" / f"event-{index:05d}-{event['id']}.json", event)
    (conversation / "events" / "notes.json").write_text("{}", encoding="utf-8")  # not an event file
    loaded = load_runs([tmp_path / "persist"])
    [run] = loaded.runs
    assert (run.run_id, run.source) == ("openhands/conv-42", str(conversation))
    assert run.messages == _load(_write(tmp_path / "list.json", openhands_events()))[0].messages
    assert [s.path for s in loaded.skipped] == [str(conversation / "events" / "notes.json")]
    _write(conversation / "events" / "event-00099-x.json", {"no": "kind"})
    assert load_runs([conversation / "events"]).skipped[0] == SkippedInput(
        str(conversation / "events"),
        "openhands: the event files are not OpenHands events (each needs a kind and a source)",
    )


def test_openhands_read_only_tools_by_what_they_do() -> None:
    from tiered_agent.bench._import_openhands import read_only_tool

    readers = ["think", "browser_get_state", "browser_get_content", "get_weather"]
    writers = [
        "execute_bash",
        "str_replace_editor",
        "browser_navigate",
        "browser_click",
        "browser_type",
        "finish",
    ]
    assert [read_only_tool(n) for n in readers] == [True] * len(readers)
    assert [read_only_tool(n) for n in writers] == [False] * len(writers)


# ---------------------------------------------------------------- Claude Code
def _claude_runs() -> dict[str, RecordedRun]:
    return {r.run_id: r for r in _load(FIXTURES / ".claude" / "projects" / "-home-user-demo")}


def test_claude_code_merges_the_entries_of_one_response_and_maps_usage() -> None:
    run = _claude_runs()[f"claude-code/{CLAUDE_SESSION}"]
    assert (run.format, run.model) == ("claude-code", "claude-sonnet-4-5-20250929")
    read = ToolCall("toolu_01", "Read", '{"file_path":"/home/user/demo/parser.py"}')
    grep = ToolCall("toolu_02", "Grep", '{"pattern":"def parse","path":"/home/user/demo"}')
    edit = ToolCall(
        "toolu_03", "Edit",
        '{"file_path":"/home/user/demo/parser.py","old_string":"text.split(\',\')",'
        '"new_string":"[p.strip() for p in text.split(\',\')]"}',
    )  # fmt: skip
    bash = ToolCall("toolu_04", "Bash", '{"command":"pytest -q","description":"Run the tests"}')
    assert run.messages == (
        Message("user", "Fix the failing test in parser.py"),
        # four entries of message msg_01 (thinking, text, two tool_use): one step, thinking dropped
        Message("assistant", "Let me look at the parser and its test.", tool_calls=(read, grep), iteration=1),
        Message("tool", "     1\u2192def parse(text):\n     2\u2192    return text.split(',')",
                tool_call_id="toolu_01", name="Read", iteration=1),
        Message("tool", "parser.py:1:def parse(text):", tool_call_id="toolu_02", name="Grep", iteration=1),
        Message("assistant", "The split keeps the spaces. Fixing it.", tool_calls=(edit,), iteration=2),
        Message("tool", "The file /home/user/demo/parser.py has been updated.", tool_call_id="toolu_03",
                name="Edit", iteration=2),
        Message("assistant", None, tool_calls=(bash,), iteration=3),
        Message("tool", "1 passed in 0.01s", tool_call_id="toolu_04", name="Bash", iteration=3),
        # the synthetic "No response requested." and the repeated uuid are gone
        Message("user", "Thanks! Now add a docstring.", iteration=3),
        Message("assistant", "Done: the docstring is in.", iteration=4),
    )  # fmt: skip
    # prompt = input + cache read + cache write; output: the largest of the repeated values
    assert run.usage == (
        Usage(prompt_tokens=1203, completion_tokens=95, cached_tokens=0, requests=1, cache_write_tokens=1200),
        Usage(
            prompt_tokens=1505, completion_tokens=120, cached_tokens=1200, requests=1, cache_write_tokens=300
        ),
        Usage(
            prompt_tokens=1652, completion_tokens=30, cached_tokens=1500, requests=1, cache_write_tokens=150
        ),
        Usage(
            prompt_tokens=1674,
            completion_tokens=12,
            cached_tokens=1650,
            requests=1,
            cost=0.0012,
            cache_write_tokens=20,
        ),
    )
    assert run.read_only_tools == frozenset({"Read", "Grep"})
    assert [t["function"]["name"] for t in run.tools] == ["Read", "Grep", "Edit", "Bash"]
    assert run.metadata == {"session_id": CLAUDE_SESSION, "version": "1.0.80", "synthetic_messages": 1}


def test_claude_code_subagents_are_runs_of_their_own() -> None:
    runs = _claude_runs()
    assert sorted(runs) == [
        f"claude-code/{CLAUDE_SESSION}",
        f"claude-code/{CLAUDE_SESSION}/agent-a1b2c3",  # subagents/agent-a1b2c3.jsonl
        f"claude-code/{CLAUDE_SESSION}/sidechain-1",  # inline isSidechain entries (older versions)
    ]
    inline = runs[f"claude-code/{CLAUDE_SESSION}/sidechain-1"]
    assert inline.task == "Find every caller of parse."
    assert inline.steps == 2 and inline.read_only_tools == frozenset({"Glob"})
    assert inline.source.endswith(f"{CLAUDE_SESSION}.jsonl#sidechain-1")
    assert not any("caller" in m.text for m in runs[f"claude-code/{CLAUDE_SESSION}"].messages)
    agent = runs[f"claude-code/{CLAUDE_SESSION}/agent-a1b2c3"]
    assert (agent.model, agent.steps, agent.metadata["sidechain"]) == ("claude-haiku-4-5-20251001", 2, True)
    assert agent.usage[1] == Usage(946, 9, 900, 1, None, 40)


@pytest.mark.parametrize(
    ("name", "read_only"),
    [
        ("Read", True),
        ("Grep", True),
        ("Glob", True),
        ("LS", True),
        ("WebFetch", True),
        ("WebSearch", True),
        ("TodoRead", True),
        ("NotebookRead", True),
        ("mcp__github__get_issue", True),
        ("Bash", False),
        ("Edit", False),
        ("Write", False),
        ("MultiEdit", False),
        ("Task", False),
        ("TodoWrite", False),
        ("NotebookEdit", False),
        ("BashOutput", False),
        ("mcp__github__create_issue", False),
    ],
)
def test_claude_code_read_only_tools(name: str, read_only: bool) -> None:
    assert claude_read_only(name) is read_only


def test_claude_code_torn_last_line_is_counted_not_damage(tmp_path: Path) -> None:
    source = FIXTURES / ".claude" / "projects" / "-home-user-demo" / f"{CLAUDE_SESSION}.jsonl"
    torn = tmp_path / "live.jsonl"
    torn.write_bytes(
        source.read_bytes() + b'{"type":"assistant","message":{"id":"msg_'
    )  # still being written
    with capture_logs() as logs:
        loaded = load_runs([torn], strict=True)  # a log still being written is not an error
    assert [r.steps for r in loaded.runs] == [4, 2]
    lines = source.read_bytes().count(b"\n") + 1
    assert loaded.skipped_lines == (SkippedLines(str(torn), (lines,), torn=True),)
    assert loaded.skipped_lines[0].to_dict() == {
        "path": str(torn), "count": 1, "lines": [lines], "torn_last_line": True,
    }  # fmt: skip
    assert [(e["event"], e["log_level"]) for e in logs] == [("importers.torn_last_line", "info")]


def test_claude_code_malformed_line_is_skipped_and_counted(tmp_path: Path) -> None:
    source = FIXTURES / ".claude" / "projects" / "-home-user-demo" / f"{CLAUDE_SESSION}.jsonl"
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(source.read_bytes().replace(b'{"type":"file-history', b"{oops", 1))
    with capture_logs() as logs:
        loaded = load_runs([broken])
    assert [r.messages for r in loaded.runs] == [r.messages for r in _load(source)]
    assert loaded.skipped_lines == (SkippedLines(str(broken), (2,)),)
    assert [(e["event"], e["count"]) for e in logs if e["event"] == "importers.skipped_lines"] == [
        ("importers.skipped_lines", 1)
    ]
    with pytest.raises(TraceFormatError, match=re.escape(f"{broken}: malformed line 2 (not a JSON object)")):
        load_runs([broken], strict=True)


# ---------------------------------------------------------------- Codex
def _codex_runs() -> dict[str, RecordedRun]:
    return {r.run_id: r for r in _load(FIXTURES / ".codex" / "sessions")}


def test_codex_rollout_steps_calls_and_token_counts() -> None:
    run = _codex_runs()[f"codex/{CODEX_ROLLOUT}"]
    assert (run.format, run.model) == ("codex", "gpt-5-codex")
    patch = (
        "*** Begin Patch\n*** Update File: parser.py\n@@\n-    return text.split(',')\n"
        "+    return [p.strip() for p in text.split(',')]\n*** End Patch"
    )
    assert run.messages == (
        Message("system", "You are Codex, a coding agent."),
        Message("system", "<permissions instructions>sandbox: workspace-write</permissions instructions>"),
        Message("user", "<environment_context>\n  <cwd>/home/user/demo</cwd>\n</environment_context>"),
        Message("user", "Why does test_parse fail?"),
        # reasoning + two function calls: one response, one step
        Message(
            "assistant",
            None,
            tool_calls=(
                ToolCall("call_a", "shell", '{"command":["bash","-lc","cat parser.py"]}'),
                ToolCall("call_b", "shell", '{"command":["bash","-lc","cat test_parser.py"]}'),
            ),
            iteration=1,
        ),
        Message(
            "tool",
            "def parse(text):\n    return text.split(',')",
            tool_call_id="call_a",
            name="shell",
            iteration=1,
        ),
        Message(
            "tool", "assert parse('a, b') == ['a', 'b']", tool_call_id="call_b", name="shell", iteration=1
        ),
        Message(
            "assistant",
            "The split keeps the spaces; patching.",
            tool_calls=(ToolCall("call_c", "apply_patch", patch),),
            iteration=2,
        ),
        Message(
            "tool",
            "Success. Updated the following files:\nM parser.py",
            tool_call_id="call_c",
            name="apply_patch",
            iteration=2,
        ),
        Message(
            "assistant",
            None,
            tool_calls=(ToolCall("call_d", "local_shell", '{"type":"exec","command":["pytest","-q"]}'),),
            iteration=3,
        ),
        Message("tool", "1 passed in 0.01s", tool_call_id="call_d", name="local_shell", iteration=3),
        # compacted: Codex rebuilt its history from the system and user messages and the summary
        Message("system", "You are Codex, a coding agent.", iteration=3),
        Message(
            "system",
            "<permissions instructions>sandbox: workspace-write</permissions instructions>",
            iteration=3,
        ),
        Message(
            "user", "<environment_context>\n  <cwd>/home/user/demo</cwd>\n</environment_context>", iteration=3
        ),
        Message("user", "Why does test_parse fail?", iteration=3),
        Message("user", "Summary: parse() now strips spaces; tests pass.", iteration=3),
        Message("assistant", "Fixed: parse strips the spaces now.", iteration=4),
    )
    assert run.restarts == (11,)
    assert not run.prompt_complete
    # step 1's response held a reasoning item; step 4 opens a turn (the compaction's user messages)
    assert run.reasoning_steps == frozenset({1}) and run.turns_after_reasoning() == frozenset({4})
    assert run.with_recording(run.recording()).reasoning_steps == frozenset({1})
    # each request was sent at the latest input item before its response (else its first item)
    assert [round(t - run.timestamps[0], 3) for t in run.timestamps if t is not None] == [0.0, 2.1, 4.0, 6.5]
    # last_token_usage per response; the re-emitted count is ignored; input already includes the cache
    assert run.usage == (
        Usage(prompt_tokens=2000, completion_tokens=150, cached_tokens=0, requests=1),
        Usage(prompt_tokens=2600, completion_tokens=210, cached_tokens=1920, requests=1),
        Usage(prompt_tokens=2900, completion_tokens=20, cached_tokens=2560, requests=1),
        Usage(prompt_tokens=3000, completion_tokens=40, cached_tokens=2816, requests=1),
    )
    assert run.metadata == {
        "session_id": "0199aaaa-0000-7000-8000-000000000001", "cli_version": "0.50.0", "compactions": 1,
        "usage_order": "after",
    }  # fmt: skip
    assert run.read_only_tools == frozenset()
    assert run.task == "<environment_context>\n  <cwd>/home/user/demo</cwd>\n</environment_context>"


def test_codex_running_totals_without_last_usage(tmp_path: Path) -> None:
    def total(prompt: int, cached: int, output: int) -> dict[str, Any]:
        usage = {"input_tokens": prompt, "cached_input_tokens": cached, "output_tokens": output}
        return {"type": "event_msg", "payload": {"type": "token_count", "info": {"total_token_usage": usage}}}

    def item(**payload: Any) -> dict[str, Any]:
        return {"type": "response_item", "payload": payload}

    records = [
        {"type": "session_meta", "payload": {"id": "s1", "cli_version": "0.30.0"}},
        item(type="message", role="user", content=[{"type": "input_text", "text": "Hi"}]),
        item(type="function_call", name="shell", arguments='{"command":["ls"]}', call_id="c1"),
        total(1000, 0, 50),
        item(type="function_call_output", call_id="c1", output="a.py"),
        item(type="message", role="assistant", content=[{"type": "output_text", "text": "One file."}]),
        total(2200, 1024, 70),
    ]
    path = tmp_path / "rollout-old.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    [run] = _load(path)
    assert run.usage == (Usage(1000, 50, 0, 1), Usage(1200, 20, 1024, 1))


def test_codex_older_flat_rollout() -> None:
    run = _codex_runs()[f"codex/{CODEX_FLAT}"]
    assert run.messages == (
        Message("user", "List the files."),
        Message(
            "assistant", None, tool_calls=(ToolCall("call_1", "shell", '{"command":["ls"]}'),), iteration=1
        ),
        Message("tool", "parser.py\ntest_parser.py", tool_call_id="call_1", name="shell", iteration=1),
        Message("assistant", "Two files: parser.py and test_parser.py.", iteration=2),
    )
    assert (run.model, run.usage) == (None, (None, None))


def test_codex_flat_rollout_ignores_a_record_type_it_does_not_know(tmp_path: Path) -> None:
    lines = (FIXTURES / ".codex/sessions/2025/06/01" / f"{CODEX_FLAT}.jsonl").read_text().splitlines()
    lines.insert(3, json.dumps({"type": "ghost_snapshot", "commit": "abc"}))
    path = tmp_path / "rollout-flat.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    [run] = _load(path)
    assert run.messages == _codex_runs()[f"codex/{CODEX_FLAT}"].messages
    assert run.run_id == "codex/rollout-flat"


def test_codex_read_only_tools() -> None:
    assert [codex_read_only(n) for n in ("read_file", "list_dir", "grep_files", "view_image")] == [True] * 4
    assert [codex_read_only(n) for n in ("shell", "exec_command", "apply_patch", "update_plan")] == [
        False
    ] * 4


# ---------------------------------------------------------------- detection, round trip
def test_detection_by_content_not_by_name(tmp_path: Path) -> None:
    claude = FIXTURES / ".claude" / "projects" / "-home-user-demo" / f"{CLAUDE_SESSION}.jsonl"
    codex = FIXTURES / ".codex" / "sessions" / "2025" / "10" / "29" / f"{CODEX_ROLLOUT}.jsonl"
    renamed = {
        "a.log": claude.read_bytes(),
        "b.json": codex.read_bytes(),
        "c.traj": json.dumps(openhands_events()).encode(),
    }
    for name, data in renamed.items():
        (tmp_path / name).write_bytes(data)
    formats = [sorted({r.format for r in _load(tmp_path / name)}) for name in renamed]
    assert formats == [["claude-code"], ["codex"], ["openhands"]]
    one_line = tmp_path / "one.jsonl"  # a Codex rollout of one line parses as one JSON document
    one_line.write_bytes(codex.read_bytes().split(b"\n", 1)[0])
    assert load_runs([one_line]).skipped == (SkippedInput(str(one_line), NO_STEPS),)


def test_new_formats_survive_the_trace_round_trip(tmp_path: Path) -> None:
    runs = [
        *_load(_write(tmp_path / "in" / "oh.json", openhands_events())),
        *_claude_runs().values(),
        *_codex_runs().values(),
    ]
    for n, run in enumerate(runs):
        write_run_trace(run, tmp_path / "out" / f"{n}.jsonl")
        assert _load(tmp_path / "out" / f"{n}.jsonl") == [run]
    assert runs[0].read_only_calls == frozenset({"c1"})


# ---------------------------------------------------------------- robust input
def _tau(task_id: int, traj: list[dict[str, Any]]) -> dict[str, Any]:
    return {"task_id": task_id, "trial": 0, "traj": traj}


def _mixed_folder(root: Path) -> Path:
    """A folder with one good run and every kind of input that must be skipped."""
    _write(root / "good.json", openhands_events())
    (root / "empty.json").write_text("\n", encoding="utf-8")
    (root / "not-json.jsonl").write_text("{oops\n", encoding="utf-8")
    _write(root / "unknown.json", {"hello": "world"})
    _write(root / "bad-shape.traj", {"trajectory": [], "history": ["not an object"]})
    _write(root / "sub" / "conversations.json", [
        _tau(1, [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]),
        _tau(2, [{"role": "system", "content": "policy"}, {"role": "user", "content": "hi"}]),
    ])  # fmt: skip
    return root


EXPECTED_SKIPS = [
    ("bad-shape.traj", "swe-agent: root.history: every entry must be an object"),
    (
        "empty.json",
        "empty file (expected mini-swe-agent, SWE-agent, tau-bench, OpenHands, Claude Code, Codex",
    ),
    ("not-json.jsonl", "not JSON (line 1 col 2:"),
    ("sub/conversations.json#task2_trial0", NO_STEPS),
    ("unknown.json", "unrecognized format (expected"),
]


def test_unreadable_and_empty_inputs_are_skipped_with_one_warning_each(tmp_path: Path) -> None:
    root = _mixed_folder(tmp_path / "mixed")
    with capture_logs() as logs:
        loaded = load_runs([root])
    assert [r.run_id for r in loaded.runs] == ["openhands/good", "tau-bench/task1_trial0"]
    assert [s.path for s in loaded.skipped] == [str(root / p) for p, _ in EXPECTED_SKIPS]  # sorted by path
    for skipped, (_, reason) in zip(loaded.skipped, EXPECTED_SKIPS, strict=True):
        assert skipped.reason.startswith(reason), skipped
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert [(e["event"], e["path"]) for e in warnings] == [
        ("importers.skipped", s.path) for s in loaded.skipped
    ]


def test_a_file_that_cannot_be_read_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = _write(tmp_path / "good.json", openhands_events())
    locked = _write(tmp_path / "locked.json", openhands_events())
    read_bytes = Path.read_bytes

    def refuse(self: Path) -> bytes:
        if self == locked:
            raise PermissionError(13, "Permission denied")
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", refuse)
    loaded = load_runs([tmp_path])
    assert [r.source for r in loaded.runs] == [str(good)]
    assert loaded.skipped == (SkippedInput(str(locked), "cannot read (Permission denied)"),)


def test_strict_turns_the_first_skip_into_one_error(tmp_path: Path) -> None:
    root = _mixed_folder(tmp_path / "mixed")
    expected = (
        f"{root / 'bad-shape.traj'}: swe-agent: root.history: every entry must be an object (and 4 more"
    )
    with pytest.raises(TraceFormatError, match=re.escape(expected)):
        load_runs([root], strict=True)
    with pytest.raises(TraceFormatError, match=re.escape(f"{root / 'empty.json'}: empty file")):
        load_runs([root / "empty.json"], strict=True)


# ---------------------------------------------------------------- the command
@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """``tiered-agent`` points structlog and logging at the runner's stderr; undo that afterwards."""
    config, handlers, level = structlog.get_config(), logging.root.handlers[:], logging.root.level
    yield
    structlog.configure(**config)
    logging.root.handlers[:] = handlers
    logging.root.setLevel(level)


def _bench(*args: str | Path) -> Any:
    """``tiered-agent bench ARGS`` through the top-level command (it routes warnings to stderr)."""
    return CliRunner().invoke(cli, ["bench", *map(str, args)])


def test_bench_reads_claude_code_and_codex_from_a_fake_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _home(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    for folder, runs, skipped in (
        (
            Path.home() / ".claude" / "projects",
            3,
            ["-home-user-other/7a7a7a7a-0000-4000-8000-000000000002.jsonl"],
        ),
        (Path.home() / ".codex" / "sessions", 2, []),
    ):
        out = tmp_path / "out" / folder.parent.name
        result = _bench(folder, "--policies", "tiered", "--out", out)
        assert result.exit_code == 0, result.output
        document = orjson.loads((out / "bench.json").read_bytes())
        assert document["inputs"]["run_count"] == runs
        assert document["inputs"]["skipped"] == [
            {"path": str(folder / p), "reason": NO_STEPS} for p in skipped
        ]  # the dot-folder .trash below was not entered
        lines = [line for line in result.stderr.splitlines() if "importers.skipped" in line]
        assert len(lines) == len(skipped) and all(p in lines[0] for p in skipped[:1])
    claude_runs = {r["run_id"]: r for r in document_runs(tmp_path / "out" / ".claude")}
    assert claude_runs[f"claude-code/{CLAUDE_SESSION}"]["recorded_usage"] is True
    assert claude_runs[f"claude-code/{CLAUDE_SESSION}"]["model"] == "claude-sonnet-4-5-20250929"


def document_runs(out: Path) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = orjson.loads((out / "bench.json").read_bytes())["inputs"]["runs"]
    return runs


def test_bench_skips_broken_files_and_strict_fails(tmp_path: Path) -> None:
    root = _mixed_folder(tmp_path / "mixed")
    result = _bench(root, "--policies", "tiered", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    document = orjson.loads((tmp_path / "out" / "bench.json").read_bytes())
    assert document["inputs"]["run_count"] == 2
    skipped = document["inputs"]["skipped"]
    assert [s["path"] for s in skipped] == [str(root / p) for p, _ in EXPECTED_SKIPS]
    assert all(s["reason"].startswith(r) for s, (_, r) in zip(skipped, EXPECTED_SKIPS, strict=True))
    warned = [line for line in result.stderr.splitlines() if "importers.skipped" in line]
    assert len(warned) == len(EXPECTED_SKIPS)

    strict = _bench(root, "--strict", "--out", tmp_path / "out2")
    assert strict.exit_code == 1
    assert strict.stderr.strip().splitlines() == [
        f"Error: {root / 'bad-shape.traj'}: swe-agent: root.history: every entry must be an object "
        "(and 4 more inputs that cannot be replayed)"
    ]
    assert not (tmp_path / "out2").exists()


def test_bench_with_nothing_readable_fails_in_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "only").mkdir()
    (tmp_path / "only" / "empty.json").write_text("", encoding="utf-8")
    result = _bench(tmp_path / "only", "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"Error: no recorded runs found in {tmp_path / 'only'} (1 input skipped, see the warnings)"
    )
