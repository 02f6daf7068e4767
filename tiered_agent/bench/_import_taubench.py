"""tau-bench historical trajectories (one JSON list of conversations) -> :class:`RecordedRun` each.

Every conversation's ``traj`` is an OpenAI message list: the policy (system),
the simulated customer (user), assistant messages with ``tool_calls`` or text,
tool results and further customer replies. Iteration ``k`` is the ``k``-th
assistant message plus the tool results and customer replies that follow it.
Tool-call ids are kept, except that an id reused within a conversation gets a
suffix (the recorded file reuses some). The files carry no tool definitions:
they are derived from the calls of the whole file (types from the JSON values).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._messages import Message, ToolCall
from ._import_common import (
    CallIds,
    ShapeError,
    build_run,
    function_schema,
    get_list,
    infer_schema,
    merge_schema,
    openai_call,
    openai_message,
    parse_arguments,
)
from ._recorded import RecordedRun

__all__ = ["FORMAT", "convert", "matches"]

FORMAT = "tau-bench"


def matches(doc: Any) -> bool:
    return (
        isinstance(doc, list)
        and bool(doc)
        and all(isinstance(c, dict) and "traj" in c and "task_id" in c for c in doc)
    )


def convert(doc: list[dict[str, Any]], path: Path) -> list[RecordedRun]:
    conversations = [(index, get_list(c, "traj", f"[{index}]")) for index, c in enumerate(doc)]
    tools = _derive_tools(msg for _, traj in conversations for msg in traj)
    runs = []
    for (index, traj), conversation in zip(conversations, doc, strict=True):
        name = f"task{conversation['task_id']}_trial{conversation.get('trial', 0)}"
        runs.append(
            build_run(
                run_id=f"{FORMAT}/{name}",
                source=f"{path}#{name}",
                fmt=FORMAT,
                messages=_messages(traj, f"[{index}].traj"),
                tools=tools,
                metadata=_metadata(conversation),
            )
        )
    return runs


def _messages(traj: list[Any], where: str) -> list[Message]:
    messages: list[Message] = []
    ids = CallIds()
    renamed: dict[str, str] = {}  # original id -> unique id, for the tool results of this iteration
    step = 0
    for index, item in enumerate(traj):
        here = f"{where}[{index}]"
        if not isinstance(item, dict):
            raise ShapeError(f"{here}: expected an object, got {type(item).__name__}")
        if item.get("role") == "assistant":
            step += 1
        message = openai_message(item, step, here)
        if message.role == "assistant":
            renamed = {}
            calls = []
            for n, call in enumerate(message.tool_calls):
                unique = ids.unique(call.id, step, n)
                renamed[call.id] = unique
                calls.append(ToolCall(unique, call.name, call.arguments))
            message = Message("assistant", message.content, tool_calls=tuple(calls), iteration=step)
        elif message.role == "tool":
            original = message.tool_call_id or ""
            if original not in renamed:
                raise ShapeError(f"{here}: tool result {original!r} answers no call of its turn")
            message = Message(
                "tool", message.content, tool_call_id=renamed[original], name=message.name, iteration=step
            )
        messages.append(message)
    return messages


def _derive_tools(messages: Iterator[Any]) -> list[dict[str, Any]]:
    """One function schema per tool name called anywhere, typed from the arguments seen."""
    schemas: dict[str, dict[str, Any]] = {}
    for message in messages:
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        for raw in calls if isinstance(calls, list) else ():
            try:
                call = openai_call(raw, "tool_calls")
            except ShapeError:
                continue  # the conversion names it
            schema = infer_schema(parse_arguments(call.arguments))
            schemas[call.name] = merge_schema(schemas[call.name], schema) if call.name in schemas else schema
    return [
        function_schema(name, "", s.get("properties", {}), s.get("required", []))
        for name, s in schemas.items()
    ]


def _metadata(conversation: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"task_id": conversation.get("task_id"), "trial": conversation.get("trial")}
    if isinstance(conversation.get("reward"), int | float):
        meta["reward"] = conversation["reward"]
    info = conversation.get("info")
    task = info.get("task") if isinstance(info, dict) else None
    if isinstance(task, dict):
        for key in ("user_id", "instruction"):
            if isinstance(task.get(key), str):
                meta[key] = task[key]
    return meta
