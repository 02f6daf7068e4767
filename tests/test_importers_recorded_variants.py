"""Format variants of the recorded-run agents (mini-swe-agent, SWE-agent, OpenHands, tau-bench and
tau2-bench) from other versions, written by hand after the agents' own source.

Each test is one variant: what the model was sent must be what the replay sends (messages, tool
calls paired with their results, usage on the step it measures), and what cannot be replayed is
skipped or marked with its reason, never replayed wrongly in silence.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tiered_agent._messages import Message, ToolCall, Usage
from tiered_agent.bench._importers import LoadedRuns, load_runs
from tiered_agent.bench._recorded import RecordedRun

PATCH = "diff --git a/x.py b/x.py\n+fixed\n"


def _write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _one(path: Path) -> RecordedRun:
    loaded = load_runs([path])
    assert loaded.skipped == (), loaded.skipped
    [run] = loaded.runs
    return run


def _cmd(command: str) -> str:
    return json.dumps({"command": command}, separators=(",", ":"))


def _calls(run: RecordedRun) -> list[tuple[int, str, str]]:
    return [(m.iteration, c.name, c.arguments) for m in run.messages for c in m.tool_calls]


def _roles(run: RecordedRun) -> list[tuple[str, int]]:
    return [(m.role, m.iteration) for m in run.messages]


def _paired(run: RecordedRun) -> bool:
    """Every tool message answers a call made earlier in the run, each call at most once."""
    calls = {c.id: c.name for m in run.messages for c in m.tool_calls}
    answered = [m.tool_call_id for m in run.messages if m.role == "tool"]
    return len(answered) == len(set(answered)) and all(calls.get(a or "") for a in answered)


# ---------------------------------------------------------------- mini-swe-agent v2
def _v2_usage(prompt: int, cached: int) -> dict[str, Any]:
    details = {"cached_tokens": cached}
    usage = {"prompt_tokens": prompt, "completion_tokens": 7, "prompt_tokens_details": details}
    return {"model": "anthropic/claude-sonnet-4-5", "usage": usage}


def _v2_call(call_id: str, command: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": _cmd(command)}}


def mini_v2_toolcall_doc() -> dict[str, Any]:
    """mini-swe-agent 2.x with its default tool-calling model (trajectory_format 1.1)."""
    return {
        "trajectory_format": "mini-swe-agent-1.1",
        "instance_id": "demo__demo-2",
        "info": {
            "exit_status": "Submitted", "submission": PATCH, "mini_version": "2.0.0",
            "model_stats": {"instance_cost": 0.3, "api_calls": 3},
            "config": {"model": {"model_name": "anthropic/claude-sonnet-4-5"}},
        },
        "messages": [
            {"role": "system", "content": "You are a shell agent.", "extra": {}},
            {"role": "user", "content": "Fix the bug.", "extra": {}},
            {
                "role": "assistant", "content": "Two looks at once.", "function_call": None,
                "tool_calls": [_v2_call("toolu_1", "ls"), _v2_call("toolu_2", "cat x.py")],
                "extra": {"actions": [{"command": "ls", "tool_call_id": "toolu_1"},
                                      {"command": "cat x.py", "tool_call_id": "toolu_2"}],
                          "response": _v2_usage(100, 0), "cost": 0.1, "timestamp": 1.0},
            },
            {"role": "tool", "tool_call_id": "toolu_1", "content": "<returncode>0</returncode>\nx.py",
             "extra": {"raw_output": "x.py", "returncode": 0}},
            {"role": "tool", "tool_call_id": "toolu_2", "content": "<returncode>0</returncode>\nbug",
             "extra": {"raw_output": "bug", "returncode": 0}},
            {
                "role": "assistant", "content": "I am done.", "tool_calls": None,
                "extra": {"response": _v2_usage(200, 100), "cost": 0.1},
            },
            {"role": "user", "content": "No tool calls found in the response.",
             "extra": {"interrupt_type": "FormatError"}},
            {
                "role": "assistant", "content": None,
                "tool_calls": [_v2_call("toolu_3", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")],
                "extra": {"response": _v2_usage(300, 200), "cost": 0.1},
            },
            {"role": "tool", "tool_call_id": "toolu_3", "content": "<returncode>0</returncode>\n" + PATCH,
             "extra": {}},
            {"role": "exit", "content": PATCH, "extra": {"exit_status": "Submitted", "submission": PATCH}},
        ],
    }  # fmt: skip


def test_mini_swe_agent_v2_tool_calls_pair_with_their_results(tmp_path: Path) -> None:
    """v2 records the provider's message with native tool calls (several per response) answered by
    role "tool" messages, and ends with a role "exit" message the model never saw. Before, the whole
    file was skipped (unknown role 'tool')."""
    run = _one(_write(tmp_path / "demo__demo-2.traj.json", mini_v2_toolcall_doc()))
    assert run.steps == 3
    assert _calls(run) == [
        (1, "bash", _cmd("ls")), (1, "bash", _cmd("cat x.py")),
        (3, "bash", _cmd("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")),
    ]  # fmt: skip
    assert [m.tool_call_id for m in run.messages if m.role == "tool"] == ["toolu_1", "toolu_2", "toolu_3"]
    assert [m.text for m in run.messages if m.role == "tool"][:2] == [
        "<returncode>0</returncode>\nx.py", "<returncode>0</returncode>\nbug",
    ]  # fmt: skip
    assert _roles(run)[-2:] == [("assistant", 3), ("tool", 3)]  # the exit message is not replayed
    assert run.messages[5] == Message("assistant", "I am done.", iteration=2)
    assert run.messages[6] == Message("user", "No tool calls found in the response.", iteration=2)
    assert run.usage == (
        Usage(prompt_tokens=100, completion_tokens=7, cached_tokens=0, requests=1),
        Usage(prompt_tokens=200, completion_tokens=7, cached_tokens=100, requests=1),
        Usage(prompt_tokens=300, completion_tokens=7, cached_tokens=200, requests=1),
    )
    assert run.model == "anthropic/claude-sonnet-4-5"
    assert run.metadata["mini_version"] == "2.0.0"
    assert _paired(run)


def test_mini_swe_agent_v2_text_actions_use_the_recorded_actions(tmp_path: Path) -> None:
    """v2's text-based model fences the action as ```mswea_bash_command and records it in
    extra.actions. Before, the v1 regex (```bash) found nothing: every action was replayed as text."""
    doc = mini_v2_toolcall_doc()
    doc["info"]["config"]["model"]["action_regex"] = r"```mswea_bash_command\s*\n(.*?)\n```"
    doc["messages"] = [
        {"role": "system", "content": "You are a shell agent."},
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": "THOUGHT: look.\n\n```mswea_bash_command\nls -la\n```",
         "extra": {"actions": [{"command": "ls -la"}], "response": _v2_usage(100, 0)}},
        {"role": "user", "content": "<returncode>0</returncode>\nx.py"},
        {"role": "assistant", "content": "THOUGHT: read.\n\n```mswea_bash_command\ncat x.py\n```",
         "extra": {"response": _v2_usage(150, 0)}},  # no extra.actions: the configured regex finds it
        {"role": "user", "content": "<returncode>0</returncode>\nbug"},
        {"role": "exit", "content": "", "extra": {"exit_status": "LimitsExceeded", "submission": ""}},
    ]  # fmt: skip
    run = _one(_write(tmp_path / "t.traj.json", doc))
    assert _calls(run) == [(1, "bash", _cmd("ls -la")), (2, "bash", _cmd("cat x.py"))]
    assert [(m.role, m.text) for m in run.messages[2:4]] == [
        ("assistant", "THOUGHT: look."), ("tool", "<returncode>0</returncode>\nx.py"),
    ]  # fmt: skip
    assert _paired(run)


def test_mini_swe_agent_v1_custom_action_regex_of_a_known_shape(tmp_path: Path) -> None:
    """A v1 config with another fence (``action_regex`` under ``info.config.agent``): the action is
    still a tool call. Before, it was read as text (the default ```bash regex found nothing)."""
    doc = mini_v2_toolcall_doc()
    doc["trajectory_format"] = "mini-swe-agent-1"
    doc["info"]["mini_version"] = "1.9.0"
    doc["info"]["config"] = {"agent": {"action_regex": r"<bash_code>(.*?)</bash_code>"}}
    doc["messages"] = [
        {"role": "system", "content": "You are a shell agent."},
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": "THOUGHT: look.\n<bash_code>ls</bash_code>"},
        {"role": "user", "content": "x.py"},
        {"role": "user", "content": PATCH},
    ]
    run = _one(_write(tmp_path / "t.traj.json", doc))
    assert _calls(run) == [(1, "bash", _cmd("ls"))]
    assert run.messages[2].text == "THOUGHT: look."
    assert run.messages[3] == Message("tool", "x.py", tool_call_id="call_1", name="bash", iteration=1)
    assert len(run.messages) == 4  # the patch echo is not replayed


def test_mini_swe_agent_an_unreadable_action_regex_skips_the_run_with_its_reason(tmp_path: Path) -> None:
    """A configured regex of another shape is never compiled (a hostile one could take forever); a
    text run without extra.actions is then skipped with the reason, never replayed as text."""
    doc = mini_v2_toolcall_doc()
    doc["trajectory_format"] = "mini-swe-agent-1"
    doc["info"]["config"] = {"agent": {"action_regex": r"(a+)+$ACTION:(.*)"}}
    doc["messages"] = [
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": "ACTION: ls"},
        {"role": "user", "content": "x.py"},
    ]
    path = _write(tmp_path / "t.traj.json", doc)
    loaded = load_runs([path])
    assert loaded.runs == ()
    [skipped] = loaded.skipped
    assert skipped.path == str(path)
    assert "action_regex" in skipped.reason and "1 text action" in skipped.reason


def test_mini_swe_agent_v2_multimodal_content_keeps_an_image_marker(tmp_path: Path) -> None:
    doc = mini_v2_toolcall_doc()
    doc["messages"][1]["content"] = [
        {"type": "text", "text": "Fix the bug in the screenshot."},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]
    run = _one(_write(tmp_path / "t.traj.json", doc))
    assert run.messages[1] == Message("user", "Fix the bug in the screenshot.\n[image]")


def test_mini_swe_agent_v2_responses_api_messages(tmp_path: Path) -> None:
    """v2's Responses API models record the response object (output items) and function_call_output
    items. Before, the file was skipped (unknown role None)."""
    doc = mini_v2_toolcall_doc()
    doc["info"]["config"]["model"]["model_name"] = "openai/gpt-5"
    response = {
        "object": "response", "id": "resp_1", "model": "gpt-5",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "Look first."}]},
            {"type": "function_call", "call_id": "fc_1", "name": "bash", "arguments": _cmd("ls")},
        ],
        "usage": {"input_tokens": 120, "output_tokens": 9, "input_tokens_details": {"cached_tokens": 64}},
        "extra": {"actions": [{"command": "ls", "tool_call_id": "fc_1"}], "cost": 0.02},
    }  # fmt: skip
    doc["messages"] = [
        {"role": "system", "content": "You are a shell agent."},
        {"role": "user", "content": "Fix the bug."},
        response,
        {"type": "function_call_output", "call_id": "fc_1", "output": "x.py", "extra": {}},
    ]
    run = _one(_write(tmp_path / "t.traj.json", doc))
    assert run.messages[2] == Message(
        "assistant", "Look first.", tool_calls=(ToolCall("fc_1", "bash", _cmd("ls")),), iteration=1
    )
    assert run.messages[3] == Message("tool", "x.py", tool_call_id="fc_1", name="bash", iteration=1)
    assert run.usage == (Usage(prompt_tokens=120, completion_tokens=9, cached_tokens=64, requests=1),)


def _loaded(tmp_path: Path, name: str, doc: Any) -> LoadedRuns:
    return load_runs([_write(tmp_path / name, doc)])


# ---------------------------------------------------------------- SWE-agent
def _swe_fc() -> dict[str, Any]:
    from test_importers import swe_fc_doc

    return swe_fc_doc()


def test_swe_agent_1x_replay_config_written_as_json_text(tmp_path: Path) -> None:
    """SWE-agent 1.x writes replay_config as the JSON text of the config (model_dump_json). Before,
    only an object was read: the model's name and the documented tool schemas were lost."""
    doc = _swe_fc()
    doc["replay_config"] = json.dumps(doc["replay_config"])
    run = _one(_write(tmp_path / "fc.traj", doc))
    assert run.model == "gpt-4o"
    tools = {t["function"]["name"]: t["function"] for t in run.tools}
    assert tools["goto"]["description"] == "moves the window"
    assert tools["goto"]["parameters"]["required"] == ["line_number"]


