"""Hostile input, always: every parser meets arbitrary text, every preset meets arbitrary histories.

Property tests (Hypothesis). The parsers of the working memory (shell commands, tool calls and
outputs, code), the heuristics shared with condensing, the aging text rules and the condensed
notes, the digest, and the importers' readers of recorded runs get arbitrary text (quotes of
every kind, heredocs, NUL and astral characters, patches, JSON fragments): each returns, never
raises. Then arbitrary runs (random quoting, heredocs, outputs of 0-50,000 characters and
binary-like ones, parallel calls, empty replies) go through every preset via the public
``Agent`` with ``testing.FunctionModel``: every run ends, no context step raises (a step error
would be recorded in the trace), and every prompt keeps its call/result pairs valid.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiered_agent import Agent, RunLimits
from tiered_agent._messages import Message, ToolCall
from tiered_agent._result import StopReason
from tiered_agent._trace import StepError, read_trace
from tiered_agent.bench._importers import load_runs
from tiered_agent.context._heuristics import error_line, looks_like_error, parse_exit_code
from tiered_agent.context._presets import PRESETS
from tiered_agent.context.aging._condense import condensed_line, condensed_note
from tiered_agent.context.aging._jsonform import json_fields
from tiered_agent.context.aging._novel import novel_lines
from tiered_agent.context.aging._reasoning import cut_arguments, first_sentence, shorten_reasoning
from tiered_agent.context.aging._refs import refs
from tiered_agent.context.pipeline._build import validate_pairs
from tiered_agent.context.summary._digest import digest
from tiered_agent.context.summary.memory._calls import call_facts
from tiered_agent.context.summary.memory._code import definitions, grep_hits, numbered, patch_touches
from tiered_agent.context.summary.memory._outputs import output_facts
from tiered_agent.context.summary.memory._shell import is_test_command, shell_facts, shell_files
from tiered_agent.context.summary.memory._text import (
    compact_json,
    constraints,
    decision,
    identifiers,
    is_context_block,
    is_feedback,
    latest_todo,
    task_text,
)
from tiered_agent.testing import FunctionModel, scripted_tools

# Pieces agent runs are made of, and the ones parsers trip on.
SNIPPETS = [
    "echo ''",
    'grep -n "" f.py',
    "sed -i '' 's/a/b/' f.py",
    "sed -n '10,20p' src/app.py",
    "nl -ba a.py | sed -n '1,5p'",
    "cat <<'EOF' > a.py\ndef f():\n    return 1\nEOF",
    "<<EOF",
    "<<-'X'",
    "'",
    '"',
    "\\",
    "''",
    '""',
    '"""',
    "\x00",
    "\x1b[31m",
    "😀𝒳",
    "$(ls)",
    "`x`",
    " | ",
    " && ",
    ";",
    "2>&1",
    "> /dev/null",
    "\n",
    "\r\n",
    "\t",
    '*** Begin Patch\n*** Update File: a.py\n@@\n-x = \'\'\n+x = """doc"""\n*** End Patch',
    "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,3 @@\n",
    "<returncode>1</returncode>",
    "<output>\n",
    'Traceback (most recent call last):\n  File "a.py", line 3\nValueError: bad',
    "exit code: 2",
    "[The command completed with exit code 1.]",
    "   12\tdef f():",
    "     3→class A:",
    "a.py:3:x = 1",
    "- [ ] todo\n- [x] done",
    "THOUGHT: I will fix it.",
    '{"a": [1, {"b": null}], "c": "' + "x" * 250 + '"}',
    "src/app.py",
    "parse_args",
    "12345",
    "pytest -q tests/test_x.py",
    "=== 2 failed, 3 passed in 0.5s ===",
    "(Open file: /repo/a.py)",
]
hostile = st.lists(st.one_of(st.sampled_from(SNIPPETS), st.text(max_size=40)), max_size=14).map("".join)
NAMES = [
    "bash",
    "run_shell",
    "shell",
    "str_replace_editor",
    "read_file",
    "Read",
    "Edit",
    "Write",
    "Bash",
    "apply_patch",
    "update_plan",
    "TodoWrite",
    "think",
    "finish",
    "open",
    "edit",
    "search_dir",
    "get_user_details",
    "book_reservation",
    "context_retrieve",
]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | hostile,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
KEYS = ["command", "cmd", "path", "file_path", "old_str", "new_str", "content", "plan", "input", "view_range"]
arguments = st.one_of(
    hostile,
    st.dictionaries(st.sampled_from(KEYS), json_values, max_size=5).map(json.dumps),
    st.lists(hostile, min_size=1, max_size=3).map(lambda a: json.dumps({"command": ["bash", "-lc", *a]})),
)
# HOSTILE_EXAMPLES=5000 pytest tests/test_hostile.py searches longer (the suite stays quick).
EXAMPLES = int(os.environ.get("HOSTILE_EXAMPLES", "150"))
FAST = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ----------------------------------------------------------------------------- parsers
@FAST
@given(hostile)
def test_shell_commands_parse(command: str) -> None:
    facts = shell_facts(command)
    assert all(isinstance(t.path, str) for t in facts.touches)
    assert isinstance(is_test_command(command), bool) and isinstance(shell_files(command), list)


