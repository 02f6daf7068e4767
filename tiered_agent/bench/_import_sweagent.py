"""SWE-agent trajectories (``*.traj``) -> :class:`RecordedRun`.

``history`` is the message list the agent kept, so it is the source of messages; ``trajectory``
only fills in a missing action. Function-calling runs keep their ``tool_calls`` (and the tool
definitions the file documents in ``replay_config``); in text runs the action becomes one tool
call named after the SWE-agent command it starts with (``open``, ``edit``, ``submit``, ...) or
``bash`` for a plain shell command, with ``{"command": <action>}``. The observation answering an
action becomes a tool message. As for mini-swe-agent, the output of the final ``submit`` was never
shown to the model and is absent.

Variants across versions (0.x, 1.x):

- ``replay_config`` is an object in some files and, as SWE-agent 1.x writes it, the JSON text of
  one: both are read (the model's name, the tools' documentation).
- A ``RetryAgent`` run (``attempts``: one trajectory per attempt, the chosen one copied at the top
  level) is one run per attempt, ``<name>/attempt<i>`` from ``<file>#attempt<i>``; the top-level
  copy is not replayed again (its model calls would count twice).
- Demonstrations put in the history (``put_demos_in_history``: entries with ``is_demo``) were
  part of every prompt but no model call of this run: a demonstration's assistant and tool
  entries are replayed as user text in iteration 0 (``metadata["demonstration_messages"]``), not
  as steps or calls.
- Content as a list of parts (``cache_control`` on the last message, multimodal problem
  statements): the text parts, an image as ``[image]``.

Not replayed, because the history does not hold it: the requeries after a format error or a
blocked action (SWE-agent keeps them in ``trajectory`` only), and what the history processors
(``last_n_observations``, ``cache_control``) changed in each request.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from .._messages import Message, ToolCall
from ._import_common import (
    CallIds,
    ShapeError,
    build_run,
    function_schema,
    generic_tool_schema,
    get_list,
    infer_schema,
    merge_schema,
    openai_calls,
    parse_arguments,
    text_of,
    tool_call,
    used_tools,
)
from ._recorded import RecordedRun

__all__ = ["FORMAT", "convert", "matches", "parse_command_docs"]

FORMAT = "swe-agent"
# Commands of SWE-agent's tool bundles, for prompts that do not document them in the parsable form.
KNOWN_COMMANDS = frozenset(
    {
        "open", "goto", "scroll_up", "scroll_down", "create", "edit", "insert", "search_dir", "search_file",
        "find_file", "submit", "str_replace_editor", "filemap", "decompile", "disassemble", "exit_forfeit",
        "debug_start", "debug_add_breakpoint", "debug_continue", "debug_step", "debug_exec", "debug_stop",
        "connect_start", "connect_sendline", "connect_exec", "connect_stop",
    }
)  # fmt: skip
_DOC_NAME = re.compile(r"^([A-Za-z_][\w-]*):[ \t]*$")
_DOC_ARG = re.compile(r"^\s*- (\S+) \(([^)]*)\) \[(required|optional)\]:[ \t]*(.*)$")
_DOC_TYPES = {"integer": "integer", "boolean": "boolean", "number": "number", "array": "array"}


def matches(doc: Any) -> bool:
    return isinstance(doc, dict) and (_attempts(doc) is not None or _is_attempt(doc))


def _attempts(doc: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A RetryAgent's attempts (each a trajectory of its own), or None."""
    attempts = doc.get("attempts")
    if isinstance(attempts, list) and attempts and all(_is_attempt(a) for a in attempts):
        return attempts
    return None


def _is_attempt(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("trajectory"), list)
        and isinstance(doc.get("history"), list)
    )


def convert(doc: dict[str, Any], path: Path) -> RecordedRun | list[RecordedRun]:
    name = path.name.removesuffix(".traj").removesuffix(".json")
    attempts = _attempts(doc)
    if attempts is not None:
        return [
            _convert(attempt, f"{name}/attempt{n}", f"{path}#attempt{n}", f"attempts[{n}]")
            for n, attempt in enumerate(attempts)
        ]
    return _convert(doc, name, str(path), "root")


