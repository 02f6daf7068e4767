"""Format variants of Claude Code sessions and Codex rollouts from other CLI versions, written by hand.

Each test is one variant the importers met in the wild (or read in the agents' own source): what
the requests sent must be what the replay sends, and what cannot be replayed is named with its
reason, never dropped in silence.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from structlog.testing import capture_logs

from tiered_agent._messages import Usage
from tiered_agent.bench._importers import SkippedInput, load_runs
from tiered_agent.bench._recorded import RecordedRun

SESSION = "0e0e0e0e-0000-4000-8000-00000000000b"


def _write(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _texts(run: RecordedRun) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in run.messages]


# ---------------------------------------------------------------- Claude Code: the parentUuid tree
def _entry(kind: str, uuid: str, parent: str | None, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "parentUuid": parent, "isSidechain": False, "sessionId": SESSION, "version": "2.1.30", "type": kind,
        "message": message, "uuid": uuid, "timestamp": "2026-02-01T10:00:00.000Z", **extra,
    }  # fmt: skip


def _prompt(uuid: str, parent: str | None, text: str) -> dict[str, Any]:
    return _entry("user", uuid, parent, {"role": "user", "content": text})


def _reply(uuid: str, parent: str | None, msg: str, text: str, prompt: int) -> dict[str, Any]:
    usage = {"input_tokens": prompt, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0,
             "output_tokens": 5}  # fmt: skip
    message = {"id": msg, "model": "claude-opus-4-6", "role": "assistant", "usage": usage,
               "content": [{"type": "text", "text": text}]}  # fmt: skip
    return _entry("assistant", uuid, parent, message)


def _call(uuid: str, parent: str, msg: str, call_id: str, prompt: int) -> dict[str, Any]:
    entry = _reply(uuid, parent, msg, "", prompt)
    entry["message"]["content"] = [
        {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "ls"}}
    ]
    return entry


def _result(uuid: str, parent: str, call_id: str, text: str) -> dict[str, Any]:
    content = [{"type": "tool_result", "tool_use_id": call_id, "content": text}]
    return _entry("user", uuid, parent, {"role": "user", "content": content})


def _progress(uuid: str, parent: str | None) -> dict[str, Any]:
    return {"type": "progress", "uuid": uuid, "parentUuid": parent, "sessionId": SESSION, "data": {}}


def test_claude_code_a_cleared_context_restarts_the_history(tmp_path: Path) -> None:
    """Accepting a plan with "clear context" (2.1) starts a new chain in the same file: its root is
    a progress entry whose parent is null. The requests after it sent nothing from before."""
    records = [
        _prompt("u1", None, "Plan the change."),
        _reply("a1", "u1", "m1", "Here is the plan.", 900),
        _prompt("u2", "a1", "yes"),
        _reply("a2", "u2", "m2", "Ready.", 950),
        _progress("p1", None),
        _prompt("u3", "p1", "Implement the following plan: ..."),
        _reply("a3", "u3", "m3", "Done.", 400),
    ]
    loaded = load_runs([_write(tmp_path / f"{SESSION}.jsonl", records)], strict=True)
    [run] = loaded.runs
    assert run.steps == 3 and run.restarts == (4,)
    _, second = run.segments()
    assert [m.text for m in second.messages] == ["Implement the following plan: ...", "Done."]
    assert run.metadata["context_resets"] == 1 and "compactions" not in run.metadata


def test_claude_code_a_rewound_branch_is_left_out_and_named(tmp_path: Path) -> None:
    """``/rewind`` writes nothing: the next prompt links to an earlier entry and the branch after it
    stays in the file. Later requests did not send it; its model calls are left out with a reason."""
    records = [
        _prompt("u1", None, "Fix the bug."),
        _call("a1", "u1", "m1", "t1", 1000),
        _result("r1", "a1", "t1", "a.py b.py"),
        _reply("a2", "r1", "m2", "Fixed in a.py.", 1100),
        _prompt("u2", "a2", "Now delete b.py."),  # the branch the user rewound
        _call("a3", "u2", "m3", "t2", 1200),
        _result("r2", "a3", "t2", "removed"),
        _reply("a4", "r2", "m4", "Deleted.", 1300),
        _prompt("u3", "a2", "Now rename b.py."),  # rewound to a2
        _reply("a5", "u3", "m5", "Renamed.", 1150),
    ]
    path = _write(tmp_path / f"{SESSION}.jsonl", records)
    loaded = load_runs([path])
    [run] = loaded.runs
    assert _texts(run) == [
        ("user", "Fix the bug."), ("assistant", ""), ("tool", "a.py b.py"), ("assistant", "Fixed in a.py."),
        ("user", "Now rename b.py."), ("assistant", "Renamed."),
    ]  # fmt: skip
    assert [u.prompt_tokens for u in run.usage if u is not None] == [1000, 1100, 1150]
    assert run.metadata["rewound_steps"] == 2 and run.metadata["off_path_entries"] == 4
    assert loaded.skipped == (
        SkippedInput(
            f"{path}#rewound",
            "claude-code: 2 model calls on a branch the user rewound (no later request sent them) left out; "
            "the conversation that went on is replayed",
        ),
    )


def test_claude_code_a_prompt_no_request_sent_is_left_out(tmp_path: Path) -> None:
    """A message typed while a tool ran, then interrupted, on a branch of its own (parented to a stale
    system entry); the next request links past it."""
    records = [
        _prompt("u1", None, "Run the tests."),
        _call("a1", "u1", "m1", "t1", 1000),
        {"type": "system", "subtype": "turn_duration", "uuid": "s1", "parentUuid": "u1", "durationMs": 5},
        _result("r1", "a1", "t1", "3 passed"),
        _prompt("u2", "s1", "are they still running?"),
        _entry(
            "user",
            "u3",
            "u2",
            {"role": "user", "content": [{"type": "text", "text": "[Request interrupted]"}]},
        ),
        _reply("a2", "r1", "m2", "All 3 pass.", 1050),
    ]
    [run] = load_runs([_write(tmp_path / f"{SESSION}.jsonl", records)], strict=True).runs
    assert _texts(run) == [
        ("user", "Run the tests."),
        ("assistant", ""),
        ("tool", "3 passed"),
        ("assistant", "All 3 pass."),
    ]
    assert run.metadata["off_path_entries"] == 2 and "rewound_steps" not in run.metadata


def test_claude_code_parallel_results_linked_to_their_own_calls_stay(tmp_path: Path) -> None:
    """Parallel calls of one response: each result links to its own call entry (and carries a text
    block), so only the last is on the next request's chain; all are part of that request."""
    first, second = _call("a1", "u1", "m1", "t1", 1000), _call("a2", "a1", "m1", "t2", 1000)
    extra = _result("r1", "a1", "t1", "one")
    extra["message"]["content"].append({"type": "text", "text": "note"})
    records = [_prompt("u1", None, "Go."), first, second, extra, _result("r2", "a2", "t2", "two"),
               _reply("a3", "r2", "m2", "Both done.", 1100)]  # fmt: skip
    [run] = load_runs([_write(tmp_path / f"{SESSION}.jsonl", records)], strict=True).runs
    assert [m.role for m in run.messages] == ["user", "assistant", "tool", "tool", "user", "assistant"]
    assert "off_path_entries" not in run.metadata


