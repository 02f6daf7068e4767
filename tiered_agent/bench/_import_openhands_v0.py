"""OpenHands evaluation outputs (``output.jsonl``) and V0 event histories -> :class:`RecordedRun`.

An evaluation harness writes one instance per line of ``output.jsonl``: ``{"instance_id",
"instruction", "history": [...], "metadata", "metrics", ...}``. The SDK-based harness
(OpenHands/benchmarks; ``attempt`` numbers a retried instance) writes the SDK's events in
``history``: each line is converted as an SDK event list (:mod:`._import_openhands`: its
condensations too), named after ``instance_id``, its model from ``metadata.llm.model``. The
older V0 harness writes V0 events, read as below.

Where they are: the evaluation harness's ``output.jsonl`` (one instance per line:
``{"instance_id", "instruction", "history": [...], "metadata": {"llm_config": {"model"}}, ...}``;
the oldest versions wrote ``history`` as ``[action, observation]`` pairs), and a trajectory the UI
exported (a JSON list of the same events). Each event is an action (``action``, ``args``) or an
observation (``observation``, ``content``, ``extras``); ``tool_call_metadata`` ties one to a tool
call of a model response.

As V0's CodeAct agent (``ConversationMemory``) sent them:

- ``system`` (``args.content``) is the system message; a user ``message`` (``args.content``, an
  image per ``image_urls`` as ``[image]``) is a user message;
- an action with ``tool_call_metadata`` is a tool call of the response
  ``model_response.id``: one step per response, its text the response's own
  (``model_response.choices[0].message.content``), its usage the response's ``usage``, each call's
  arguments as the response recorded them;
- ``finish`` is the step's text (V0 sent the finishing response as plain text), an agent
  ``message`` a step of its own;
- an observation with ``tool_call_metadata`` is the tool message answering that call: its
  ``content`` (a command's with the lines V0 put around it from ``extras.metadata``: prefix,
  suffix, working directory, interpreter, exit code); an ``error`` observation without one is a
  user message;
- read-only as for the SDK's logs (``think``, the editor's ``view``, ...);
- the rest (agent state changes, ``recall`` and its workspace context, nulls) is not replayed and
  is counted in ``metadata["ignored_events"]``.

Skipped with the reason, not replayed wrongly: a history with ``condensation`` actions (the
condenser's view is not followed yet: the steps after would be replayed with what the agent had
forgotten), and one whose agent actions have no ``tool_call_metadata`` (CodeAct before function
calling wrote its actions as text, which this importer does not parse).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import Any

from . import _import_openhands
from ._import_common import ShapeError, SkippedRun, blocks_text, chat_usage, compact_json, dump_arguments
from ._import_openhands import FORMAT, read_only_tool, reads_only_call
from ._import_steps import HistoryBuilder
from ._recorded import RecordedRun

__all__ = ["convert", "convert_lines", "matches", "matches_lines"]

_NOT_SENT = frozenset({"change_agent_state", "recall", "null", "agent_state_changed", "delegate"})


def _is_event(event: Any) -> bool:
    return isinstance(event, dict) and ("action" in event or "observation" in event) and "kind" not in event


def _is_history(history: Any) -> bool:
    """V0 events, or the oldest versions' ``[action, observation]`` pairs."""
    return (
        isinstance(history, list)
        and bool(history)
        and all(_is_event(e) or (isinstance(e, list) and all(_is_event(x) for x in e)) for e in history)
    )


def _is_instance(record: Any) -> bool:
    """One line of an evaluation ``output.jsonl``: its history of V0 or SDK events."""
    if not isinstance(record, dict):
        return False
    history = record.get("history")
    return _is_history(history) or _import_openhands.matches(history)


def matches(doc: Any) -> bool:
    """One instance of an ``output.jsonl`` (a one-line file), or an exported trajectory (a list of events)."""
    return _is_instance(doc) or (_is_history(doc) and all(isinstance(e, dict) for e in doc))


def matches_lines(records: list[dict[str, Any]]) -> bool:
    return bool(records) and all(_is_instance(r) for r in records)


