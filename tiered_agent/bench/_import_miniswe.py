"""mini-swe-agent v1 trajectories (``*.traj.json``) -> :class:`RecordedRun`.

Each assistant message holds a ``THOUGHT`` and one ```bash``` block (the
action); the next user message is the shell observation. The action becomes a
``bash`` tool call, the observation a tool message. An assistant message with
zero or several bash blocks was rejected by mini-swe-agent (format error): it
stays text-only and the feedback that follows stays a user message. The final
user message that only echoes the submitted patch was never sent to the model
and is dropped. Each step keeps its recorded usage (``extra.response.usage``)
and the endpoint that served it (``extra.response.provider``, as OpenRouter
reports it).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import structlog

from .._messages import Message, Usage
from ._import_common import (
    ShapeError,
    build_run,
    count,
    generic_tool_schema,
    get_list,
    get_str,
    tool_call,
)
from ._recorded import RecordedRun

__all__ = ["FORMAT", "convert", "matches"]

FORMAT = "mini-swe-agent"
ACTION_RE = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)  # mini-swe-agent v1's default action_regex
_SUMMARY_FILE = "_results_summary.json"
log = structlog.get_logger(__name__)


def matches(doc: Any) -> bool:
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        return False
    info = doc.get("info")
    fmt = doc.get("trajectory_format")
    return (isinstance(fmt, str) and fmt.startswith("mini-swe-agent")) or (
        isinstance(info, dict) and "mini_version" in info
    )


def convert(doc: dict[str, Any], path: Path) -> RecordedRun:
    raw = get_list(doc, "messages", "root")
    info = doc.get("info", {})
    if not isinstance(info, dict):
        raise ShapeError(f"root.info: expected an object, got {type(info).__name__}")
    raw = _without_patch_echo(raw, info)
    messages, usage, routes = _messages(raw)
    instance_id = doc.get("instance_id") if isinstance(doc.get("instance_id"), str) else None
    name = instance_id or path.name.removesuffix(".json").removesuffix(".traj")
    return build_run(
        run_id=f"{FORMAT}/{name}",
        source=str(path),
        fmt=FORMAT,
        messages=messages,
        tools=[generic_tool_schema("bash", FORMAT)],
        usage=usage,
        routes=routes,
        model=_model(info, raw),
        metadata=_metadata(info, name, path.parent),
    )


def _without_patch_echo(raw: list[Any], info: dict[str, Any]) -> list[Any]:
    last = raw[-1] if raw else None
    submission = info.get("submission")
    if (
        isinstance(last, dict)
        and last.get("role") == "user"
        and isinstance(submission, str)
        and last.get("content") == submission
    ):
        return raw[:-1]
    return raw


def _messages(raw: list[Any]) -> tuple[list[Message], list[Usage | None], list[str | None]]:
    messages: list[Message] = []
    usage: list[Usage | None] = []
    routes: list[str | None] = []
    step = 0
    pending: str | None = None  # id of the bash call awaiting its observation
    for index, item in enumerate(raw):
        where = f"messages[{index}]"
        if not isinstance(item, dict):
            raise ShapeError(f"{where}: expected an object, got {type(item).__name__}")
        role = get_str(item, "role", where)
        content = get_str(item, "content", where)
        if role == "assistant":
            step += 1
            message, pending = _assistant(content, step)
            messages.append(message)
            usage.append(_usage(item, where))
            routes.append(_route(item))
        elif role in ("system", "user"):
            if pending is not None and role == "user":
                messages.append(Message("tool", content, tool_call_id=pending, name="bash", iteration=step))
                pending = None
            else:
                messages.append(Message("system" if role == "system" else "user", content, iteration=step))
        else:
            raise ShapeError(f"{where}: unknown role {role!r}")
    return messages, usage, routes


def _assistant(content: str, step: int) -> tuple[Message, str | None]:
    actions = ACTION_RE.findall(content)
    if len(actions) != 1:
        return Message("assistant", content, iteration=step), None
    thought = ACTION_RE.sub("", content, count=1).strip()
    call = tool_call(f"call_{step}", "bash", actions[0])
    return Message("assistant", thought or None, tool_calls=(call,), iteration=step), call.id


def _response(item: dict[str, Any]) -> dict[str, Any] | None:
    extra = item.get("extra")
    response = extra.get("response") if isinstance(extra, dict) else None
    return response if isinstance(response, dict) else None


def _route(item: dict[str, Any]) -> str | None:
    """The endpoint OpenRouter says served the call (``provider``), if recorded."""
    provider = (_response(item) or {}).get("provider")
    return provider if isinstance(provider, str) and provider else None


def _usage(item: dict[str, Any], where: str) -> Usage | None:
    usage = (_response(item) or {}).get("usage")
    if not isinstance(usage, dict):
        return None
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else 0
    cost = usage.get("cost")
    return Usage(
        prompt_tokens=count(usage.get("prompt_tokens")),
        completion_tokens=count(usage.get("completion_tokens")),
        cached_tokens=count(cached),
        requests=1,
        cost=float(cost) if isinstance(cost, int | float) else None,
    )


def _model(info: dict[str, Any], raw: list[Any]) -> str | None:
    config = info.get("config")
    model = config.get("model") if isinstance(config, dict) else None
    name = model.get("model_name") if isinstance(model, dict) else None
    if isinstance(name, str) and name:
        return name
    for item in raw:
        extra = item.get("extra") if isinstance(item, dict) else None
        response = extra.get("response") if isinstance(extra, dict) else None
        if isinstance(response, dict) and isinstance(response.get("model"), str):
            return str(response["model"])
    return None


def _metadata(info: dict[str, Any], instance_id: str, folder: Path) -> dict[str, Any]:
    stats = info.get("model_stats")
    stats = stats if isinstance(stats, dict) else {}
    meta: dict[str, Any] = {"instance_id": instance_id}
    for key, value in (
        ("exit_status", info.get("exit_status")),
        ("mini_version", info.get("mini_version")),
        ("api_calls", stats.get("api_calls")),
        ("instance_cost", stats.get("instance_cost")),
        ("resolved", _resolved(folder).get(instance_id)),
    ):
        if value is not None:
            meta[key] = value
    return meta


def _resolved(folder: Path) -> dict[str, bool]:
    """``instance_id -> resolved`` from a ``_results_summary.json`` next to the trajectories, if any
    (read for each trajectory: a fraction of a millisecond, and never stale)."""
    path = folder / _SUMMARY_FILE
    if not path.is_file():
        return {}
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        log.warning("importers.results_summary_unreadable", path=str(path), error=str(exc))
        return {}
    instances = data.get("instances") if isinstance(data, dict) else None
    if not isinstance(instances, list):
        return {}
    return {
        str(i["instance_id"]): bool(i.get("resolved"))
        for i in instances
        if isinstance(i, dict) and "instance_id" in i
    }