def test_claude_code_a_chain_that_leaves_the_file_keeps_the_file_order(tmp_path: Path) -> None:
    """A parent Claude Code never wrote (or a damaged line): no path to trust, file order."""
    records = [
        _prompt("u1", None, "One."),
        _reply("a1", "u1", "m1", "1", 100),
        _prompt("u2", "gone", "Two."),
        _reply("a2", "u2", "m2", "2", 200),
    ]
    [run] = load_runs([_write(tmp_path / f"{SESSION}.jsonl", records)], strict=True).runs
    assert [m.text for m in run.messages] == ["One.", "1", "Two.", "2"] and run.restarts == ()
    assert run.usage[1] == Usage(200, 5, 0, 1)


# ---------------------------------------------------------------- Codex rollouts
def _line(kind: str, **payload: Any) -> dict[str, Any]:
    return {"timestamp": "2026-02-01T10:00:00.000Z", "type": kind, "payload": payload}


def _user(text: str) -> dict[str, Any]:
    return _line("response_item", type="message", role="user", content=[{"type": "input_text", "text": text}])


def _answer(text: str) -> dict[str, Any]:
    return _line(
        "response_item", type="message", role="assistant", content=[{"type": "output_text", "text": text}]
    )


def _count(prompt: int) -> dict[str, Any]:
    usage = {"input_tokens": prompt, "cached_input_tokens": 0, "output_tokens": 7}
    return _line(
        "event_msg", type="token_count", info={"last_token_usage": usage, "total_token_usage": {"n": prompt}}
    )