def convert(doc: Any, path: Path) -> RecordedRun | SkippedRun:
    if isinstance(doc, list):
        return _convert(doc, {}, path.name.removesuffix(".json"), str(path))
    return _instance(doc, path, single=True)


def convert_lines(
    records: list[dict[str, Any]], path: Path, _damaged: tuple[int, ...]
) -> list[RecordedRun | SkippedRun]:
    return [_instance(r, path, single=len(records) == 1) for r in records]


def _instance(record: dict[str, Any], path: Path, *, single: bool) -> RecordedRun | SkippedRun:
    name = record.get("instance_id")
    name = str(name) if isinstance(name, str | int) and name != "" else path.name.removesuffix(".jsonl")
    attempt = record.get("attempt")
    if isinstance(attempt, int) and not isinstance(attempt, bool) and attempt > 1:
        name = f"{name}/attempt{attempt}"
    source = str(path) if single else f"{path}#{name}"
    history = record["history"]
    if not _import_openhands.matches(history):
        return _convert(history, record, name, source)
    run = _import_openhands.convert(history, Path(name))
    metadata = {**run.metadata, "instance_id": record.get("instance_id")}
    return dataclasses.replace(
        run, run_id=f"{FORMAT}/{name}", source=source, model=run.model or _model(record), metadata=metadata
    )


def _convert(history: list[Any], record: dict[str, Any], name: str, source: str) -> RecordedRun | SkippedRun:
    events = [e for item in history for e in (item if isinstance(item, list) else [item])]
    reason = _unreplayable(events)
    if reason is not None:
        return SkippedRun(source, reason)
    builder = HistoryBuilder()
    ignored: Counter[str] = Counter()
    response_id: Any = None
    for index, event in enumerate(events):
        where = f"history[{index}]"
        if "action" in event:
            response_id = _action(builder, event, response_id, ignored, where)
        else:
            _observation(builder, event, ignored)
    metadata: dict[str, Any] = {"events": len(events), "version": "V0"}
    if ignored:
        metadata["ignored_events"] = dict(sorted(ignored.items()))
    return builder.build(
        run_id=f"{FORMAT}/{name}",
        source=source,
        fmt=FORMAT,
        tools=None,
        model=_model(record),
        metadata=metadata,
        read_only=read_only_tool,
    )


def _unreplayable(events: list[dict[str, Any]]) -> str | None:
    condensations = sum(1 for e in events if e.get("action") == "condensation")
    if condensations:
        return (
            f"OpenHands V0 history with {condensations} condensation event{'s' * (condensations != 1)}: the "
            "condenser's view is not followed yet (the steps after would be replayed with what it forgot)"
        )
    text_actions = sum(
        1 for e in events if _agent_tool_action(e) and not isinstance(e.get("tool_call_metadata"), dict)
    )
    if text_actions:
        return (
            f"OpenHands V0 history with {text_actions} agent action{'s' * (text_actions != 1)} without "
            "tool_call_metadata (CodeAct before function calling): its text actions are not parsed"
        )
    return None


def _agent_tool_action(event: dict[str, Any]) -> bool:
    action = event.get("action")
    return (
        event.get("source") == "agent"
        and isinstance(action, str)
        and action not in ("message", "system", "finish", "condensation", *_NOT_SENT)
    )


def _args(event: dict[str, Any]) -> dict[str, Any]:
    args = event.get("args")
    return args if isinstance(args, dict) else {}


def _action(
    builder: HistoryBuilder, event: dict[str, Any], response_id: Any, ignored: Counter[str], where: str
) -> Any:
    """Add an action; returns the response id the current step's calls belong to."""
    action, args, meta = event.get("action"), _args(event), event.get("tool_call_metadata")
    if action == "system":
        builder.context("system", blocks_text(args.get("content")))
    elif action == "message" and event.get("source") == "user":
        images = args.get("image_urls")
        markers = ["[image]"] * len(images) if isinstance(images, list) else []
        builder.context("user", "\n".join([blocks_text(args.get("content")), *markers]))
    elif action in ("message", "finish"):
        response = _response(meta)
        builder.start_step(_step_text(action, args, response), chat_usage(response.get("usage")))
        return None
    elif isinstance(meta, dict):
        return _call(builder, meta, args, response_id, where)
    else:
        ignored[str(action)] += 1
    return response_id


