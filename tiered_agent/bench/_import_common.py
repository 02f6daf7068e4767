"""Shared pieces of the recorded-run importers: shape checks, tool schemas, call ids.

Importers raise :class:`ShapeError` for JSON of the right kind but the wrong
shape; :func:`tiered_agent.bench._importers.load_runs` turns it into a
:class:`~tiered_agent._errors.TraceFormatError` that names the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import orjson

from .._messages import Message, ToolCall, Usage, token_count
from ._recorded import RecordedRun

__all__ = [
    "READ_ONLY_NAMES",
    "READ_ONLY_PREFIXES",
    "CallIds",
    "ShapeError",
    "SkippedRun",
    "StepTiming",
    "blocks_text",
    "build_run",
    "chat_usage",
    "compact_json",
    "count",
    "dump_arguments",
    "function_schema",
    "generic_tool_schema",
    "get_dict",
    "get_list",
    "get_str",
    "infer_schema",
    "is_read_only",
    "kind_of",
    "merge_schema",
    "openai_call",
    "openai_calls",
    "openai_message",
    "parse_arguments",
    "parse_time",
    "schemas_from_calls",
    "switched_models",
    "text_of",
    "tool_call",
    "used_tools",
]

T = TypeVar("T")

READ_ONLY_PREFIXES = ("get_", "search_", "find_", "list_", "read_", "open", "view", "calculate", "think")
READ_ONLY_NAMES = frozenset(
    {"search_dir", "search_file", "find_file", "open", "goto", "scroll_up", "scroll_down"}
)


class ShapeError(Exception):
    """Valid JSON of a known format, but a field is missing or has the wrong type."""


@dataclass(frozen=True, slots=True)
class SkippedRun:
    """A run of a file that cannot be replayed (the others of the same file can), and why."""

    source: str
    reason: str


@dataclass(frozen=True, slots=True)
class StepTiming:
    """Per step (lists as long as the run's steps, or empty): when each request was sent and
    what it wrote to the cache with a 1-hour lifetime; message indexes where the agent restarted
    its history (recorded compaction); whether the log holds the whole prompt; the steps whose
    response held reasoning items; the model that answered each step (where recorded); each
    step's billing modifiers (``"fast+us"``; ``""``: none)."""

    timestamps: Sequence[float | None] = ()
    cache_writes_1h: Sequence[int] = ()
    restarts: Sequence[int] = ()
    prompt_complete: bool = True
    reasoning_steps: Iterable[int] = ()
    models: Sequence[str | None] = ()
    billing: Sequence[str] = ()


# ---------------------------------------------------------------- shape checks
def _typed(value: Any, kind: type[T], where: str) -> T:
    if not isinstance(value, kind):
        names: dict[type[Any], str] = {dict: "an object", list: "a list", str: "a string"}
        expected = names.get(kind, kind.__name__)
        raise ShapeError(f"{where}: expected {expected}, got {type(value).__name__}")
    return value


def get_dict(obj: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    if key not in obj:
        raise ShapeError(f"{where}: missing {key!r}")
    return _typed(obj[key], dict, f"{where}.{key}")


def get_list(obj: Mapping[str, Any], key: str, where: str) -> list[Any]:
    if key not in obj:
        raise ShapeError(f"{where}: missing {key!r}")
    return _typed(obj[key], list, f"{where}.{key}")


def get_str(obj: Mapping[str, Any], key: str, where: str) -> str:
    if key not in obj:
        raise ShapeError(f"{where}: missing {key!r}")
    return _typed(obj[key], str, f"{where}.{key}")


def kind_of(record: Any, key: str = "type") -> str | None:
    """``record[key]`` when ``record`` is an object and the value a string (None otherwise): a
    record's discriminator, safe to compare with sets whatever the JSON holds."""
    if not isinstance(record, Mapping):
        return None
    value = record.get(key)
    return value if isinstance(value, str) else None


def count(value: Any) -> int:
    """A token count as recorded, read as the runtime reads a provider's (:func:`token_count`): a whole
    number from 0 to 10^15; anything else (missing, negative, fractional, text, huge) counts as 0.
    A count past 2^63 (``1e300`` is a whole float) could not even be written to the bench's JSON."""
    return token_count(value)


def parse_time(value: Any) -> float | None:
    """An ISO 8601 timestamp (``2026-01-15T12:10:08.131Z``) as POSIX seconds; None when absent or
    unreadable. A time without a zone is taken as UTC."""
    if not isinstance(value, str) or not 10 <= len(value) <= 40:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def text_of(value: Any, where: str) -> str | None:
    """Message content as text: a string, None, or OpenAI content parts joined as :func:`blocks_text`
    joins them (an image part is ``[image]``, never dropped in silence)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return blocks_text(value)
    raise ShapeError(f"{where}: content must be a string, a list of parts or null")


_IMAGE_BLOCKS = frozenset({"image", "input_image", "image_url"})
_FILE_BLOCKS = frozenset({"document", "input_file", "file"})  # a PDF or text file attached


def blocks_text(value: Any) -> str:
    """Text of a content value in any of the recorded shapes, joined by newlines.

    A string; a list of blocks (``{"type": "text" | "input_text" | "output_text", "text": ...}``,
    strings, images as ``[image]``, attached files (``document``, ``input_file``) as ``[document]``);
    a single block; anything else as compact JSON.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("text"), str):
        return str(value["text"])
    if isinstance(value, list):
        parts = []
        for block in value:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
                parts.append(str(block["text"]))
            elif kind_of(block) in _IMAGE_BLOCKS:
                parts.append("[image]")
            elif kind_of(block) in _FILE_BLOCKS:
                parts.append("[document]")
        return "\n".join(parts)
    return compact_json(value, "content", sort_keys=True)


def chat_usage(usage: Any) -> Usage | None:
    """A chat-completions or Responses API usage record as :class:`Usage` (None when it is not an
    object): ``prompt_tokens`` or ``input_tokens``, the cached part from ``prompt_tokens_details`` or
    ``input_tokens_details``, and the cost the provider billed where it says (OpenRouter's ``cost``)."""
    if not isinstance(usage, Mapping):
        return None
    chat = "prompt_tokens" in usage or "completion_tokens" in usage
    details = usage.get("prompt_tokens_details" if chat else "input_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else 0
    cost = usage.get("cost")
    return Usage(
        prompt_tokens=count(usage.get("prompt_tokens" if chat else "input_tokens")),
        completion_tokens=count(usage.get("completion_tokens" if chat else "output_tokens")),
        cached_tokens=count(cached),
        requests=1,
        cost=float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
    )


def compact_json(value: Any, where: str, *, sort_keys: bool = False) -> str:
    """``value`` as compact JSON text; :class:`ShapeError` for what JSON cannot hold (nesting deeper
    than 255 levels, integers beyond 64 bits)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS if sort_keys else None).decode()
    except orjson.JSONEncodeError as exc:
        raise ShapeError(f"{where}: cannot be written as JSON ({exc})") from None


_ROLES = ("system", "user", "assistant", "tool")


def openai_call(raw: Any, where: str) -> ToolCall:
    """A recorded OpenAI tool call (``{"id", "function": {"name", "arguments"}}``), its shape checked:
    arguments that are not text are kept as compact JSON; a missing id is empty."""
    if not isinstance(raw, Mapping):
        raise ShapeError(f"{where}: a tool call must be an object")
    function = raw.get("function")
    if not isinstance(function, Mapping):
        raise ShapeError(f"{where}.function: expected an object")
    name, arguments, call_id = function.get("name"), function.get("arguments"), raw.get("id")
    if not isinstance(name, str) or not name:
        raise ShapeError(f"{where}.function.name: expected a tool name")
    if not isinstance(arguments, str):
        arguments = compact_json(arguments if arguments is not None else {}, f"{where}.function.arguments")
    return ToolCall(call_id if isinstance(call_id, str) else "", name, arguments)


def openai_calls(value: Any, where: str) -> tuple[ToolCall, ...]:
    """The ``tool_calls`` of a recorded OpenAI message (absent or null: none)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ShapeError(f"{where}: tool_calls must be a list")
    return tuple(openai_call(raw, f"{where}[{index}]") for index, raw in enumerate(value))


def openai_message(data: Mapping[str, Any], iteration: int, where: str) -> Message:
    """A recorded OpenAI chat message, its shape checked (content as text, tool calls validated)."""
    role = kind_of(data, "role")
    if role not in _ROLES:
        raise ShapeError(f"{where}: unknown message role {data.get('role')!r}")
    tool_call_id, name = data.get("tool_call_id"), data.get("name")
    return Message(
        role,  # type: ignore[arg-type]
        text_of(data.get("content"), where),
        tool_calls=openai_calls(data.get("tool_calls"), f"{where}.tool_calls"),
        tool_call_id=tool_call_id if isinstance(tool_call_id, str) else None,
        name=name if isinstance(name, str) else None,
        iteration=iteration,
    )


def dump_arguments(arguments: Mapping[str, Any]) -> str:
    """Tool-call arguments as compact JSON text."""
    return compact_json(dict(arguments), "arguments")


def parse_arguments(text: str) -> dict[str, Any]:
    """Recorded tool-call arguments as an object; ``{}`` when they are not a JSON object.

    Used only to derive tool schemas: the recorded text itself is kept as is.
    """
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


# ---------------------------------------------------------------- tool schemas
def function_schema(
    name: str, description: str, properties: Mapping[str, Any], required: Sequence[str]
) -> dict[str, Any]:
    """An OpenAI function-tool definition (recorded ``properties`` and ``required`` of another shape
    than an object and a list of names count as none)."""
    props = dict(properties) if isinstance(properties, Mapping) else {}
    names = [r for r in required if isinstance(r, str)] if isinstance(required, list | tuple) else []
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": names},
        },
    }


