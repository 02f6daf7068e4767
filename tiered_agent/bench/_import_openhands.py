"""OpenHands software-agent-SDK event lists (one JSON list of events per run) -> :class:`RecordedRun`.

Events by ``kind`` (the SDK's ``openhands.sdk.event`` classes):

- ``SystemPromptEvent``: the system message (``system_prompt`` and ``dynamic_context``) and the
  tool schemas (``tools``, OpenAI function form or the SDK's tool definitions).
- ``MessageEvent``: a user message (``source == "user"``), or a model reply without tool calls
  (``source == "agent"``), which is a step of its own.
- ``ActionEvent``: one tool call. Parallel calls of one model response share ``llm_response_id``
  and become ONE step (one assistant message with several calls, as the SDK itself sends them
  back); the response's ``thought`` is the assistant text. ``reasoning_content`` and thinking
  blocks are not replayed.
- ``ObservationEvent``, ``AgentErrorEvent``, ``UserRejectObservation``: the tool message that
  answers the call with the same ``tool_call_id``. The text is the observation's ``content``
  blocks when recorded, else its ``output`` (or ``message``/``content`` text) with the bash
  tool's ``metadata.prefix``/``suffix`` around it, as the SDK showed it to the model (the
  working-directory lines some SDK versions append are not reconstructed).
- ``Condensation`` (the SDK's condenser forgot events: ``forgotten_event_ids``, with an optional
  ``summary`` inserted at ``summary_offset``): the history restarts there
  (:attr:`RecordedRun.restarts`) with what the SDK's view kept, computed as the SDK computes it
  (every forgotten id so far, a response's calls forgotten together, a call or result whose
  partner is forgotten left out, the latest summary at its offset). What was kept is replayed as
  context in the restart's iteration: the system prompt as system text, every other kept event
  (the task, kept calls and results, the summary) as user text; ``metadata["condensations"]``
  counts the restarts. A condensation that forgot nothing changes nothing.
- Everything else (condensation requests, state updates, pauses) never reached the model as
  recorded and is dropped; ``metadata["ignored_events"]`` counts it by kind.

A conversation the SDK persisted (``<persistence_dir>/<conversation>/events/event-00000-<id>.json``,
one event per file) is read as the list of its event files in name order, one run named after the
conversation folder.

Some event lists start after the task message (the first events are the agent's): then
iteration 0 holds only the system prompt, or nothing, the run's ``task`` is ``""`` and
``metadata["task_missing"]`` is True; the first action is still step 1.

Read-only for the dedup cache: ``think`` and the browser tools that only read the page
(``browser_get_state``, ``browser_get_content``), plus single calls whose command only reads: the
file editor's ``view`` and the task tracker's ``view``. Bash, file creation and edits, browser
navigation, clicks and typing are not. No per-step token usage is recorded in these logs.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any, Literal

import orjson

from ._import_common import (
    ShapeError,
    blocks_text,
    compact_json,
    dump_arguments,
    function_schema,
    is_read_only,
    parse_arguments,
)
from ._import_steps import HistoryBuilder
from ._recorded import RecordedRun

__all__ = [
    "FORMAT",
    "convert",
    "convert_folder",
    "is_event_file",
    "matches",
    "read_only_tool",
    "reads_only_call",
]

FORMAT = "openhands"
READ_ONLY_NAMES = frozenset({"think", "browser_get_state", "browser_get_content"})
# Tools that read or write depending on their ``command`` argument, and the commands that only read.
READ_ONLY_COMMANDS = {
    "str_replace_editor": frozenset({"view"}),
    "file_editor": frozenset({"view"}),
    "planning_file_editor": frozenset({"view"}),
    "task_tracker": frozenset({"view"}),
}
_RESULT_KINDS = frozenset({"ObservationEvent", "AgentErrorEvent", "UserRejectObservation"})
_SENT_KINDS = frozenset({"SystemPromptEvent", "MessageEvent", "ActionEvent", *_RESULT_KINDS})
_EVENT_FILE = re.compile(r"^event-\d{5}(?:-.+)?\.json$")


def matches(doc: Any) -> bool:
    return (
        isinstance(doc, list)
        and bool(doc)
        and all(isinstance(e, dict) and isinstance(e.get("kind"), str) and "source" in e for e in doc)
        and any(e["kind"] in ("ActionEvent", "MessageEvent", "SystemPromptEvent") for e in doc)
    )


def is_event_file(path: Path) -> bool:
    """One event of a persisted conversation: ``events/event-<5 digits>[-<id>].json``."""
    return path.parent.name == "events" and bool(_EVENT_FILE.match(path.name))


def convert_folder(folder: Path, _: Path) -> RecordedRun:
    """A persisted conversation's ``events/`` folder: its event files in name order, as one run."""
    events = []
    for path in sorted(p for p in folder.iterdir() if is_event_file(p)):
        try:
            event = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise ShapeError(f"{path.name}: cannot read ({exc})") from exc
        events.append(event)
    if not matches(events):
        raise ShapeError("the event files are not OpenHands events (each needs a kind and a source)")
    return convert(events, folder.parent)