def test_swe_agent_retry_agent_attempts_are_one_run_each(tmp_path: Path) -> None:
    """A RetryAgent's .traj holds every attempt under ``attempts`` and a copy of the chosen one at
    the top level. Before, only the copy was replayed: the other attempts' model calls were lost."""
    first, second = _swe_fc(), _swe_fc()
    second["history"] = second["history"][:4]  # a shorter attempt: one model call
    second["trajectory"] = second["trajectory"][:1]
    doc = {"attempts": [first, second], **second, "info": {"best_attempt_idx": 1}}
    path = _write(tmp_path / "inst.traj", doc)
    loaded = load_runs([path])
    assert [(r.run_id, r.source, r.steps) for r in loaded.runs] == [
        ("swe-agent/inst/attempt0", f"{path}#attempt0", 3),
        ("swe-agent/inst/attempt1", f"{path}#attempt1", 1),
    ]  # the top-level copy of attempt 1 is not replayed a second time
    in_progress = _write(tmp_path / "running.traj", {"attempts": [first]})  # saved before choosing
    assert [r.run_id for r in load_runs([in_progress]).runs] == ["swe-agent/running/attempt0"]


def test_swe_agent_demonstrations_in_the_history_are_no_steps(tmp_path: Path) -> None:
    """``put_demos_in_history`` copies a demonstration's entries into the history (``is_demo``):
    the model saw them in every prompt, but they are no model call of this run. Before, each demo
    assistant entry was a step (and its action a call whose output was the demo's next entry)."""
    doc = _swe_fc()
    demo = [
        {"role": "user", "content": "DEMO task", "is_demo": True, "agent": "main"},
        {"role": "assistant", "content": "DEMO look", "thought": "DEMO look", "action": "ls",
         "is_demo": True, "agent": "main"},
        {"role": "user", "content": "DEMO output", "is_demo": True, "agent": "main"},
    ]  # fmt: skip
    doc["history"] = doc["history"][:1] + demo + doc["history"][1:]
    run = _one(_write(tmp_path / "demo.traj", doc))
    assert run.steps == 3
    assert [(m.role, m.text, m.iteration) for m in run.messages[1:4]] == [
        ("user", "DEMO task", 0), ("user", "DEMO look", 0), ("user", "DEMO output", 0),
    ]  # fmt: skip
    assert run.metadata["demonstration_messages"] == 1
    assert _calls(run)[0][0] == 1 and _paired(run)