def _convert(doc: dict[str, Any], name: str, source: str, where: str) -> RecordedRun:
    history = get_list(doc, "history", where)
    trajectory = get_list(doc, "trajectory", where)
    if not all(isinstance(m, dict) for m in history):
        raise ShapeError(f"{where}.history: every entry must be an object")
    function_calling = any(m.get("role") == "assistant" and m.get("tool_calls") for m in history)
    documented = _documented_tools(doc, history)
    commands = KNOWN_COMMANDS | {s["function"]["name"] for s in documented}
    messages = _messages(history, trajectory, function_calling, commands)
    tools = _tools(messages, documented, function_calling)
    metadata = _metadata(doc, function_calling)
    demos = sum(1 for m in history if m.get("is_demo") is True and m.get("role") in ("assistant", "tool"))
    if demos:
        metadata["demonstration_messages"] = demos
    return build_run(
        run_id=f"{FORMAT}/{name}",
        source=source,
        fmt=FORMAT,
        messages=messages,
        tools=tools,
        model=_model(doc),
        metadata=metadata,
    )


# ---------------------------------------------------------------- messages
def _messages(
    history: list[dict[str, Any]], trajectory: list[Any], function_calling: bool, commands: frozenset[str]
) -> list[Message]:
    messages: list[Message] = []
    ids = CallIds()
    step = 0
    pending: dict[str, ToolCall] = {}  # original call id -> call awaiting its observation
    for index, item in enumerate(history):
        where = f"history[{index}]"
        role = item.get("role")
        content = text_of(item.get("content"), where)
        if item.get("is_demo") is True and role in ("assistant", "tool", "user"):
            messages.append(Message("user", content, iteration=step))  # a demonstration: no call of this run
        elif role == "assistant":
            step += 1
            if function_calling:
                message, pending = _calls_assistant(item, step, ids, where)
            else:
                entry = trajectory[step - 1] if step <= len(trajectory) else {}
                message, pending = _text_assistant(item, entry, step, commands=commands, ids=ids, where=where)
            messages.append(message)
        elif pending and (role == "tool" or (role == "user" and not function_calling)):
            original = _answered_id(item, pending)
            call = pending.pop(original)
            messages.append(Message("tool", content, tool_call_id=call.id, name=call.name, iteration=step))
        elif role in ("system", "user"):
            messages.append(Message(role, content, iteration=step))
        else:
            detail = " (answers no pending tool call)" if role in ("tool", "user") else ""
            raise ShapeError(f"{where}: unexpected role {role!r}{detail}")
    return messages


def _calls_assistant(
    item: dict[str, Any], step: int, ids: CallIds, where: str
) -> tuple[Message, dict[str, ToolCall]]:
    """A function-calling assistant message: its recorded tool calls (ids made unique)."""
    calls: dict[str, ToolCall] = {}
    for index, parsed in enumerate(openai_calls(item.get("tool_calls"), f"{where}.tool_calls")):
        call = ToolCall(ids.unique(parsed.id, step, index), parsed.name, parsed.arguments)
        calls[parsed.id or call.id] = call
    content = text_of(item.get("content"), where)
    return Message("assistant", content, tool_calls=tuple(calls.values()), iteration=step), calls


def _text_assistant(
    item: dict[str, Any], entry: Any, step: int, *, commands: frozenset[str], ids: CallIds, where: str
) -> tuple[Message, dict[str, ToolCall]]:
    """A text-action assistant message: the thought as content, the action as one tool call."""
    action = item.get("action")
    if not isinstance(action, str) and isinstance(entry, dict):
        action = entry.get("action")
    thought = item.get("thought")
    content = thought.strip() if isinstance(thought, str) else text_of(item.get("content"), where)
    action = action.rstrip("\n") if isinstance(action, str) else ""
    if not action.strip():
        return Message("assistant", content, iteration=step), {}
    first = action.split()[0]
    call = tool_call(ids.unique(None, step, 0), first if first in commands else "bash", action)
    return Message("assistant", content or None, tool_calls=(call,), iteration=step), {call.id: call}