def read_only_tool(name: str) -> bool:
    return name in READ_ONLY_NAMES or is_read_only(name)


def convert(doc: list[dict[str, Any]], path: Path) -> RecordedRun:
    builder = HistoryBuilder()
    tools: list[dict[str, Any]] | None = None
    ignored: Counter[str] = Counter()
    condensations = 0
    response_id: str | None = None  # llm_response_id of the current step's tool calls
    for index, event in enumerate(doc):
        where = f"[{index}]"
        kind = event["kind"]
        if kind == "ActionEvent":
            response_id = _action(builder, event, response_id, where)
        elif kind in _RESULT_KINDS:
            builder.add_result(_call_id(event, where), _result_text(event, where))
        elif kind == "MessageEvent":
            _message(builder, event, where)
            response_id = None
        elif kind == "SystemPromptEvent":
            tools = _system(builder, event, where)
        elif kind == "Condensation" and _condense(builder, doc[: index + 1]):
            condensations += 1
            response_id = None
        else:
            ignored[kind] += 1
    task_missing = not any(m.role == "user" and m.iteration == 0 for m in builder.messages)
    metadata: dict[str, Any] = {"events": len(doc), "task_missing": task_missing}
    if ignored:
        metadata["ignored_events"] = dict(sorted(ignored.items()))
    if condensations:
        metadata["condensations"] = condensations
    name = path.name.removesuffix(".json")
    return builder.build(
        run_id=f"{FORMAT}/{name}",
        source=str(path),
        fmt=FORMAT,
        tools=tools,
        model=None,
        metadata=metadata,
        read_only=read_only_tool,
    )


def _action(
    builder: HistoryBuilder, event: dict[str, Any], response_id: str | None, where: str
) -> str | None:
    """Add the call; a new step unless it belongs to the current step's response."""
    rid = event.get("llm_response_id")
    rid = rid if isinstance(rid, str) and rid else None
    thought = blocks_text(event.get("thought"))
    if rid is None or rid != response_id or builder.step == 0:
        builder.start_step(thought)
    else:
        builder.add_text(thought)
    call_id, name, arguments = _tool_call(event, where)
    builder.add_call(call_id, name, arguments, read_only=reads_only_call(name, arguments))
    return rid


def _tool_call(event: dict[str, Any], where: str) -> tuple[str | None, str, str]:
    """``(id, name, arguments)`` of an ActionEvent's call (SDK form or OpenAI form)."""
    raw: dict[str, Any] = event["tool_call"] if isinstance(event.get("tool_call"), dict) else {}
    function: dict[str, Any] = raw["function"] if isinstance(raw.get("function"), dict) else raw
    name = function.get("name") or event.get("tool_name")
    if not isinstance(name, str) or not name:
        raise ShapeError(f"{where}: action without a tool name")
    arguments = function.get("arguments")
    if arguments is None:
        action = event.get("action")
        arguments = {k: v for k, v in action.items() if k != "kind"} if isinstance(action, dict) else {}
    if not isinstance(arguments, str):
        arguments = (
            dump_arguments(arguments) if isinstance(arguments, dict) else compact_json(arguments, "arguments")
        )
    call_id = raw.get("id") or event.get("tool_call_id")
    return (call_id if isinstance(call_id, str) and call_id else None), name, arguments