def test_swe_agent_multimodal_content_parts_keep_an_image_marker(tmp_path: Path) -> None:
    """SWE-bench Multimodal problem statements are content parts with images. Before, an image part
    became an empty line: dropped without a marker."""
    doc = _swe_fc()
    doc["history"][1]["content"] = [
        {"type": "text", "text": "Fix the rendering shown here:", "cache_control": {"type": "ephemeral"}},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]
    run = _one(_write(tmp_path / "mm.traj", doc))
    assert run.messages[1] == Message("user", "Fix the rendering shown here:\n[image]")


# ---------------------------------------------------------------- tau2-bench
POLICY = "# Telecom agent policy\nHelp the user with their phone line."


def _tau2_sim(task_id: str, trial: int) -> dict[str, Any]:
    usage = {"prompt_tokens": 900, "completion_tokens": 20}
    return {
        "id": f"sim-{task_id}-{trial}", "task_id": task_id, "trial": trial, "seed": 300,
        "termination_reason": "user_stop", "agent_cost": 0.01, "user_cost": 0.01,
        "reward_info": {"reward": 1.0, "reward_basis": ["DB"]},
        "messages": [
            {"role": "assistant", "content": "Hi! How can I help?", "turn_idx": 0, "usage": usage},
            {"role": "user", "content": "My data is off.", "turn_idx": 1},
            {"role": "assistant", "content": None, "turn_idx": 2, "usage": usage, "cost": 0.001,
             "tool_calls": [{"id": "call_x", "name": "get_customer_by_phone",
                             "arguments": {"phone_number": "555-0100"}, "requestor": "assistant"}]},
            {"role": "tool", "id": "call_x", "content": "{\"customer_id\": \"C1\"}", "requestor": "assistant",
             "error": False, "turn_idx": 3},
            {"role": "assistant", "content": "Please toggle airplane mode.", "turn_idx": 4, "usage": usage},
            {"role": "user", "content": None, "turn_idx": 5,
             "tool_calls": [{"id": "call_u", "name": "toggle_airplane_mode", "arguments": {},
                             "requestor": "user"}]},
            {"role": "tool", "id": "call_u", "content": "Airplane mode: OFF", "requestor": "user",
             "error": False, "turn_idx": 6},
            {"role": "user", "content": "Done, it works. ###STOP###", "turn_idx": 7},
        ],
    }  # fmt: skip