def _answered_id(item: dict[str, Any], pending: dict[str, ToolCall]) -> str:
    """The original id of the pending call a tool/user message answers (the oldest when unnamed)."""
    named = item.get("tool_call_ids")
    candidates = [*named] if isinstance(named, list) else [item.get("tool_call_id")]
    return next((c for c in candidates if isinstance(c, str) and c in pending), next(iter(pending)))


# ---------------------------------------------------------------- tools
def parse_command_docs(text: str) -> list[dict[str, Any]]:
    """Tool definitions from SWE-agent's command documentation (``name:`` / ``docstring:`` blocks)."""
    lines = text.splitlines()
    starts = [
        i
        for i, line in enumerate(lines)
        if _DOC_NAME.match(line) and i + 1 < len(lines) and lines[i + 1].lstrip().startswith("docstring:")
    ]
    tools = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        tools.append(_command_schema(lines[start].strip().rstrip(":"), lines[start + 1 : end]))
    return tools


def _command_schema(name: str, block: list[str]) -> dict[str, Any]:
    doc: list[str] = []
    properties: dict[str, Any] = {}
    required: list[str] = []
    section = "docstring"
    for line in block:
        stripped = line.strip()
        if stripped.startswith(("signature:", "arguments:")):
            section = "other"
        elif section == "docstring":
            doc.append(stripped.removeprefix("docstring:").strip())
        elif match := _DOC_ARG.match(line):
            arg, kind, needed, description = match.groups()
            properties[arg] = {"type": _DOC_TYPES.get(kind, "string"), "description": description}
            if needed == "required":
                required.append(arg)
    return function_schema(name, " ".join(d for d in doc if d), properties, required)


def _documented_tools(doc: dict[str, Any], history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool definitions found in the file: replay_config's command docs, else the system prompt's."""
    docs = _path(doc, "replay_config", "agent", "tools", "command_docs")
    if isinstance(docs, str) and parse_command_docs(docs):
        return parse_command_docs(docs)
    system = next((m.get("content") for m in history if m.get("role") == "system"), None)
    return parse_command_docs(system) if isinstance(system, str) else []


def _tools(
    messages: list[Message], documented: list[dict[str, Any]], function_calling: bool
) -> list[dict[str, Any]]:
    used = used_tools(messages)
    if not function_calling:
        return [generic_tool_schema(name, FORMAT) for name in used]
    known = {s["function"]["name"] for s in documented}
    inferred: dict[str, dict[str, Any]] = {}
    for call in (c for m in messages for c in m.tool_calls if c.name not in known):
        schema = infer_schema(parse_arguments(call.arguments))
        inferred[call.name] = merge_schema(inferred[call.name], schema) if call.name in inferred else schema
    extra = [
        function_schema(n, "", s.get("properties", {}), s.get("required", [])) for n, s in inferred.items()
    ]
    return documented + extra


# ---------------------------------------------------------------- header
def _path(doc: Any, *keys: str) -> Any:
    """``doc[k1][k2]...``, reading a ``replay_config`` written as JSON text (SWE-agent 1.x) as its object."""
    for key in keys:
        doc = doc.get(key) if isinstance(doc, dict) else None
        if key == "replay_config" and isinstance(doc, str):
            doc = _json_object(doc)
    return doc


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _model(doc: dict[str, Any]) -> str | None:
    name = _path(doc, "replay_config", "agent", "model", "name")
    return name if isinstance(name, str) and name else None


def _metadata(doc: dict[str, Any], function_calling: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"function_calling": function_calling}
    for key, value in (
        ("environment", doc.get("environment")),
        ("exit_status", _path(doc, "info", "exit_status")),
    ):
        if isinstance(value, str):
            meta[key] = value
    return meta