def reads_only_call(name: str, arguments: str) -> bool:
    """Whether this call of a read-or-write tool only reads (by its ``command``)."""
    commands = READ_ONLY_COMMANDS.get(name)
    return commands is not None and parse_arguments(arguments).get("command") in commands


def _call_id(event: dict[str, Any], where: str) -> str:
    call_id = event.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise ShapeError(f"{where}: {event['kind']} without a tool_call_id")
    return call_id


def _result_text(event: dict[str, Any], where: str) -> str:
    kind = event["kind"]
    if kind == "AgentErrorEvent":
        return str(event.get("error") or "")
    if kind == "UserRejectObservation":
        return f"Action rejected: {event.get('rejection_reason') or 'User rejected the action'}"
    observation = event.get("observation")
    if not isinstance(observation, dict):
        raise ShapeError(f"{where}.observation: expected an object, got {type(observation).__name__}")
    return _observation_text(observation) + _extended(event)


def _observation_text(observation: dict[str, Any]) -> str:
    content = observation.get("content")
    if isinstance(content, list):  # newer SDKs: the blocks the model saw
        return blocks_text(content)
    error = observation.get("error")
    meta: dict[str, Any] = observation["metadata"] if isinstance(observation.get("metadata"), dict) else {}
    prefix, suffix = str(meta.get("prefix") or ""), str(meta.get("suffix") or "")
    if isinstance(error, str) and error:
        return f"Tool Execution Error: {prefix}{error}{suffix}"
    for key in ("output", "message", "content"):
        value = observation.get(key)
        if isinstance(value, str | list):
            return f"{prefix}{blocks_text(value)}{suffix}"
    rest = {k: v for k, v in observation.items() if k != "kind"}
    return compact_json(rest, "observation", sort_keys=True)


def _extended(event: dict[str, Any]) -> str:
    """Text the agent's context appended to a message or observation (``extended_content``)."""
    extra = blocks_text(event.get("extended_content"))
    return f"\n{extra}" if extra else ""


def _message(builder: HistoryBuilder, event: dict[str, Any], where: str) -> None:
    message = event.get("llm_message")
    if not isinstance(message, dict):
        raise ShapeError(f"{where}.llm_message: expected an object, got {type(message).__name__}")
    text = blocks_text(message.get("content")) + _extended(event)
    role = message.get("role")
    if role == "assistant":
        builder.start_step(text)
    elif role in ("user", "system"):
        builder.context("system" if role == "system" else "user", text)
    else:
        raise ShapeError(f"{where}.llm_message: unknown role {role!r}")


def _system(builder: HistoryBuilder, event: dict[str, Any], where: str) -> list[dict[str, Any]] | None:
    """Add the system message; returns the tool schemas it lists (None when it lists none)."""
    parts = [blocks_text(event.get("system_prompt")), blocks_text(event.get("dynamic_context"))]
    builder.context("system", "\n".join(p for p in parts if p))
    tools = event.get("tools")
    if not isinstance(tools, list) or not tools:
        return None
    return [_tool_schema(t, f"{where}.tools[{n}]") for n, t in enumerate(tools)]


def _tool_schema(tool: Any, where: str) -> dict[str, Any]:
    if not isinstance(tool, dict):
        raise ShapeError(f"{where}: expected an object, got {type(tool).__name__}")
    if isinstance(tool.get("function"), dict):
        return tool
    name = tool.get("name") or tool.get("title")
    if not isinstance(name, str):
        raise ShapeError(f"{where}: tool without a name")
    schema: dict[str, Any] = next(
        (tool[k] for k in ("parameters", "input_schema", "inputSchema") if isinstance(tool.get(k), dict)), {}
    )
    description = str(tool.get("description") or "")
    return function_schema(name, description, schema.get("properties", {}), schema.get("required", []))