def generic_tool_schema(name: str, fmt: str) -> dict[str, Any]:
    """The schema of a text action recorded as one tool call with a ``command`` string."""
    description = f"Recorded {fmt} action `{name}`; the argument is the full command text."
    return function_schema(name, description, {"command": {"type": "string"}}, ["command"])


_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def infer_schema(value: Any) -> dict[str, Any]:
    """A JSON schema describing one JSON value (objects and arrays recursively)."""
    if value is None:
        return {"type": "null"}
    kind = next(name for cls, name in _JSON_TYPES if isinstance(value, cls))
    if kind == "object":
        props = {k: infer_schema(v) for k, v in value.items()}
        return {"type": "object", "properties": props, "required": list(props)}
    if kind == "array":
        items: dict[str, Any] | None = None
        for element in value:
            schema = infer_schema(element)
            items = schema if items is None else merge_schema(items, schema)
        return {"type": "array", "items": items} if items is not None else {"type": "array"}
    return {"type": kind}


def merge_schema(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """A schema accepting what ``a`` and ``b`` accept (keys missing on one side become optional)."""
    ta, tb = a.get("type"), b.get("type")
    if ta == tb == "object":
        props = dict(a.get("properties", {}))
        for key, schema in b.get("properties", {}).items():
            props[key] = merge_schema(props[key], schema) if key in props else schema
        required = [k for k in a.get("required", []) if k in set(b.get("required", []))]
        return {"type": "object", "properties": props, "required": required}
    if ta == tb == "array":
        if "items" in a and "items" in b:
            return {"type": "array", "items": merge_schema(a["items"], b["items"])}
        return a if "items" in a else b
    if ta == tb:
        return a
    if isinstance(ta, str) and isinstance(tb, str) and {ta, tb} == {"integer", "number"}:
        return {"type": "number"}
    types = sorted({t for s in (ta, tb) for t in (s if isinstance(s, list) else [s]) if isinstance(t, str)})
    return {"type": types}


# ---------------------------------------------------------------- call ids and runs
class CallIds:
    """Unique tool-call ids within one run: a reused id gets the suffix ``_<iteration>``."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._last: dict[str, int] = {}  # base -> the last suffix number it was given
        self.renamed = 0

    def unique(self, call_id: str | None, iteration: int, index: int) -> str:
        """The first of ``id``, ``id_<iteration>``, ``id_<iteration>_2``, ... not given before.

        The search for a base resumes after the number it reached last (every lower one is taken:
        the set only grows), so n calls reusing one id cost n, not n squared (faults.md case 69).
        """
        candidate = call_id or f"call_{iteration}" + (f"_{index}" if index else "")
        if candidate in self._seen:
            self.renamed += 1
            base = f"{candidate}_{iteration}"
            n = self._last.get(base, 1)
            candidate = base if n == 1 else f"{base}_{n}"
            while candidate in self._seen:
                n += 1
                candidate = f"{base}_{n}"
            self._last[base] = n
        self._seen.add(candidate)
        return candidate


def is_read_only(name: str) -> bool:
    """Whether a recorded tool only reads (by the naming convention of the recorded agents)."""
    return name in READ_ONLY_NAMES or name.startswith(READ_ONLY_PREFIXES)


def schemas_from_calls(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """One function schema per tool called, in order of first call, typed from the arguments seen.

    For logs that record the calls but not the tool definitions.
    """
    schemas: dict[str, dict[str, Any]] = {}
    for call in (c for m in messages for c in m.tool_calls):
        schema = infer_schema(parse_arguments(call.arguments))
        schemas[call.name] = merge_schema(schemas[call.name], schema) if call.name in schemas else schema
    return [
        function_schema(name, "", s.get("properties", {}), s.get("required", []))
        for name, s in schemas.items()
    ]


def _tool_names(messages: Iterable[Message], tools: Iterable[Mapping[str, Any]]) -> list[str]:
    names = [str(t.get("function", {}).get("name", "")) for t in tools]
    names += [c.name for m in messages for c in m.tool_calls]
    return [n for n in dict.fromkeys(names) if n]


def used_tools(messages: Sequence[Message]) -> list[str]:
    """Tool names in order of first call."""
    return list(dict.fromkeys(c.name for m in messages for c in m.tool_calls))


def build_run(
    *,
    run_id: str,
    source: str,
    fmt: str,
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]],
    usage: Sequence[Usage | None] | None = None,
    model: str | None = None,
    metadata: dict[str, Any] | None = None,
    read_only: Callable[[str], bool] = is_read_only,
    read_only_calls: Iterable[str] = (),
    routes: Sequence[str | None] = (),
    timing: StepTiming | None = None,
) -> RecordedRun:
    """A :class:`RecordedRun` with read-only tools derived from the tool names.

    ``read_only`` decides by tool name (the recorded agents' naming convention
    by default); ``read_only_calls`` adds single calls (ids) whose command only
    reads, for tools that can also write. ``routes``: the endpoint of each step,
    where recorded (empty: none recorded). ``timing``: what the log recorded about
    time, cache lifetimes and the agent's own compaction (see :class:`RecordedRun`).
    """
    steps = sum(1 for m in messages if m.role == "assistant")
    recorded = tuple(usage) if usage is not None else (None,) * steps
    timing = timing or StepTiming()
    _check_shape(steps, recorded, routes, timing)
    compact_json(list(tools), "tools")  # the replay writes and hashes them: they must be valid JSON
    names = _tool_names(messages, tools)
    return RecordedRun(
        run_id=run_id,
        source=source,
        format=fmt,
        messages=tuple(messages),
        tools=tuple(tools),
        read_only_tools=frozenset(n for n in names if read_only(n)),
        usage=recorded,
        model=model,
        metadata=dict(metadata or {}),
        read_only_calls=frozenset(read_only_calls),
        routes=_recorded_any(routes),
        timestamps=_recorded_any(timing.timestamps),
        cache_writes_1h=tuple(timing.cache_writes_1h) if any(timing.cache_writes_1h) else (),
        restarts=tuple(sorted(set(timing.restarts))),
        prompt_complete=timing.prompt_complete,
        reasoning_steps=frozenset(s for s in timing.reasoning_steps if 0 < s <= steps),
        step_models=switched_models(timing.models),
        step_billing=tuple(timing.billing) if any(timing.billing) else (),
    )


def _check_shape(
    steps: int, usage: Sequence[Usage | None], routes: Sequence[str | None], timing: StepTiming
) -> None:
    """Every per-step sequence the log gave has one entry per step (:class:`ShapeError` otherwise)."""
    per_step = (
        ("usage records", usage),
        ("routes", routes),
        ("timestamps", timing.timestamps),
        ("cache_writes_1h", timing.cache_writes_1h),
        ("models", timing.models),
        ("billing tiers", timing.billing),
    )
    for name, values in per_step:
        if (values or name == "usage records") and len(values) != steps:
            raise ShapeError(f"{len(values)} {name} for {steps} steps")


def switched_models(models: Sequence[str | None]) -> tuple[str, ...]:
    """Per step, the model that answered it, when the run switched models (two or more named);
    empty when it used one (its :attr:`RecordedRun.model` then prices every step). A step whose
    model is not recorded is answered by the model named before it (the first one named, at the
    start)."""
    named = [m for m in models if m]
    if len(set(named)) < 2:
        return ()
    current = named[0]
    out: list[str] = []
    for model in models:
        current = model or current
        out.append(current)
    return tuple(out)


def _recorded_any(values: Sequence[T | None]) -> tuple[T | None, ...]:
    """``values`` as a tuple, or empty when none was recorded."""
    return tuple(values) if any(v is not None for v in values) else ()


def tool_call(call_id: str, name: str, command: str) -> ToolCall:
    """A recorded text action as a tool call with a ``command`` argument."""
    return ToolCall(id=call_id, name=name, arguments=dump_arguments({"command": command}))