def test_codex_a_rolled_back_turn_is_left_out_and_named(tmp_path: Path) -> None:
    """``thread_rolled_back`` (Esc Esc, newer CLIs): Codex drops the last ``num_turns`` user turns from
    its history; the requests after it never sent them."""
    records = [
        _line("session_meta", id="s1", cli_version="0.80.0"),
        _user("<environment_context>cwd</environment_context>"),
        _user("List the files."),
        _answer("a.py"),
        _count(1000),
        _user("Delete a.py."),
        _line(
            "response_item",
            type="function_call",
            name="shell",
            arguments='{"command":["rm","a.py"]}',
            call_id="c1",
        ),
        _count(1100),
        _line("response_item", type="function_call_output", call_id="c1", output="removed"),
        _answer("Deleted."),
        _count(1200),
        _line("event_msg", type="thread_rolled_back", num_turns=1),
        _user("Rename a.py."),
        _answer("Renamed."),
        _count(1050),
    ]
    path = _write(tmp_path / "rollout-rb.jsonl", records)
    loaded = load_runs([path])
    [run] = loaded.runs
    assert _texts(run) == [
        ("user", "<environment_context>cwd</environment_context>"), ("user", "List the files."),
        ("assistant", "a.py"), ("user", "Rename a.py."), ("assistant", "Renamed."),
    ]  # fmt: skip
    assert [u.prompt_tokens for u in run.usage if u is not None] == [1000, 1050]
    assert run.metadata["rolled_back_steps"] == 2
    assert loaded.skipped == (
        SkippedInput(
            f"{path}#rolled-back",
            "codex: 2 model calls of turns the user rolled back (thread_rolled_back) left out; "
            "the conversation that went on is replayed",
        ),
    )


def test_codex_rolling_back_more_turns_than_recorded_keeps_the_context(tmp_path: Path) -> None:
    records = [
        _line("session_meta", id="s1"),
        _line(
            "response_item",
            type="message",
            role="developer",
            content=[{"type": "input_text", "text": "rules"}],
        ),
        _user("One."),
        _answer("1"),
        _count(100),
        _line("event_msg", type="thread_rolled_back", num_turns=5),
        _user("Two."),
        _answer("2"),
        _count(90),
    ]
    [run] = load_runs([_write(tmp_path / "rollout-rb2.jsonl", records)]).runs
    assert _texts(run) == [("system", "rules"), ("user", "Two."), ("assistant", "2")]
    assert run.usage == (Usage(90, 7, 0, 1),)


def test_codex_a_token_count_not_wrapped_in_info_is_read(tmp_path: Path) -> None:
    """Older CLIs wrote the usage itself as the ``token_count`` payload (no ``info``)."""
    usage = {"input_tokens": 1500, "cached_input_tokens": 1024, "output_tokens": 30}
    records = [
        _line("session_meta", id="s1"),
        _user("Hi."),
        _answer("Hello."),
        _line("event_msg", type="token_count", **usage),
    ]
    [run] = load_runs([_write(tmp_path / "rollout-flat-count.jsonl", records)], strict=True).runs
    assert run.usage == (Usage(1500, 30, 1024, 1),)


