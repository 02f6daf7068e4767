"""mini-swe-agent trajectories (``*.traj.json``, v1 and v2) -> :class:`RecordedRun`.

v1 (``trajectory_format: "mini-swe-agent-1"``, mini-swe-agent 1.x): every message is
``{"role", "content", "extra"?}``. Each assistant message holds a ``THOUGHT`` and one fenced
action block; the next user message is the shell observation. The action becomes a ``bash`` tool
call, the observation a tool message. An assistant message with zero or several action blocks was
rejected by mini-swe-agent (format error): it stays text-only and the feedback that follows stays
a user message. The final user message that only echoes the submitted patch was never sent to the
model and is dropped.

v2 (``"mini-swe-agent-1.1"``, mini-swe-agent 2.x) keeps each model response as the provider
returned it, plus ``extra``:

- tool calling (v2's default): the assistant message's ``tool_calls`` (one or several), each
  answered by a ``role: "tool"`` message with its ``tool_call_id``; a response without a valid call
  is answered by a user message (``extra.interrupt_type: "FormatError"``), and its calls, if any,
  stay unanswered, as they were;
- text actions (``litellm_textbased``): as v1, the action being the one ``extra.actions`` records;
- the Responses API (``litellm_response``): the response object itself (``object: "response"``, its
  ``output`` items: ``message`` text, ``function_call`` calls; ``reasoning`` items are not replayed)
  and ``function_call_output`` items as the tool messages;
- the last message, ``role: "exit"`` (the submission), was never sent to the model and is dropped;
- content may be a list of parts (multimodal): text parts are kept, images become ``[image]``.

Which block is the action: ``extra.actions`` where recorded (v2), else the configured
``action_regex`` (``info.config.model`` in v2, ``info.config.agent`` in v1) when it has one of the
two shapes mini-swe-agent's configs use (a fenced block with a language tag, or an XML-like tag),
else the default of the file's version (```` ```bash ```` in v1, ```` ```mswea_bash_command ```` in
v2). A configured regex of any other shape is never compiled (it could take forever on hostile
input): a text-action run whose actions cannot be found that way is skipped with the reason, never
replayed with its actions as text.

Each step keeps its recorded usage (``extra.response.usage``; the Responses API's own ``usage``)
with the cost the provider billed where it says (OpenRouter's ``usage.cost``; ``extra.cost`` is
mini-swe-agent's own list-price estimate, not a bill, and is not read), and the endpoint that
served it (``extra.response.provider``, as OpenRouter reports it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import structlog

from .._messages import Message, ToolCall, Usage
from ._import_common import (
    CallIds,
    ShapeError,
    SkippedRun,
    blocks_text,
    build_run,
    chat_usage,
    compact_json,
    generic_tool_schema,
    get_list,
    openai_calls,
    schemas_from_calls,
    tool_call,
)
from ._recorded import RecordedRun

__all__ = ["FORMAT", "convert", "matches"]

FORMAT = "mini-swe-agent"
ACTION_RE = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)  # mini-swe-agent v1's default action_regex
ACTION_RE_V2 = re.compile(r"```mswea_bash_command\s*\n(.*?)\n```", re.DOTALL)  # v2's default
# The configured action_regex shapes read (matched against the configured text, never compiled from it).
_FENCED_CONFIG = re.compile(r"```(\w+)\\s\*\\n\(\.\*\?\)\\n```")
_TAG_CONFIG = re.compile(r"<(\w+)>(\\s\*)?\(\.\*\?\)(\\s\*)?</(\w+)>")
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


def convert(doc: dict[str, Any], path: Path) -> RecordedRun | SkippedRun:
    raw = get_list(doc, "messages", "root")
    info = doc.get("info", {})
    if not isinstance(info, dict):
        raise ShapeError(f"root.info: expected an object, got {type(info).__name__}")
    raw = _without_patch_echo(raw, info)
    instance_id = doc.get("instance_id") if isinstance(doc.get("instance_id"), str) else None
    name = instance_id or path.name.removesuffix(".json").removesuffix(".traj")
    action_re = _action_regex(doc, info)
    state = _Messages(action_re)
    for index, item in enumerate(raw):
        state.add(item, f"messages[{index}]")
    if state.unread_actions:
        return SkippedRun(str(path), _unread_reason(info, state.unread_actions))
    others = [s for s in schemas_from_calls(state.messages) if s["function"]["name"] != "bash"]
    return build_run(
        run_id=f"{FORMAT}/{name}",
        source=str(path),
        fmt=FORMAT,
        messages=state.messages,
        tools=[generic_tool_schema("bash", FORMAT), *others],
        usage=state.usage,
        routes=state.routes,
        model=_model(info, raw),
        metadata=_metadata(info, name, path.parent, state),
    )


def _without_patch_echo(raw: list[Any], info: dict[str, Any]) -> list[Any]:
    """The messages the model saw: without v2's final ``exit`` message and v1's patch echo."""
    last = raw[-1] if raw else None
    if isinstance(last, dict) and last.get("role") == "exit":
        return raw[:-1]
    submission = info.get("submission")
    if (
        isinstance(last, dict)
        and last.get("role") == "user"
        and isinstance(submission, str)
        and last.get("content") == submission
    ):
        return raw[:-1]
    return raw


# ---------------------------------------------------------------- actions
def _action_regex(doc: dict[str, Any], info: dict[str, Any]) -> re.Pattern[str] | None:
    """The action block's pattern: the configured one when it has a known shape, the version's
    default when none is configured, None when the configured one cannot be read safely."""
    configured = _configured_regex(info)
    if configured is None:
        fmt = doc.get("trajectory_format")
        v2 = fmt == "mini-swe-agent-1.1" or str(info.get("mini_version", "")).startswith("2")
        return ACTION_RE_V2 if v2 else ACTION_RE
    if configured in (ACTION_RE.pattern, ACTION_RE_V2.pattern):
        return ACTION_RE if configured == ACTION_RE.pattern else ACTION_RE_V2
    if fenced := _FENCED_CONFIG.fullmatch(configured):
        return re.compile(rf"```{fenced[1]}\s*\n(.*?)\n```", re.DOTALL)
    tag = _TAG_CONFIG.fullmatch(configured)
    if tag and tag[1] == tag[4]:
        return re.compile(rf"<{tag[1]}>\s*(.*?)\s*</{tag[1]}>", re.DOTALL)
    return None


def _configured_regex(info: dict[str, Any]) -> str | None:
    config = info.get("config")
    for part in ("model", "agent"):
        section = config.get(part) if isinstance(config, dict) else None
        regex = section.get("action_regex") if isinstance(section, dict) else None
        if isinstance(regex, str) and regex:
            return regex
    return None


def _unread_reason(info: dict[str, Any], steps: int) -> str:
    shown = _configured_regex(info) or ""
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return (
        f"its action_regex {shown!r} is not one the importer reads (a fenced block or a tag) and "
        f"{steps} text action{'s' * (steps != 1)} record no extra.actions: they would be replayed as text"
    )


def _recorded_actions(item: dict[str, Any]) -> list[str] | None:
    """The commands v2 recorded it parsed from this response (``extra.actions``), if any."""
    extra = item.get("extra")
    actions = extra.get("actions") if isinstance(extra, dict) else None
    if not isinstance(actions, list):
        return None
    commands = [a.get("command") for a in actions if isinstance(a, dict)]
    return [c for c in commands if isinstance(c, str)] if len(commands) == len(actions) else None


# ---------------------------------------------------------------- messages
@dataclass
class _Messages:
    """The run's messages, per-step usage and routes, built message by message."""

    action_re: re.Pattern[str] | None
    messages: list[Message] = field(default_factory=list)
    usage: list[Usage | None] = field(default_factory=list)
    routes: list[str | None] = field(default_factory=list)
    pending: dict[str, ToolCall] = field(default_factory=dict)  # recorded call id -> call awaiting its result
    text_call: ToolCall | None = None  # the text action awaiting its observation
    ids: CallIds = field(default_factory=CallIds)
    unread_actions: int = 0  # text actions the configured regex could not find
    unpaired_results: int = 0

    @property
    def step(self) -> int:
        return len(self.usage)

    def add(self, item: Any, where: str) -> None:
        if not isinstance(item, dict):
            raise ShapeError(f"{where}: expected an object, got {type(item).__name__}")
        if item.get("object") == "response":
            self._response(item, where)
            return
        role = item.get("role")
        kind = item.get("type")
        if kind != "function_call_output" and "content" not in item:
            raise ShapeError(f"{where}: missing 'content'")
        if role == "assistant":
            self._assistant(item, where)
        elif role == "tool" or kind == "function_call_output":
            self._result(item, where)
        elif role in ("system", "user", "developer"):
            self._context(item, "system" if role != "user" else "user")
        else:
            raise ShapeError(f"{where}: unknown role {role!r}")

    def _start(self, item: dict[str, Any], usage: Usage | None) -> None:
        self.usage.append(usage)
        self.routes.append(_route(item))
        self.pending, self.text_call = {}, None

    def _assistant(self, item: dict[str, Any], where: str) -> None:
        content = blocks_text(item.get("content"))
        self._start(item, _usage(item))
        calls = openai_calls(item.get("tool_calls"), f"{where}.tool_calls")
        if calls:
            self._add_calls(content, [(c.id, c.name, c.arguments) for c in calls])
            return
        message, self.text_call = self._text_action(item, content)
        self.messages.append(message)

    def _add_calls(self, content: str, calls: list[tuple[str, str, str]]) -> None:
        made = []
        for index, (call_id, name, arguments) in enumerate(calls):
            call = ToolCall(self.ids.unique(call_id or None, self.step, index), name, arguments)
            self.pending[call_id or call.id] = call
            made.append(call)
        message = Message("assistant", content or None, tool_calls=tuple(made), iteration=self.step)
        self.messages.append(message)

    def _text_action(self, item: dict[str, Any], content: str) -> tuple[Message, ToolCall | None]:
        """A text response: its one action as a ``bash`` call, the rest as the thought."""
        recorded = _recorded_actions(item)
        if recorded is None and self.action_re is None:
            self.unread_actions += 1
            return Message("assistant", content, iteration=self.step), None
        actions = recorded if recorded is not None else self._found(content)
        if len(actions) != 1:
            return Message("assistant", content, iteration=self.step), None
        thought = self._thought(content)
        call = tool_call(self.ids.unique(None, self.step, 0), "bash", actions[0])
        return Message("assistant", thought or None, tool_calls=(call,), iteration=self.step), call

    def _found(self, content: str) -> list[str]:
        return self.action_re.findall(content) if self.action_re is not None else []

    def _thought(self, content: str) -> str:
        pattern = self.action_re or ACTION_RE
        return pattern.sub("", content, count=1).strip()

    def _result(self, item: dict[str, Any], where: str) -> None:
        call_id = item.get("tool_call_id") if item.get("role") == "tool" else item.get("call_id")
        text = blocks_text(item.get("content") if item.get("role") == "tool" else item.get("output"))
        call = self.pending.pop(call_id, None) if isinstance(call_id, str) else None
        if call is None:
            self.unpaired_results += 1
            self.messages.append(Message("user", text, iteration=self.step))
            return
        self._answer(call, text)

    def _answer(self, call: ToolCall, text: str) -> None:
        self.messages.append(Message("tool", text, tool_call_id=call.id, name=call.name, iteration=self.step))

    def _context(self, item: dict[str, Any], role: str) -> None:
        text = blocks_text(item.get("content"))
        if self.text_call is not None and role == "user":
            self._answer(self.text_call, text)
            self.text_call = None
            return
        self.messages.append(Message("system" if role == "system" else "user", text, iteration=self.step))

    def _response(self, item: dict[str, Any], where: str) -> None:
        """A Responses API response (v2's ``litellm_response``): one step."""
        output = get_list(item, "output", where)
        texts, calls = [], []
        for index, part in enumerate(output):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "message":
                texts.append(blocks_text(part.get("content")))
            elif kind == "function_call":
                calls.append(_response_call(part, f"{where}.output[{index}]"))
        self._start(item, chat_usage(item.get("usage")))
        self._add_calls("\n".join(t for t in texts if t), calls)


