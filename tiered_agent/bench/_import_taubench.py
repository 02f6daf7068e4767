"""tau-bench historical trajectories and tau2-bench results -> :class:`RecordedRun` each.

tau-bench (one JSON list of conversations): every conversation's ``traj`` is an OpenAI message
list: the policy (system), the simulated customer (user), assistant messages with ``tool_calls``
or text, tool results and further customer replies. Iteration ``k`` is the ``k``-th assistant
message plus the tool results and customer replies that follow it. Tool-call ids are kept,
except that an id reused within a conversation gets a suffix (the recorded file reuses some). The
files carry no tool definitions: they are derived from the calls of the whole file (types from
the JSON values).

tau2-bench (a results file ``{"info", "tasks", "simulations": [...]}``, or one simulation
``{"id", "task_id", "messages", ...}`` as newer versions save them one per file): each simulation's
``messages`` as the agent saw them. Its tool calls are ``{"id", "name", "arguments": {...}}``;
a tool message answers the call whose ``id`` it repeats. What the simulated user did with its own
tools (telecom: ``requestor: "user"`` calls and their results) never reached the agent and is left
out. The agent's system prompt is not saved: the domain policy (``info.environment_info.policy``,
the bulk of it) stands for it, and ``metadata["system_prompt"]`` says so. Each assistant
message's ``usage`` is its step's recorded usage (its ``cost`` is tau2's list-price estimate, not
a bill, and is not read).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._messages import Message, ToolCall, Usage
from ._import_common import (
    CallIds,
    ShapeError,
    build_run,
    chat_usage,
    dump_arguments,
    function_schema,
    get_list,
    infer_schema,
    merge_schema,
    openai_call,
    openai_message,
    parse_arguments,
    schemas_from_calls,
    text_of,
)
from ._recorded import RecordedRun

__all__ = ["FORMAT", "convert", "convert_tau2", "matches", "matches_tau2"]

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


# ---------------------------------------------------------------- tau2-bench
_TAU2_POLICY_NOTE = "the domain policy (the agent's own instructions around it are not saved)"


def matches_tau2(doc: Any) -> bool:
    """A tau2-bench results file, or one of its simulations saved on its own."""
    if not isinstance(doc, dict):
        return False
    simulations = doc.get("simulations")
    if isinstance(simulations, list):
        return bool(simulations) and all(_is_simulation(s) for s in simulations)
    return _is_simulation(doc)


def _is_simulation(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("messages"), list)
        and "task_id" in doc
        and ("reward_info" in doc or "termination_reason" in doc)
    )


def convert_tau2(doc: dict[str, Any], path: Path) -> list[RecordedRun]:
    simulations = doc["simulations"] if isinstance(doc.get("simulations"), list) else [doc]
    info = doc.get("info")
    policy = _path(info, "environment_info", "policy")
    model = _path(info, "agent_info", "llm")
    converted = [
        _tau2_messages(get_list(sim, "messages", f"simulations[{n}]"), policy, f"simulations[{n}].messages")
        for n, sim in enumerate(simulations)
    ]
    tools = schemas_from_calls(m for messages, _ in converted for m in messages)
    stem = path.name.removesuffix(".json")
    runs = []
    for sim, (messages, usage) in zip(simulations, converted, strict=True):
        name = f"{stem}/{sim.get('task_id')}_trial{sim.get('trial', 0)}"
        runs.append(
            build_run(
                run_id=f"{FORMAT}/{name}",
                source=f"{path}#{sim.get('task_id')}_trial{sim.get('trial', 0)}"
                if len(simulations) > 1
                else str(path),
                fmt=FORMAT,
                messages=messages,
                tools=tools,
                usage=usage,
                model=model if isinstance(model, str) and model else None,
                metadata=_tau2_metadata(sim, policy),
            )
        )
    return runs


def _path(doc: Any, *keys: str) -> Any:
    for key in keys:
        doc = doc.get(key) if isinstance(doc, dict) else None
    return doc


def _tau2_messages(raw: list[Any], policy: Any, where: str) -> tuple[list[Message], list[Usage | None]]:
    """The agent's side of one simulation: messages and each step's usage."""
    messages: list[Message] = []
    if isinstance(policy, str) and policy:
        messages.append(Message("system", policy))
    usage: list[Usage | None] = []
    ids = CallIds()
    pending: dict[str, ToolCall] = {}  # recorded call id -> call of the current step
    for index, item in enumerate(_flattened(raw)):
        here = f"{where}[{index}]"
        if not isinstance(item, dict):
            raise ShapeError(f"{here}: expected an object, got {type(item).__name__}")
        role = item.get("role")
        text = text_of(item.get("content"), here) or ""
        if role == "assistant":
            usage.append(chat_usage(item.get("usage")))
            pending = {}
            for n, (recorded, name, arguments) in enumerate(_tau2_calls(item.get("tool_calls"), here)):
                pending[recorded or f"#{n}"] = ToolCall(
                    ids.unique(recorded or None, len(usage), n), name, arguments
                )
            calls = tuple(pending.values())
            messages.append(Message("assistant", text or None, tool_calls=calls, iteration=len(usage)))
        elif role == "tool":
            if item.get("requestor") == "user":
                continue  # the simulated user's own tool: never shown to the agent
            call = _answered(pending, item.get("id"))
            if call is None:
                raise ShapeError(f"{here}: tool result {item.get('id')!r} answers no call of its turn")
            messages.append(Message("tool", text, tool_call_id=call.id, name=call.name, iteration=len(usage)))
        elif role in ("user", "system"):
            if text:  # a user message that only called the user's tools shows the agent nothing
                messages.append(Message(role, text, iteration=len(usage)))
        else:
            raise ShapeError(f"{here}: unknown message role {role!r}")
    return messages, usage


def _answered(pending: dict[str, ToolCall], recorded: Any) -> ToolCall | None:
    """The pending call a tool message answers: the one with its id; without an id, the oldest."""
    if isinstance(recorded, str) and recorded in pending:
        return pending.pop(recorded)
    if not recorded and pending:
        return pending.pop(next(iter(pending)))
    return None


def _flattened(raw: list[Any]) -> list[Any]:
    """Messages with a multi-tool message (``tool_messages``) as its tool messages."""
    out: list[Any] = []
    for item in raw:
        inner = item.get("tool_messages") if isinstance(item, dict) else None
        out.extend(inner if isinstance(inner, list) else [item])
    return out


def _tau2_calls(value: Any, where: str) -> list[tuple[str, str, str]]:
    """``(recorded id, name, arguments as JSON text)`` of an assistant message's tool calls."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ShapeError(f"{where}.tool_calls: expected a list")
    calls = []
    for n, raw in enumerate(value):
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
            raise ShapeError(f"{where}.tool_calls[{n}]: a tool call needs a name")
        arguments = raw.get("arguments")
        if not isinstance(arguments, str):
            arguments = dump_arguments(arguments if isinstance(arguments, dict) else {})
        calls.append((raw["id"] if isinstance(raw.get("id"), str) else "", raw["name"], arguments))
    return calls


def _tau2_metadata(sim: dict[str, Any], policy: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"task_id": sim.get("task_id"), "trial": sim.get("trial"), "version": "tau2"}
    reward = _path(sim, "reward_info", "reward")
    if isinstance(reward, int | float) and not isinstance(reward, bool):
        meta["reward"] = reward
    if isinstance(sim.get("termination_reason"), str):
        meta["termination_reason"] = sim["termination_reason"]
    meta["system_prompt"] = _TAU2_POLICY_NOTE if isinstance(policy, str) and policy else "not recorded"
    return meta