def test_claude_code_documents_and_the_providers_own_tools_are_replayed_as_text(tmp_path: Path) -> None:
    """A PDF attached to a prompt or returned by a tool is a ``document`` block; a web search the API
    ran inside a response is a ``server_tool_use`` block and a ``web_search_tool_result`` block of the
    assistant message. Later requests send all of them: none may vanish from the replay."""
    pdf = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
    }
    prompt = _entry(
        "user", "u1", None, {"role": "user", "content": [{"type": "text", "text": "Summarize."}, pdf]}
    )
    search = {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "web_search",
        "input": {"query": "pdf spec"},
    }
    result = {"type": "web_search_result", "title": "PDF 2.0", "url": "https://example.org/pdf",
              "encrypted_content": "Zm9v"}  # fmt: skip
    found = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [result]}
    reply = _reply("a1", "u1", "m1", "", 900)
    reply["message"]["content"] = [search, found, {"type": "text", "text": "It is a PDF spec."}]
    [run] = load_runs([_write(tmp_path / f"{SESSION}.jsonl", [prompt, reply])], strict=True).runs
    assert _texts(run) == [
        ("user", "Summarize.\n[document]"),
        ("assistant", '[web_search: {"query":"pdf spec"}]\n[web_search_tool_result]\nPDF 2.0 https://example.org/pdf\n'
                      "It is a PDF spec."),
    ]  # fmt: skip


def test_codex_an_encrypted_compaction_is_marked_not_lost(tmp_path: Path) -> None:
    """Remote compaction (OpenAI's ``/responses/compact``) keeps the history as an encrypted
    ``compaction`` item: its text is not in the log, its place and size are."""
    summary = {"type": "compaction", "encrypted_content": "x" * 4000}
    kept = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix it."}]},
        summary,
    ]
    records = [
        _line("session_meta", id="s1"),
        _user("Fix it."),
        _answer("Looking."),
        _count(5000),
        _line("compacted", message="", replacement_history=kept),
        _answer("Fixed."),
        _count(1500),
    ]
    [run] = load_runs([_write(tmp_path / "rollout-enc.jsonl", records)], strict=True).runs
    _, after = run.segments()
    assert _texts(after) == [
        ("user", "Fix it."),
        ("user", "[compacted history: the provider's encrypted summary, 4,000 characters, not replayable]"),
        ("assistant", "Fixed."),
    ]