def tau2_results() -> dict[str, Any]:
    return {
        "timestamp": "2025-06-10T12:00:00",
        "info": {
            "git_commit": "abc", "num_trials": 2, "max_steps": 100, "max_errors": 10,
            "user_info": {"implementation": "user_simulator", "llm": "gpt-4.1"},
            "agent_info": {"implementation": "llm_agent", "llm": "gpt-4.1-mini", "llm_args": {}},
            "environment_info": {"domain_name": "telecom", "policy": POLICY, "tool_defs": None},
        },
        "tasks": [{"id": "t1"}],
        "simulations": [_tau2_sim("t1", 0), _tau2_sim("t1", 1)],
    }  # fmt: skip


def test_tau2_bench_results_are_one_run_per_simulation(tmp_path: Path) -> None:
    """tau2-bench saves ``simulations`` with tool calls as ``{id, name, arguments}`` and tool messages
    naming the call by ``id``. Before, the file was skipped (unrecognized format). The simulated
    user's own tool calls and results never reached the agent and are left out."""
    path = _write(tmp_path / "telecom_gpt-4.1-mini.json", tau2_results())
    loaded = load_runs([path])
    assert loaded.skipped == ()
    assert [(r.run_id, r.source, r.format) for r in loaded.runs] == [
        ("tau-bench/telecom_gpt-4.1-mini/t1_trial0", f"{path}#t1_trial0", "tau-bench"),
        ("tau-bench/telecom_gpt-4.1-mini/t1_trial1", f"{path}#t1_trial1", "tau-bench"),
    ]
    run = loaded.runs[0]
    assert run.model == "gpt-4.1-mini"
    assert [(m.role, m.iteration) for m in run.messages] == [
        ("system", 0), ("assistant", 1), ("user", 1), ("assistant", 2), ("tool", 2), ("assistant", 3),
        ("user", 3),
    ]  # fmt: skip
    assert run.messages[0].text == POLICY
    call = ToolCall(
        "call_x", "get_customer_by_phone", json.dumps({"phone_number": "555-0100"}, separators=(",", ":"))
    )
    assert run.messages[3] == Message("assistant", None, tool_calls=(call,), iteration=2)
    assert run.messages[4].tool_call_id == "call_x" and run.messages[4].name == "get_customer_by_phone"
    assert "Airplane mode" not in " ".join(m.text for m in run.messages)
    assert run.usage == (Usage(prompt_tokens=900, completion_tokens=20, requests=1),) * 3
    assert [t["function"]["name"] for t in run.tools] == ["get_customer_by_phone"]
    assert run.metadata["reward"] == 1.0 and run.metadata["version"] == "tau2"
    assert "policy" in run.metadata["system_prompt"]
    assert _paired(run)