@FAST
@given(st.sampled_from(NAMES) | st.text(max_size=12), arguments, hostile)
def test_tool_calls_and_their_outputs_parse(name: str, args: str, output: str) -> None:
    call = ToolCall("c1", name, args)
    facts = call_facts(call)
    assert facts.id == "c1" and facts.name == name
    out = output_facts(facts, Message("tool", output, tool_call_id="c1", name=name, iteration=1))
    assert isinstance(out.failed, bool)


@FAST
@given(hostile)
def test_text_heuristics_and_rules_take_any_text(text: str) -> None:
    code = parse_exit_code(text)
    assert code is None or isinstance(code, int)
    assert isinstance(looks_like_error(text, code), bool) and isinstance(error_line(text), str)
    lines = text.splitlines()
    assert isinstance(numbered(lines), list) and isinstance(grep_hits(lines), dict)
    definitions(list(enumerate(lines, start=1)))
    patch_touches(text)
    decision(text), task_text(text), constraints(text), identifiers(text), latest_todo([text])
    is_feedback(text), is_context_block(text), compact_json(text)
    refs(text), json_fields(text), first_sentence(text), cut_arguments(text, 40)
    for mode in ("first", "novel", "keep"):
        assert isinstance(shorten_reasoning(text, mode, set()), str)  # type: ignore[arg-type]
    elided = novel_lines(lines, set(), head=2, max_lines=5, line_chars=80)
    assert elided.shown <= elided.total == len(lines)


@st.composite
def histories(draw: st.DrawFn, max_iterations: int = 6) -> list[Message]:
    """A recorded-looking history: a task, then iterations of calls and their outputs."""
    history = [Message("system", "You are an agent."), Message("user", draw(hostile) or "task")]
    for k in range(1, draw(st.integers(1, max_iterations)) + 1):
        calls = tuple(
            ToolCall(f"c{k}_{n}", draw(st.sampled_from(NAMES)), draw(arguments))
            for n in range(draw(st.integers(0, 3)))
        )
        history.append(Message("assistant", draw(st.none() | hostile), calls, iteration=k))
        history += [
            Message("tool", draw(hostile), tool_call_id=c.id, name=c.name, iteration=k) for c in calls
        ]
        if not calls:
            history.append(Message("user", draw(hostile), iteration=k))
    return history


@FAST
@given(histories())
def test_the_digest_and_condensed_notes_take_any_history(history: list[Message]) -> None:
    last = max(m.iteration for m in history)
    summary = digest(None, history, 1, last, max_chars=600)
    assert summary.text and len(summary.text) <= 600 and summary.last == last
    groups = [(k, tuple(m for m in history if m.iteration == k)) for k in range(1, last + 1)]
    for k, messages in groups:
        assert condensed_line(k, messages).startswith(f"{k}. ")
    note = condensed_note(groups[:2], retrieval=True, later=tuple(history[-3:]), referred=8, novel=5)
    assert note.role == "user" and note.text.startswith("[Iterations 1")