def _step_text(action: Any, args: dict[str, Any], response: dict[str, Any]) -> str:
    """An agent message's text; a finish's thought and its response's text (as V0 joined them)."""
    if action == "message":
        return blocks_text(args.get("content"))
    thought, content = blocks_text(args.get("thought")), _response_text(response)
    return f"{thought}\n{content}" if thought and content and thought != content else thought or content


def _response(meta: Any) -> dict[str, Any]:
    response = meta.get("model_response") if isinstance(meta, dict) else None
    return response if isinstance(response, dict) else {}


def _response_message(response: dict[str, Any]) -> dict[str, Any]:
    choices = response.get("choices")
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = first.get("message")
    return message if isinstance(message, dict) else {}


def _response_text(response: dict[str, Any]) -> str:
    return blocks_text(_response_message(response).get("content"))


def _call(
    builder: HistoryBuilder, meta: dict[str, Any], args: dict[str, Any], response_id: Any, where: str
) -> Any:
    """A tool call of a model response: a new step when the response is new."""
    response = _response(meta)
    rid = response.get("id")
    if rid is None or rid != response_id or builder.step == 0:
        builder.start_step(_response_text(response), chat_usage(response.get("usage")))
    call_id = meta.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise ShapeError(f"{where}.tool_call_metadata: no tool_call_id")
    calls = _response_message(response).get("tool_calls")
    recorded = next(
        (
            c
            for c in (calls if isinstance(calls, list) else [])
            if isinstance(c, dict) and c.get("id") == call_id
        ),
        None,
    )
    function = recorded.get("function") if isinstance(recorded, dict) else None
    name = function.get("name") if isinstance(function, dict) else meta.get("function_name")
    if not isinstance(name, str) or not name:
        raise ShapeError(f"{where}.tool_call_metadata: no function name")
    arguments = function.get("arguments") if isinstance(function, dict) else None
    if not isinstance(arguments, str):
        arguments = (
            dump_arguments(args) if arguments is None else compact_json(arguments, f"{where}.arguments")
        )
    builder.add_call(call_id, name, arguments, read_only=reads_only_call(name, arguments))
    return rid


def _observation(builder: HistoryBuilder, event: dict[str, Any], ignored: Counter[str]) -> None:
    kind, meta = event.get("observation"), event.get("tool_call_metadata")
    call_id = meta.get("tool_call_id") if isinstance(meta, dict) else None
    if isinstance(call_id, str) and call_id:
        builder.add_result(call_id, _observation_text(event))
    elif kind == "error":
        builder.context("user", blocks_text(event.get("content")))
    else:
        ignored[str(kind)] += 1


def _observation_text(event: dict[str, Any]) -> str:
    """The observation as V0 showed it: a command's output with its metadata lines around it."""
    text = blocks_text(event.get("content"))
    extras = event.get("extras")
    meta = extras.get("metadata") if isinstance(extras, dict) else None
    if event.get("observation") != "run" or not isinstance(meta, dict):
        return text
    text = f"{meta.get('prefix') or ''}{text}{meta.get('suffix') or ''}"
    if meta.get("working_dir"):
        text += f"\n[Current working directory: {meta['working_dir']}]"
    if meta.get("py_interpreter_path"):
        text += f"\n[Python interpreter: {meta['py_interpreter_path']}]"
    if isinstance(meta.get("exit_code"), int) and meta["exit_code"] != -1:
        text += f"\n[Command finished with exit code {meta['exit_code']}]"
    return text


def _model(record: dict[str, Any]) -> str | None:
    """The model the harness configured: ``metadata.llm_config.model`` (V0), ``metadata.llm.model`` (SDK)."""
    metadata = record.get("metadata")
    for key in ("llm_config", "llm"):
        config = metadata.get(key) if isinstance(metadata, dict) else None
        model = config.get("model") if isinstance(config, dict) else None
        if isinstance(model, str) and model:
            return model
    return None