def test_tau2_bench_one_simulation_per_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "simulations" / "sim-t1-0.json", _tau2_sim("t1", 0))
    run = _one(path)
    assert (run.run_id, run.source, run.steps) == ("tau-bench/sim-t1-0/t1_trial0", str(path), 3)
    assert run.messages[0] == Message("assistant", "Hi! How can I help?", iteration=1)  # no policy saved
    assert run.metadata["system_prompt"] == "not recorded"


# ---------------------------------------------------------------- OpenHands SDK
def _oh(kind: str, event_id: str, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, "id": event_id, "timestamp": "2025-11-02T10:00:00", "source": "agent", **fields}


def _oh_action(rid: str, call_id: str, command: str) -> dict[str, Any]:
    call = {"id": call_id, "name": "terminal", "arguments": _cmd(command), "origin": "completion"}
    action = {"kind": "TerminalAction", "command": command}
    return _oh("ActionEvent", f"a-{call_id}", thought=[], tool_name="terminal", tool_call_id=call_id,
               tool_call=call, llm_response_id=rid, action=action)  # fmt: skip


def _oh_result(call_id: str, text: str) -> dict[str, Any]:
    observation = {"kind": "TerminalObservation", "content": [{"type": "text", "text": text}]}
    return _oh("ObservationEvent", f"o-{call_id}", source="environment", tool_name="terminal",
               tool_call_id=call_id, observation=observation, action_id=f"a-{call_id}")  # fmt: skip