# ----------------------------------------------------------------------------- importers
def _records(draw: st.DrawFn) -> list[Any]:
    """JSON records shaped loosely like the formats the importers read (and not)."""
    shapes = st.sampled_from(
        [
            {"type": "user", "message": {"role": "user", "content": "x"}},
            {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use"}]}},
            {"type": "response_item", "payload": {"type": "function_call"}},
            {"type": "session_meta", "payload": {}},
            {"v": 1, "type": "message", "message": {"role": "user", "content": "x"}},
            {"v": 1, "type": "run_start", "run_id": "r", "model": "m", "task": "t"},
            {"kind": "ActionEvent", "source": "agent"},
            {"trajectory": [], "info": {}},
            {"messages": [{"role": "system", "content": "s"}]},
        ]
    )
    records = []
    for _ in range(draw(st.integers(0, 6))):
        base = dict(draw(shapes))
        base.update(draw(st.dictionaries(st.text(max_size=10), json_values, max_size=3)))
        records.append(base)
    return records


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_importers_skip_what_they_cannot_read_and_never_raise(data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(["bytes", "text", "jsonl", "json"]))
    if kind == "bytes":
        content = data.draw(st.binary(max_size=300))
    elif kind == "text":
        content = data.draw(hostile).encode("utf-8", "surrogatepass")
    else:
        records = _records(data.draw)
        if kind == "json":
            content = json.dumps(records if data.draw(st.booleans()) else {"records": records}).encode()
        else:
            content = "\n".join(json.dumps(r) for r in records).encode()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / data.draw(st.sampled_from(["run.jsonl", "x.json", "a.traj", "b.traj.json"]))
        path.write_bytes(content)
        loaded = load_runs([path])
    assert len(loaded.runs) + len(loaded.skipped) >= 1
    for run in loaded.runs:
        assert run.steps >= 1


# ----------------------------------------------------------------------------- every preset, live
OUTPUTS = st.one_of(
    hostile,
    st.integers(0, 50_000).map(lambda n: ("line of output src/app.py:12 value_42\n" * (n // 38 + 1))[:n]),
    st.binary(max_size=400).map(lambda b: b.decode("latin-1")),
    st.just(""),
)


@st.composite
def scripts(draw: st.DrawFn) -> tuple[list[Message], dict[str, str]]:
    """The model's replies (calls, parallel calls, empty replies, then an answer) and the tools'
    outputs, by the ``ref`` each call passes."""
    replies: list[Message] = []
    outputs: dict[str, str] = {}
    for k in range(draw(st.integers(1, 14))):
        if draw(st.integers(0, 9)) == 0:
            replies.append(Message("assistant", draw(st.sampled_from(["", None, " "]))))  # an empty reply
            continue
        calls = []
        for n in range(draw(st.integers(1, 3))):  # parallel calls
            ref = f"k{k}_{n}"
            name = draw(st.sampled_from(["bash", "read"]))
            value = draw(hostile | st.sampled_from(["src/app.py", "echo ''", "sed -i '' 's/a/b/' f"]))
            key = "command" if name == "bash" else "path"
            calls.append(ToolCall(ref, name, json.dumps({key: value, "ref": ref})))
            outputs[ref] = draw(OUTPUTS)
        replies.append(Message("assistant", draw(st.none() | hostile), tuple(calls)))
    replies.append(Message("assistant", "done"))
    return replies, outputs


async def _run_preset(preset: str, replies: list[Message], outputs: dict[str, str], folder: Path) -> None:
    model = FunctionModel.scripted(replies, window=64_000)
    agent = Agent(
        model,
        tools=scripted_tools(outputs),
        context=preset,
        limits=RunLimits(max_iterations=len(replies) + 1),
        trace_dir=folder,
    )
    result = await agent.run("Work on src/app.py; quote 'it' \"carefully\" \\ \x00 😀")
    assert result.stop_reason in (StopReason.ANSWERED, StopReason.ERROR), result.error
    if result.stop_reason == StopReason.ERROR:  # only three empty replies in a row end a run
        assert "neither text nor tool calls" in (result.error or ""), result.error
    events = read_trace(result.trace_path)
    errors = [e for e in events if isinstance(e, StepError)]
    assert not errors, errors[:3]
    for request in model.requests:
        validate_pairs([Message.from_openai(m) for m in request.messages])


@settings(
    max_examples=max(EXAMPLES // 15, 10),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scripts())
def test_every_preset_survives_arbitrary_runs(script: tuple[list[Message], dict[str, str]]) -> None:
    replies, outputs = script
    with tempfile.TemporaryDirectory() as folder:
        for preset in PRESETS:
            anyio.run(_run_preset, preset, replies, outputs, Path(folder) / preset, backend="asyncio")