def test_codex_a_flat_rollout_with_enveloped_lines_reads_both(tmp_path: Path) -> None:
    """An older flat rollout (session line first, bare items) with enveloped lines among its items:
    the bare items were ignored with them (a run of 0 steps, skipped)."""
    records = [
        {"id": "s1", "timestamp": "2025-06-01T09:00:00.000Z", "instructions": "Be brief."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List the files."}]},
        {"type": "function_call", "name": "shell", "arguments": '{"command":["ls"]}', "call_id": "c1"},
        {"record_type": "state"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.py"},
        _line("event_msg", type="agent_message", message="One file."),
        _answer("One file: a.py."),
        _count(800),
    ]
    [run] = load_runs([_write(tmp_path / "rollout-mixed.jsonl", records)], strict=True).runs
    assert [m.role for m in run.messages] == ["user", "assistant", "tool", "assistant"]
    assert run.usage == (None, Usage(800, 7, 0, 1))


def test_claude_code_a_sidechain_line_written_before_its_parent_stays_in_its_thread(tmp_path: Path) -> None:
    """A subagent's entries out of order (a log concatenated or merged by a tool): the thread is the
    chain's, not the file order's (a child before its parent made a thread of its own, of 0 steps)."""
    prompt = {**_prompt("s1", None, "Find the callers."), "isSidechain": True, "agentId": "a1b2"}
    call = {**_call("s2", "s1", "m1", "t1", 300), "isSidechain": True, "agentId": "a1b2"}
    result = {**_result("s3", "s2", "t1", "parse.py:3"), "isSidechain": True, "agentId": "a1b2"}
    answer = {**_reply("s4", "s3", "m2", "One caller.", 320), "isSidechain": True, "agentId": "a1b2"}
    loaded = load_runs([_write(tmp_path / "agent-a1b2.jsonl", [prompt, call, answer, result])])
    [run] = loaded.runs
    assert run.run_id.endswith("/agent-a1b2") and run.steps == 2 and not loaded.skipped


# ---------------------------------------------------------------- one session in two files
def test_a_session_copied_into_another_file_is_replayed_once(tmp_path: Path) -> None:
    """A backup of ``~/.claude/projects`` next to the original: the same run twice, skipped the second
    time naming the first; a fork that copied the history and went on is kept, its copied calls
    replayed but not counted (``counted_from``; tests/test_copied_sessions.py), without a warning."""
    records = [
        _prompt("u1", None, "Fix the bug."),
        _call("a1", "u1", "m1", "toolu_9f8e", 1000),
        _result("r1", "a1", "toolu_9f8e", "a.py"),
        _reply("a2", "r1", "m2", "Fixed.", 1100),
    ]
    fork = [*records, _prompt("u2", "a2", "And the docs?"), _call("a3", "u2", "m3", "toolu_7d6c", 1200)]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _write(tmp_path / "a" / f"{SESSION}.jsonl", records)
    _write(tmp_path / "b" / f"{SESSION}.jsonl", records)
    _write(tmp_path / "b" / "fork.jsonl", fork)
    with capture_logs() as logs:
        loaded = load_runs([tmp_path / "a", tmp_path / "b"])
    assert [(r.source, r.steps, r.counted_from) for r in loaded.runs] == [
        (str(first), 2, 0),
        (str(tmp_path / "b" / "fork.jsonl"), 3, 2),
    ]
    assert loaded.skipped == (
        SkippedInput(
            str(tmp_path / "b" / f"{SESSION}.jsonl"),
            f"the same conversation and usage as claude-code/{SESSION}, which is replayed once",
        ),
    )
    assert [e for e in logs if e["event"] == "importers.shared_calls"] == []


def test_claude_code_a_response_written_again_later_is_one_step(tmp_path: Path) -> None:
    """A response's entry written again after the next response began (under another ``uuid``): the
    same API response, not a second step, and its usage is counted once."""
    again = _call("a1-again", "r1", "m1", "t1", 1000)
    records = [
        _prompt("u1", None, "Go."),
        _call("a1", "u1", "m1", "t1", 1000),
        _result("r1", "a1", "t1", "done"),
        _reply("a2", "r1", "m2", "Done.", 1100),
        again,
        _prompt("u2", "a2", "Thanks."),
        _reply("a3", "u2", "m3", "You're welcome.", 1200),
    ]
    [run] = load_runs([_write(tmp_path / f"{SESSION}.jsonl", records)], strict=True).runs
    assert [u.prompt_tokens for u in run.usage if u is not None] == [1000, 1100, 1200]
    assert [m.role for m in run.messages] == ["user", "assistant", "tool", "assistant", "user", "assistant"]


def test_codex_a_rollback_to_the_compactions_first_turn_keeps_the_restart(tmp_path: Path) -> None:
    """Rolled back to the first user turn of what a compaction kept: the history from the cut on is
    still what the agent kept, not the conversation before the compaction."""
    kept = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Summary: done."}]}
    ]
    records = [
        _line("session_meta", id="s1"),
        _user("Long task."),
        _answer("Working."),
        _count(9000),
        _line("compacted", message="", replacement_history=kept),
        _answer("Continuing."),
        _count(2000),
        _line("event_msg", type="thread_rolled_back", num_turns=3),
        _user("Start over."),
        _answer("OK."),
        _count(1500),
    ]
    [run] = load_runs([_write(tmp_path / "rollout-rb3.jsonl", records)]).runs
    assert run.restarts == (2,) and [m.text for m in run.segments()[-1].messages] == ["Start over.", "OK."]