def openhands_condensed_events() -> list[dict[str, Any]]:
    task = {"role": "user", "content": [{"type": "text", "text": "Fix the tests."}]}
    return [
        _oh("SystemPromptEvent", "sys", system_prompt={"type": "text", "text": "You are OpenHands."}),
        _oh("MessageEvent", "task", source="user", llm_message=task),
        _oh_action("r1", "c1", "ls"), _oh_action("r1", "c1b", "pwd"),
        _oh_result("c1", "LONG LISTING"), _oh_result("c1b", "/work"),
        _oh_action("r2", "c2", "pytest"), _oh_result("c2", "2 failed"),
        _oh("CondensationRequest", "req", source="environment"),
        _oh("Condensation", "cond", source="environment", forgotten_event_ids=["a-c1", "o-c1"],
            summary="I listed the repo; tests fail.", summary_offset=2, llm_response_id="r-sum"),
        _oh_action("r3", "c3", "cat test_x.py"), _oh_result("c3", "def test_x(): ..."),
    ]  # fmt: skip


def test_openhands_condensation_restarts_with_what_the_sdk_kept(tmp_path: Path) -> None:
    """The SDK's condenser forgets events (a response's calls together) and inserts its summary at
    ``summary_offset``; the next requests send only that view. Before, the Condensation was ignored:
    every later step was replayed with the forgotten outputs (LONG LISTING) in its prompt."""
    run = _one(_write(tmp_path / "conv.json", openhands_condensed_events()))
    assert run.steps == 3
    [restart] = run.restarts
    assert [(m.role, m.text, m.iteration) for m in run.messages[restart:]] == [
        ("system", "You are OpenHands.", 2),
        ("user", "Fix the tests.", 2),
        ("user", "I listed the repo; tests fail.", 2),
        ("user", 'terminal({"command":"pytest"})', 2),
        ("user", "2 failed", 2),
        ("assistant", "", 3),
        ("tool", "def test_x(): ...", 3),
    ]  # the whole first response went with its forgotten call (c1b too), its results with it
    assert "LONG LISTING" in " ".join(m.text for m in run.messages[:restart])  # the steps before saw it
    assert run.metadata["condensations"] == 1
    assert run.metadata["ignored_events"] == {"CondensationRequest": 1}
    [_, segment_after] = run.segments()
    assert segment_after.offset == 2
    assert _paired(run)