# ---------------------------------------------------------------- condensation
def _condense(builder: HistoryBuilder, events: list[dict[str, Any]]) -> bool:
    """At the last of ``events`` (a Condensation), restart the history with what the SDK's view
    keeps; False (nothing done) when that condensation forgot nothing and added no summary."""
    own = events[-1].get("forgotten_event_ids")
    if not (isinstance(own, list) and own) and _summary_of(events[-1]) is None:
        return False
    forgotten = _forgotten(events)
    kept = _paired_only([e for e in events if e["kind"] in _SENT_KINDS and _key(e, "id") not in forgotten])
    texts = [_kept_text(e, f"kept {e.get('id')!r}") for e in kept]
    summary = next((s for e in reversed(events) if (s := _summary_of(e)) is not None), None)
    if summary is not None:
        offset, text = summary
        texts.insert(min(offset, len(texts)), ("user", text))
    builder.restart()
    for role, text in texts:
        if text:
            builder.context(role, text)
    return True


def _forgotten(events: list[dict[str, Any]]) -> set[Any]:
    """The ids the SDK's view leaves out: every condensation's forgotten ids, the condensations and
    requests themselves, and all calls of a response one of whose calls is forgotten."""
    forgotten: set[Any] = set()
    for event in events:
        if event["kind"] in ("Condensation", "CondensationRequest"):
            ids = event.get("forgotten_event_ids")
            forgotten.add(_key(event, "id"))
            forgotten.update(i for i in (ids if isinstance(ids, list) else ()) if isinstance(i, str | int))
    forgotten.discard(None)
    batches: dict[Any, list[Any]] = {}
    for event in events:
        if event["kind"] == "ActionEvent":
            batches.setdefault(_key(event, "llm_response_id"), []).append(_key(event, "id"))
    for batch in batches.values():
        if forgotten.intersection(batch):
            forgotten.update(batch)
    return forgotten


def _key(event: dict[str, Any], field: str) -> str | int | None:
    """An event's id (or response id) when it is one a set can hold (a string or a number)."""
    value = event.get(field)
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


def _summary_of(event: dict[str, Any]) -> tuple[int, str] | None:
    """A condensation's summary and where it goes in the view, when it has both."""
    if event["kind"] != "Condensation":
        return None
    text, offset = event.get("summary"), event.get("summary_offset")
    if isinstance(text, str) and isinstance(offset, int) and not isinstance(offset, bool) and offset >= 0:
        return offset, text
    return None


def _paired_only(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Without calls whose result, and results whose call, the view left out (as the SDK does)."""
    calls = {_key(e, "tool_call_id") for e in events if e["kind"] == "ActionEvent"}
    results = {_key(e, "tool_call_id") for e in events if e["kind"] in _RESULT_KINDS}
    return [
        e
        for e in events
        if not (e["kind"] == "ActionEvent" and _key(e, "tool_call_id") not in results)
        and not (e["kind"] in _RESULT_KINDS and _key(e, "tool_call_id") not in calls)
    ]


def _kept_text(event: dict[str, Any], where: str) -> tuple[Literal["system", "user"], str]:
    """A kept event as the context it is replayed as (see the module docstring)."""
    kind = event["kind"]
    if kind == "SystemPromptEvent":
        parts = [blocks_text(event.get("system_prompt")), blocks_text(event.get("dynamic_context"))]
        return "system", "\n".join(p for p in parts if p)
    if kind == "ActionEvent":
        _, name, arguments = _tool_call(event, where)
        thought = blocks_text(event.get("thought"))
        return "user", "\n".join(p for p in (thought, f"{name}({arguments})") if p)
    if kind in _RESULT_KINDS:
        return "user", _result_text(event, where)
    message = event.get("llm_message")
    text = blocks_text(message.get("content") if isinstance(message, dict) else None) + _extended(event)
    return ("system" if isinstance(message, dict) and message.get("role") == "system" else "user"), text