def _response_call(part: dict[str, Any], where: str) -> tuple[str, str, str]:
    name, arguments = part.get("name"), part.get("arguments")
    if not isinstance(name, str) or not name:
        raise ShapeError(f"{where}: function_call without a name")
    if not isinstance(arguments, str):
        arguments = compact_json(arguments if arguments is not None else {}, f"{where}.arguments")
    call_id = part.get("call_id") or part.get("id")
    return (call_id if isinstance(call_id, str) else ""), name, arguments


# ---------------------------------------------------------------- usage and header
def _response(item: dict[str, Any]) -> dict[str, Any] | None:
    extra = item.get("extra")
    response = extra.get("response") if isinstance(extra, dict) else None
    return response if isinstance(response, dict) else None


def _route(item: dict[str, Any]) -> str | None:
    """The endpoint OpenRouter says served the call (``provider``), if recorded."""
    provider = (_response(item) or {}).get("provider")
    return provider if isinstance(provider, str) and provider else None


def _usage(item: dict[str, Any]) -> Usage | None:
    return chat_usage((_response(item) or {}).get("usage"))


def _model(info: dict[str, Any], raw: list[Any]) -> str | None:
    config = info.get("config")
    model = config.get("model") if isinstance(config, dict) else None
    name = model.get("model_name") if isinstance(model, dict) else None
    if isinstance(name, str) and name:
        return name
    for item in raw:
        response = _response(item) if isinstance(item, dict) else None
        if response is None and isinstance(item, dict) and item.get("object") == "response":
            response = item
        if isinstance(response, dict) and isinstance(response.get("model"), str):
            return str(response["model"])
    return None


def _metadata(info: dict[str, Any], instance_id: str, folder: Path, state: _Messages) -> dict[str, Any]:
    stats = info.get("model_stats")
    stats = stats if isinstance(stats, dict) else {}
    meta: dict[str, Any] = {"instance_id": instance_id}
    for key, value in (
        ("exit_status", info.get("exit_status")),
        ("mini_version", info.get("mini_version")),
        ("api_calls", stats.get("api_calls")),
        ("instance_cost", stats.get("instance_cost")),
        ("resolved", _resolved(folder).get(instance_id)),
        ("unpaired_results", state.unpaired_results or None),
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