# ---------------------------------------------------------------- OpenHands V0 (output.jsonl)
def _v0_response(
    rid: str, text: str, calls: list[tuple[str, str, dict[str, Any]]], prompt: int
) -> dict[str, Any]:
    tool_calls = [
        {"id": c, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
        for c, n, a in calls
    ]
    message = {"role": "assistant", "content": text, "tool_calls": tool_calls}
    usage = {"prompt_tokens": prompt, "completion_tokens": 50, "prompt_tokens_details": {"cached_tokens": 0}}
    return {"id": rid, "model": "claude-3-5-sonnet-20241022", "choices": [{"index": 0, "message": message}],
            "usage": usage}  # fmt: skip


def _v0_meta(call_id: str, name: str, response: dict[str, Any]) -> dict[str, Any]:
    return {
        "function_name": name,
        "tool_call_id": call_id,
        "model_response": response,
        "total_calls_in_response": 1,
    }


def openhands_v0_instance(instance_id: str) -> dict[str, Any]:
    first = _v0_response("resp1", "Let me look.", [
        ("toolu_1", "execute_bash", {"command": "ls"}),
        ("toolu_2", "str_replace_editor", {"command": "view", "path": "/x.py"}),
    ], 1000)  # fmt: skip
    finish = _v0_response("resp2", "", [("toolu_3", "finish", {"message": "Done"})], 1500)
    run_meta = {"exit_code": 0, "working_dir": "/workspace", "py_interpreter_path": "/usr/bin/python",
                "prefix": "", "suffix": ""}  # fmt: skip
    history = [
        {"id": 0, "source": "agent", "action": "system", "args": {"content": "You are OpenHands agent."}},
        {"id": 1, "source": "user", "action": "message", "args": {"content": "Fix issue X"}},
        {"id": 2, "source": "user", "action": "recall", "args": {"query": "Fix issue X"}},
        {"id": 3, "source": "environment", "observation": "recall", "content": "", "extras": {}},
        {"id": 4, "source": "agent", "action": "run", "args": {"command": "ls", "thought": ""},
         "tool_call_metadata": _v0_meta("toolu_1", "execute_bash", first)},
        {"id": 5, "source": "agent", "action": "read", "args": {"path": "/x.py"},
         "tool_call_metadata": _v0_meta("toolu_2", "str_replace_editor", first)},
        {"id": 6, "source": "agent", "observation": "run", "content": "x.py", "cause": 4,
         "extras": {"command": "ls", "metadata": run_meta},
         "tool_call_metadata": _v0_meta("toolu_1", "execute_bash", first)},
        {"id": 7, "source": "agent", "observation": "read", "content": "print(1)", "cause": 5,
         "extras": {"path": "/x.py"}, "tool_call_metadata": _v0_meta("toolu_2", "str_replace_editor", first)},
        {"id": 8, "source": "environment", "observation": "agent_state_changed", "content": "", "extras": {}},
        {"id": 9, "source": "agent", "action": "finish",
         "args": {"final_thought": "Done", "thought": "All fixed."},
         "tool_call_metadata": _v0_meta("toolu_3", "finish", finish)},
    ]  # fmt: skip
    return {"instance_id": instance_id, "instruction": "Fix issue X", "history": history,
            "metadata": {"agent_class": "CodeActAgent",
                         "llm_config": {"model": "anthropic/claude-3-5-sonnet-20241022"}},
            "test_result": {"git_patch": ""}, "metrics": {"accumulated_cost": 0.1}}  # fmt: skip


RUN_LINES = (
    "[Current working directory: /workspace]\n[Python interpreter: /usr/bin/python]\n"
    "[Command finished with exit code 0]"
)


def test_openhands_v0_output_jsonl_is_one_run_per_instance(tmp_path: Path) -> None:
    """The V0 evaluation harness writes one instance per line, ``history`` a list of action and
    observation events tied to tool calls by ``tool_call_metadata``. Before, every line was skipped
    (unrecognized format): the file was lost from the figures."""
    pairs = openhands_v0_instance("repo__repo-2")
    pairs["history"] = [
        pairs["history"][:2],
        *[[a, o] for a, o in zip(pairs["history"][4:6], pairs["history"][6:8], strict=True)],
    ]
    condensed = openhands_v0_instance("repo__repo-3")
    condensed["history"].insert(8, {"id": 10, "source": "agent", "action": "condensation",
                                    "args": {"forgotten_event_ids": [4, 6], "summary": None}})  # fmt: skip
    lines = [openhands_v0_instance("repo__repo-1"), pairs, condensed]
    path = tmp_path / "output.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    loaded = load_runs([path])
    assert [(r.run_id, r.source, r.steps) for r in loaded.runs] == [
        ("openhands/repo__repo-1", f"{path}#repo__repo-1", 2),
        (
            "openhands/repo__repo-2",
            f"{path}#repo__repo-2",
            1,
        ),  # the oldest versions' [action, observation] pairs
    ]
    [skipped] = loaded.skipped
    assert skipped.path == f"{path}#repo__repo-3" and "1 condensation event" in skipped.reason
    run = loaded.runs[0]
    assert run.model == "anthropic/claude-3-5-sonnet-20241022"
    ls = ToolCall("toolu_1", "execute_bash", json.dumps({"command": "ls"}))
    view = ToolCall("toolu_2", "str_replace_editor", json.dumps({"command": "view", "path": "/x.py"}))
    assert run.messages == (
        Message("system", "You are OpenHands agent."),
        Message("user", "Fix issue X"),
        Message("assistant", "Let me look.", tool_calls=(ls, view), iteration=1),
        Message("tool", f"x.py\n{RUN_LINES}", tool_call_id="toolu_1", name="execute_bash", iteration=1),
        Message("tool", "print(1)", tool_call_id="toolu_2", name="str_replace_editor", iteration=1),
        Message("assistant", "All fixed.", iteration=2),
    )  # fmt: skip
    assert run.usage == (
        Usage(prompt_tokens=1000, completion_tokens=50, requests=1),
        Usage(prompt_tokens=1500, completion_tokens=50, requests=1),
    )
    assert run.metadata["ignored_events"] == {"agent_state_changed": 1, "recall": 2}
    assert run.read_only_calls == frozenset({"toolu_2"})  # the editor's view, as in the SDK's logs
    assert _paired(run)


def test_openhands_v0_text_actions_are_skipped_with_the_reason(tmp_path: Path) -> None:
    doc = openhands_v0_instance("old")
    for event in doc["history"]:
        event.pop("tool_call_metadata", None)
    loaded = _loaded(tmp_path, "old.json", doc)
    assert loaded.runs == ()
    [skipped] = loaded.skipped
    assert "without tool_call_metadata" in skipped.reason and "2 agent actions" in skipped.reason


def test_openhands_sdk_harness_output_jsonl_is_one_run_per_instance(tmp_path: Path) -> None:
    """The SDK-based harness (OpenHands/benchmarks) writes ``output.jsonl`` with the SDK's events in
    ``history`` (its condenser on by default) and ``attempt`` for a retried instance. Before, every
    line was skipped (unrecognized format)."""
    metadata = {"llm": {"model": "litellm_proxy/claude-sonnet-4-5"}, "dataset": "swe-bench"}
    lines = [
        {"instance_id": "repo__repo-7", "attempt": 1, "test_result": {}, "metadata": metadata,
         "history": openhands_condensed_events()},
        {"instance_id": "repo__repo-7", "attempt": 2, "test_result": {}, "metadata": metadata,
         "history": openhands_condensed_events()[:8]},
    ]  # fmt: skip
    path = tmp_path / "output.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    loaded = load_runs([path])
    assert loaded.skipped == ()
    assert [(r.run_id, r.source, r.steps, len(r.restarts)) for r in loaded.runs] == [
        ("openhands/repo__repo-7", f"{path}#repo__repo-7", 3, 1),
        ("openhands/repo__repo-7/attempt2", f"{path}#repo__repo-7/attempt2", 2, 0),
    ]
    assert {r.model for r in loaded.runs} == {"litellm_proxy/claude-sonnet-4-5"}
    assert (
        loaded.runs[0].messages
        == load_runs([_write(tmp_path / "c.json", openhands_condensed_events())]).runs[0].messages
    )
