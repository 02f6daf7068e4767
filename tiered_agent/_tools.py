"""Tools: the ``@tool`` decorator, the :class:`Tool` value, and :class:`ToolSet`.

``@tool`` turns a typed, documented function into a :class:`Tool`: the JSON
schema comes from the type hints (via pydantic), the descriptions from the
docstring (first paragraph for the tool, Google-style ``Args:`` for each
parameter). Mistakes in the *definition* raise :class:`ConfigurationError` at
decoration time.

:meth:`ToolSet.execute` runs one model-requested call and never raises for what
the *model* got wrong: an unknown tool, arguments that are not JSON or do not
validate, a tool that fails, times out or returns something odd all become a
:class:`ToolOutcome` with ``is_error`` set and a message the model can act on.
Cancellation of the caller is not a model mistake and propagates.
"""

from __future__ import annotations

import copy
import functools
import inspect
import os
import re
import sys
import threading
import typing
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

import anyio
import anyio.to_thread
import orjson
import structlog
from cachetools import LRUCache
from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, ValidationError, create_model

from ._errors import ConfigurationError, ToolError
from ._files import write_fully
from ._messages import ToolCall
from ._text import clean_surrogates, escape_nul
from ._trace import parse_json, redact

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "MAX_ARGUMENT_CHARS",
    "ArgumentValidator",
    "InvalidArguments",
    "Tool",
    "ToolOutcome",
    "ToolSet",
    "ToolTimeout",
    "fit_call",
    "tool",
]

DEFAULT_MAX_OUTPUT_BYTES = 1_000_000
_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_NOT_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
MAX_ARGUMENT_CHARS = 200_000  # a call's arguments past this are not run, unless the window allows more
_KEPT_ARGUMENT_CHARS = 1_000  # what the history keeps of arguments that were too long
_QUOTED_NAME_CHARS = 100
_SECTION_RE = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Returns?|Yields?|Raises|Examples?|Notes?|"
    r"Attributes|See Also|Warnings?|Todo|References)\s*:\s*$",
    re.IGNORECASE,
)
_ARG_RE = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_BINARY_SNIFF_BYTES = 8192
_MAX_LISTED_ERRORS = 8

log = structlog.get_logger(__name__)

ToolFn = Callable[..., Any]
ArgumentValidator = Callable[[Mapping[str, Any]], Sequence[tuple[str, str]]]
"""Checks a call's arguments against a schema: the (location, problem) pairs found, none when they fit."""


# --------------------------------------------------------------------------- values


@dataclass(frozen=True)
class Tool:
    """A function the model may call.

    ``fn`` may be sync (run in a worker thread) or async. ``parameters`` is the
    JSON schema of its keyword arguments. ``arguments_model`` (set by ``@tool``)
    validates arguments; without it, arguments are only checked against ``fn``'s
    signature. ``validator`` (set for tools described only by a JSON schema, such
    as MCP tools) checks arguments instead and passes them on unchanged.
    ``internal`` marks runtime-provided context tools whose results are never
    truncated nor deduplicated.
    """

    name: str
    description: str
    parameters: dict[str, Any] = field(hash=False)
    fn: ToolFn
    read_only: bool = False
    timeout_s: float | None = None
    internal: bool = False
    arguments_model: type[BaseModel] | None = field(default=None, repr=False, compare=False)
    validator: ArgumentValidator | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not _NAME_RE.match(self.name):
            raise ConfigurationError(
                f"tool name {self.name!r} is invalid: use 1-64 letters, digits, '_' or '-'"
            )
        if self.timeout_s is not None and self.timeout_s <= 0:
            raise ConfigurationError(f"tool {self.name!r}: timeout_s must be positive, got {self.timeout_s}")

    def schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry for this tool."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def validate_arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Keyword arguments for ``fn``; raises ``ValidationError``, ``InvalidArguments`` or ``TypeError``."""
        if self.validator is not None:
            problems = self.validator(arguments)
            if problems:
                raise InvalidArguments(problems)
            return dict(arguments)
        if self.arguments_model is None:
            inspect.signature(self.fn).bind(**arguments)
            return dict(arguments)
        instance = self.arguments_model.model_validate(dict(arguments))
        fields = type(instance).model_fields
        return {info.alias or name: getattr(instance, name) for name, info in fields.items()}

    @property
    def is_async(self) -> bool:
        call = getattr(self.fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
        return inspect.iscoroutinefunction(self.fn) or inspect.iscoroutinefunction(call)


@dataclass(frozen=True)
class ToolOutcome:
    """The result of one tool call as the model will see it.

    ``error_kind`` names what went wrong (``unknown_tool``, ``invalid_json``,
    ``invalid_arguments``, ``invalid_schema``, ``tool_error``, ``exception``, ``timeout``) or what
    was done to a successful output (``binary_output``, ``invalid_utf8``,
    ``output_capped``; ``is_error`` stays False for those). ``original_bytes``
    is the UTF-8 size of the output before capping; ``spill_path`` is where the
    full output was written, if it was.
    """

    content: str
    is_error: bool = False
    error_kind: str | None = None
    original_bytes: int = 0
    spill_path: Path | None = None

    @classmethod
    def error(cls, kind: str, content: str) -> ToolOutcome:
        return cls(content=content, is_error=True, error_kind=kind, original_bytes=len(content.encode()))


def fit_call(call: ToolCall, max_argument_chars: int = MAX_ARGUMENT_CHARS) -> tuple[ToolCall, str | None]:
    """The call as the next request can carry it, and why it cannot run (None: it runs as it is).

    A provider refuses a request whose history holds a tool name outside 1-64 letters, digits,
    ``_`` or ``-`` (empty, spaced, megabytes long), and no window holds megabytes of arguments:
    such a call gets a name that fits and names no tool (``invalid_`` and its characters outside the
    rule as ``_``, cut at 64: ``invalid_read_file`` for ``read file``, ``invalid_name`` for ``""``)
    and arguments cut to ``{"arguments_cut": <their first 1,000 characters>}``. The call never
    runs; the reason says what was wrong, quoting at most 100 characters."""
    problems = []
    name, arguments = call.name, call.arguments
    if not _NAME_RE.match(name):
        name = f"invalid_{_NOT_NAME_CHARS.sub('_', name) or 'name'}"[:64]  # never a tool's name
        shown = call.name if len(call.name) <= _QUOTED_NAME_CHARS else call.name[:_QUOTED_NAME_CHARS] + "..."
        problems.append(
            f"the tool name {shown!r} ({len(call.name):,} characters) is no tool name: "
            "names are 1-64 letters, digits, '_' or '-'"
        )
    wrong = _arguments_problem(arguments, max_argument_chars)
    if wrong is not None:
        problems.append(wrong)
        arguments = orjson.dumps({"arguments_cut": arguments[:_KEPT_ARGUMENT_CHARS]}).decode()
    if not problems:
        return call, None
    return ToolCall(call.id, name, arguments), "; ".join(problems)


def _arguments_problem(arguments: str, max_chars: int) -> str | None:
    """Why a call's arguments cannot stay in the history as they are, or None."""
    if len(arguments) > max_chars:
        return (
            f"its arguments are {len(arguments):,} characters, over the {max_chars:,} a call may send "
            "(write a large file in parts, or have a command produce it)"
        )
    if _nested_too_deep(arguments):
        return "its arguments nest deeper than 255 levels, which no JSON writer goes"
    return None


def _nested_too_deep(arguments: str) -> bool:
    """Whether ``arguments`` is JSON nested past 255 levels: JSON for orjson (up to 1,024 levels), not
    for :func:`~._trace.parse_json`, whose rule every reader of the history keeps (the context steps
    write a call's arguments back out, which orjson cannot past 255)."""
    try:
        orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return False  # not JSON at all: the tool's answer says so (invalid_json)
    try:
        parse_json(arguments.encode("utf-8", "surrogatepass"))
    except orjson.JSONDecodeError:
        return True
    return False


class InvalidArguments(ValueError):
    """Arguments a :class:`Tool` ``validator`` rejected: (location, problem) pairs."""

    def __init__(self, problems: Sequence[tuple[str, str]]) -> None:
        super().__init__("; ".join(f"{where}: {problem}" for where, problem in problems))
        self.problems = tuple(problems)


class ToolTimeout(ToolError):
    """Raised by a tool that enforces its own time limit; reported with ``error_kind="timeout"``."""


# --------------------------------------------------------------------------- decorator


@overload
def tool(fn: ToolFn, /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    timeout_s: float | None = None,
    internal: bool = False,
) -> Callable[[ToolFn], Tool]: ...


def tool(
    fn: ToolFn | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    timeout_s: float | None = None,
    internal: bool = False,
) -> Tool | Callable[[ToolFn], Tool]:
    """Make a :class:`Tool` from a typed function with a Google-style docstring.

    Usable bare (``@tool``) or with options (``@tool(read_only=True, timeout_s=30)``).
    """

    def build(func: ToolFn, caller_locals: dict[str, Any]) -> Tool:
        tool_name: str = name or str(getattr(func, "__name__", ""))
        summary, arg_docs = _parse_docstring(tool_name, func, description)
        model = _arguments_model(tool_name, func, arg_docs, caller_locals)
        return Tool(
            name=tool_name,
            description=description or summary,
            parameters=_parameters_schema(model),
            fn=func,
            read_only=read_only,
            timeout_s=timeout_s,
            internal=internal,
            arguments_model=model,
        )

    if fn is not None:
        return build(fn, _caller_locals())

    def decorate(func: ToolFn) -> Tool:
        return build(func, _caller_locals())

    return decorate


def _caller_locals() -> dict[str, Any]:
    """Locals of the code applying the decorator, so hints naming local classes resolve."""
    frame = sys._getframe(2)
    return dict(frame.f_locals)


def _parse_docstring(tool_name: str, func: ToolFn, override: str | None) -> tuple[str, dict[str, str]]:
    """(first paragraph, {parameter: description}) from the function's docstring."""
    doc = inspect.getdoc(func)
    if not doc and not override:
        raise ConfigurationError(f"tool {tool_name!r} has no docstring: it becomes the model's description")
    lines = (doc or "").splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION_RE.match(line):
            break
        summary.append(line.strip())
    return " ".join(summary), _parse_args_section(lines)


def _parse_args_section(lines: list[str]) -> dict[str, str]:
    docs: dict[str, str] = {}
    start = next((i for i, line in enumerate(lines) if _SECTION_RE.match(line) and _is_args(line)), None)
    if start is None:
        return docs
    current: str | None = None
    base_indent: int | None = None
    for line in lines[start + 1 :]:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            break
        if base_indent is None:
            base_indent = indent
        match = _ARG_RE.match(line.strip())
        if indent <= base_indent and match:
            current = match.group(1)
            docs[current] = match.group(2).strip()
        elif current is not None:
            docs[current] = f"{docs[current]} {line.strip()}".strip()
    return docs


def _is_args(header: str) -> bool:
    return header.strip().rstrip(":").strip().lower() in {"args", "arguments", "parameters", "params"}


def _arguments_model(
    tool_name: str, func: ToolFn, arg_docs: dict[str, str], localns: dict[str, Any]
) -> type[BaseModel]:
    try:
        signature = inspect.signature(func)
        hints = typing.get_type_hints(func, localns=localns, include_extras=True)
    except (TypeError, ValueError, NameError) as exc:
        raise ConfigurationError(f"tool {tool_name!r}: cannot read its signature: {exc}") from exc
    unknown = set(arg_docs) - set(signature.parameters)
    if unknown:
        raise ConfigurationError(
            f"tool {tool_name!r}: docstring documents unknown parameter(s) {', '.join(sorted(unknown))}"
        )
    fields: dict[str, Any] = {}
    for index, param in enumerate(signature.parameters.values()):
        _check_parameter(tool_name, param, hints)
        default = ... if param.default is inspect.Parameter.empty else param.default
        info = Field(default, alias=param.name, description=arg_docs.get(param.name) or None)
        fields[f"arg_{index}"] = (hints[param.name], info)
    shape = _shape(tool_name, signature, hints, arg_docs)
    if shape is None:
        return _new_model(tool_name, fields)
    with _MODELS_LOCK:
        known = _MODELS.get(shape)
    if known is None:
        known = _new_model(tool_name, fields)
        with _MODELS_LOCK:
            _MODELS[shape] = known
    return known


# The argument models of tools of the same shape (name, parameters with their defaults, resolved
# types and docs): a tool defined in a function (a workspace's tools, made for every agent) gets the
# model its first making built instead of a new pydantic class each time. The model is immutable
# and a function of the shape alone; the table is bounded (a static lookup, no run data).
_MODELS: LRUCache[tuple[Any, ...], type[BaseModel]] = LRUCache(maxsize=1024)
_MODELS_LOCK = threading.Lock()


def _shape(
    tool_name: str, signature: inspect.Signature, hints: dict[str, Any], arg_docs: dict[str, str]
) -> tuple[Any, ...] | None:
    """What an argument model is made of, or None when a part cannot be a key (unhashable)."""
    params = tuple(
        (p.name, p.kind, p.default, type(p.default), hints.get(p.name), arg_docs.get(p.name))
        for p in signature.parameters.values()
    )
    key = (tool_name, params)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _new_model(tool_name: str, fields: dict[str, Any]) -> type[BaseModel]:
    try:
        model: type[BaseModel] = create_model(  # type: ignore[call-overload, unused-ignore]
            f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
        )
        schema = _schema_of(model)  # a type pydantic cannot describe fails here, at decoration
    except (PydanticUserError, TypeError) as exc:
        raise ConfigurationError(f"tool {tool_name!r}: unsupported parameter type: {exc}") from exc
    with _MODELS_LOCK:
        _SCHEMAS[model] = schema
    return model


def _check_parameter(tool_name: str, param: inspect.Parameter, hints: dict[str, Any]) -> None:
    kind = param.kind
    if kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
        raise ConfigurationError(f"tool {tool_name!r}: *args/**kwargs ({param.name}) cannot be described")
    if kind is inspect.Parameter.POSITIONAL_ONLY:
        raise ConfigurationError(f"tool {tool_name!r}: positional-only parameter {param.name!r}")
    if param.name not in hints:
        raise ConfigurationError(f"tool {tool_name!r}: parameter {param.name!r} has no type annotation")


_SCHEMA_MAPS = ("properties", "$defs", "patternProperties")
_SCHEMA_NODES = ("items", "additionalProperties", "not")
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")


# The JSON schema of each argument model, made once (pydantic's schema generator leaves reference
# cycles behind every time it runs); every tool gets its own copy.
_SCHEMAS: weakref.WeakKeyDictionary[type[BaseModel], dict[str, Any]] = weakref.WeakKeyDictionary()


def _parameters_schema(model: type[BaseModel]) -> dict[str, Any]:
    with _MODELS_LOCK:
        known = _SCHEMAS.get(model)
    if known is None:
        known = _schema_of(model)
        with _MODELS_LOCK:
            _SCHEMAS[model] = known
    return copy.deepcopy(known)


def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    schema: dict[str, Any] = _strip_titles(model.model_json_schema())
    schema.pop("additionalProperties", None)  # validation forbids extras; some providers reject the key
    schema.setdefault("properties", {})
    return schema


def _strip_titles(node: Any) -> Any:
    """Drop pydantic's auto-generated ``title`` keywords, recursing only into sub-schemas."""
    if not isinstance(node, dict):
        return node
    out = {key: value for key, value in node.items() if key != "title"}
    for key in _SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: _strip_titles(sub) for name, sub in out[key].items()}
    for key in _SCHEMA_NODES:
        if isinstance(out.get(key), dict):
            out[key] = _strip_titles(out[key])
    for key in _SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [_strip_titles(sub) for sub in out[key]]
    return out


# --------------------------------------------------------------------------- tool set


class ToolSet:
    """An immutable set of tools with unique names, and the safe executor for model calls."""

    def __init__(
        self,
        tools: Iterable[Tool] = (),
        *,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        default_timeout_s: float | None = None,
        on_outcome: Callable[[ToolCall, ToolOutcome], None] | None = None,
    ) -> None:
        if max_output_bytes <= 0:
            raise ConfigurationError(f"max_output_bytes must be positive, got {max_output_bytes}")
        self._tools: dict[str, Tool] = {}
        for item in tools:
            if not isinstance(item, Tool):
                raise ConfigurationError(f"ToolSet takes Tool objects (use @tool), got {item!r}")
            if item.name in self._tools:
                raise ConfigurationError(f"duplicate tool name {item.name!r}")
            self._tools[item.name] = item
        self.max_output_bytes = max_output_bytes
        self.default_timeout_s = default_timeout_s
        self.on_outcome = on_outcome

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        return [item.schema() for item in self._tools.values()]

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __repr__(self) -> str:
        return f"ToolSet({list(self._tools)!r})"

    def with_tools(self, *tools: Tool | Iterable[Tool]) -> ToolSet:
        """A new ToolSet with these tools added (duplicate names raise ConfigurationError)."""
        added: list[Tool] = []
        for item in tools:
            added.extend([item] if isinstance(item, Tool) else item)
        return ToolSet(
            [*self._tools.values(), *added],
            max_output_bytes=self.max_output_bytes,
            default_timeout_s=self.default_timeout_s,
            on_outcome=self.on_outcome,
        )

    def observed(self, on_outcome: Callable[[ToolCall, ToolOutcome], None]) -> ToolSet:
        """A copy that reports every outcome of :meth:`execute` to ``on_outcome`` as soon as it exists
        (the loop keeps the results of a batch that is interrupted before it is recorded)."""
        return ToolSet(
            self._tools.values(),
            max_output_bytes=self.max_output_bytes,
            default_timeout_s=self.default_timeout_s,
            on_outcome=on_outcome,
        )

    async def execute(self, call: ToolCall, *, spill_dir: Path | None = None) -> ToolOutcome:
        """Run one call; model mistakes and tool failures come back as an error outcome."""
        outcome = await self._execute(call, spill_dir)
        if self.on_outcome is not None:
            self.on_outcome(call, outcome)
        return outcome

    async def _execute(self, call: ToolCall, spill_dir: Path | None) -> ToolOutcome:
        found = self._tools.get(call.name)
        if found is None:
            available = ", ".join(self._tools) or "(none)"
            return ToolOutcome.error(
                "unknown_tool", f"Error: unknown tool {call.name!r}. Available tools: {available}."
            )
        prepared = _prepare_arguments(found, call.arguments)
        if isinstance(prepared, ToolOutcome):
            return prepared
        outcome = await self._run(found, call, prepared)
        if isinstance(outcome, ToolOutcome):
            return outcome
        return await self._finish(found, call, outcome, spill_dir)

    async def _run(self, item: Tool, call: ToolCall, kwargs: dict[str, Any]) -> ToolOutcome | object:
        limit = item.timeout_s if item.timeout_s is not None else self.default_timeout_s
        scope = anyio.move_on_after(limit) if limit is not None else nullcontext()
        result: ToolOutcome | object = None
        with scope:
            result = await _invoke_guarded(item, call, kwargs)
        if isinstance(scope, anyio.CancelScope) and scope.cancelled_caught:
            log.warning("tool_timeout", tool=item.name, call_id=call.id, timeout_s=limit)
            return ToolOutcome.error(
                "timeout", f"Error: tool {item.name!r} timed out after {limit:g} s and was stopped."
            )
        return result

    async def _finish(
        self, item: Tool, call: ToolCall, result: object, spill_dir: Path | None
    ) -> ToolOutcome:
        if isinstance(result, bytes | bytearray | memoryview):
            decoded = await _decode_bytes(bytes(result), call.id, spill_dir)
            if isinstance(decoded, ToolOutcome):
                return decoded
            text, kind = decoded
        else:
            text, kind = _to_text(result), None
        # Redacted before anything is cut or saved: a cap cannot leave half a secret behind, and the
        # spilled file holds what the trace would. Lone surrogates (JSON cannot hold them) become
        # escapes; NUL bytes, which providers reject or cut at, are shown to the model as \x00.
        full: str = redact(clean_surrogates(text))
        shown = escape_nul(full)
        data = shown.encode("utf-8")
        if item.internal or len(data) <= self.max_output_bytes:
            return ToolOutcome(content=shown, error_kind=kind, original_bytes=len(data))
        return await _cap(data, self.max_output_bytes, call.id, spill_dir, full=full.encode("utf-8"))


def _prepare_arguments(item: Tool, raw: str) -> dict[str, Any] | ToolOutcome:
    try:
        parsed = orjson.loads(raw) if raw.strip() else {}
    except orjson.JSONDecodeError as exc:
        return ToolOutcome.error(
            "invalid_json",
            f"Error: the arguments for tool {item.name!r} are not valid JSON ({exc}). "
            "Send a single JSON object.",
        )
    if not isinstance(parsed, dict):
        return ToolOutcome.error(
            "invalid_arguments",
            f"Error: the arguments for tool {item.name!r} must be a JSON object, "
            f"got {type(parsed).__name__}.",
        )
    return _validated(item, parsed)


def _validated(item: Tool, parsed: dict[str, Any]) -> dict[str, Any] | ToolOutcome:
    """``parsed`` checked by the tool's validator; what does not fit is an error outcome."""
    try:
        return item.validate_arguments(parsed)
    except ValidationError as exc:
        return ToolOutcome.error("invalid_arguments", _format_validation_error(item, exc))
    except InvalidArguments as exc:
        return ToolOutcome.error("invalid_arguments", _format_problems(item, exc.problems))
    except TypeError as exc:
        message = f"Error: invalid arguments for tool {item.name!r}: {exc}"
        return ToolOutcome.error("invalid_arguments", message)
    except RecursionError:  # a schema that refers to itself without end (an MCP server's `$ref: "#"`)
        log.warning("tool_schema_recursive", tool=item.name)
        return ToolOutcome.error(
            "invalid_schema",
            f"Error: tool {item.name!r} cannot be called: checking arguments against its input schema "
            "never ends (the schema refers to itself); use another tool.",
        )


def _format_validation_error(item: Tool, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(part) for part in err["loc"]) or "(arguments)"
        got = "" if err["type"] == "missing" else f" (got {_short_repr(err.get('input'))})"
        problems.append((where, f"{err['msg']}{got}"))
    return _format_problems(item, problems)


def _format_problems(item: Tool, problems: Sequence[tuple[str, str]]) -> str:
    lines = [f"Error: invalid arguments for tool {item.name!r}:"]
    lines.extend(f"- {where}: {problem}" for where, problem in problems[:_MAX_LISTED_ERRORS])
    if len(problems) > _MAX_LISTED_ERRORS:
        lines.append(f"- ... and {len(problems) - _MAX_LISTED_ERRORS} more")
    lines.append(f"Expected parameters: {_describe_parameters(item.parameters)}.")
    return "\n".join(lines)


def _describe_parameters(schema: Mapping[str, Any]) -> str:
    required = set(schema.get("required", ()))
    names = [f"{name} (required)" if name in required else name for name in schema.get("properties", {})]
    return ", ".join(names) or "none"


def _short_repr(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


async def _invoke_guarded(item: Tool, call: ToolCall, kwargs: dict[str, Any]) -> ToolOutcome | object:
    """Call the tool; its failures become outcomes. Cancellation (a BaseException) propagates."""
    try:
        return await _invoke(item, kwargs)
    except ToolError as exc:
        log.info("tool_error", tool=item.name, call_id=call.id, error=str(exc)[:200])
        kind = "timeout" if isinstance(exc, ToolTimeout) else "tool_error"
        return ToolOutcome.error(kind, f"Error: {exc}")
    except Exception as exc:
        log.exception("tool_exception", tool=item.name, call_id=call.id)
        return ToolOutcome.error("exception", f"Error: tool {item.name!r} raised {type(exc).__name__}: {exc}")


async def _invoke(item: Tool, kwargs: dict[str, Any]) -> object:
    if item.is_async:
        result = await item.fn(**kwargs)
    else:
        # abandon_on_cancel: a timeout or cancellation returns at once; the thread finishes on its own.
        bound = functools.partial(item.fn, **kwargs)
        result = await anyio.to_thread.run_sync(bound, abandon_on_cancel=True)
    if inspect.isawaitable(result):
        result = await typing.cast(Awaitable[object], result)
    return result


def _to_text(result: object) -> str:
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    if isinstance(result, BaseModel):
        return result.model_dump_json()
    if isinstance(result, dict | list | tuple):
        return orjson.dumps(result, default=_json_default).decode()
    return str(result)


def _json_default(value: object) -> object:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return str(value)


async def _decode_bytes(
    data: bytes, call_id: str, spill_dir: Path | None
) -> tuple[str, str | None] | ToolOutcome:
    """Text from a bytes result: UTF-8, else replacement-decoded with a note, else a binary notice."""
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        pass
    if b"\x00" in data[:_BINARY_SNIFF_BYTES]:
        return await _binary(data, call_id, spill_dir)
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") - data.decode("utf-8", errors="ignore").count("\ufffd")
    note = f"\n[output was not valid UTF-8: {bad} undecodable byte sequence(s) shown as U+FFFD]"
    return text + note, "invalid_utf8"


async def _binary(data: bytes, call_id: str, spill_dir: Path | None) -> ToolOutcome:
    text = f"[binary output, {len(data)} bytes, not shown]"
    try:
        path = await _spill(_redact_bytes(data), call_id, spill_dir)
    except OSError as exc:
        return _spill_failed(f"{text[:-1]}; saving it failed: {_reason(exc)}]", len(data))
    if path is not None:
        text = f"[binary output, {len(data)} bytes, not shown; saved to {path}]"
    return ToolOutcome(content=text, error_kind="binary_output", original_bytes=len(data), spill_path=path)


def _redact_bytes(data: bytes) -> bytes:
    """``data`` redacted like text, every other byte kept (non-UTF-8 bytes pass through as is)."""
    text = data.decode("utf-8", "surrogateescape")
    cleaned: str = redact(text)
    return data if cleaned == text else cleaned.encode("utf-8", "surrogateescape")


async def _cap(data: bytes, limit: int, call_id: str, spill_dir: Path | None, *, full: bytes) -> ToolOutcome:
    """The first ``limit`` bytes of ``data`` (the output as shown), the whole output (``full``,
    already redacted) saved in ``spill_dir``."""
    head = data[:limit].decode("utf-8", errors="ignore")  # never split a character
    shown = f"\n\n[output capped: showing the first {limit} of {len(data)} bytes; "
    try:
        path = await _spill(full, call_id, spill_dir)
    except OSError as exc:
        note = f"saving the full output failed ({_reason(exc)}), so {len(data) - limit} bytes are lost]"
        return _spill_failed(head + shown + note, len(data))
    if path is not None:
        note = f"the full output ({len(full)} bytes) is saved at {path}]"
    else:
        note = f"{len(data) - limit} bytes dropped]"
    return ToolOutcome(
        content=head + shown + note, error_kind="output_capped", original_bytes=len(data), spill_path=path
    )


def _spill_failed(content: str, original_bytes: int) -> ToolOutcome:
    """Only this call fails when its output cannot be saved (a full disk); the run goes on."""
    log.warning("tool_spill_failed", detail=content[-200:])
    return ToolOutcome(
        content=content, is_error=True, error_kind="spill_failed", original_bytes=original_bytes
    )


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


async def _spill(data: bytes, call_id: str, spill_dir: Path | None) -> Path | None:
    """Save ``data`` in a new file of ``spill_dir``; raises OSError when that fails.

    Named after the call id, never overwriting: a model may reuse an id, so a later output
    goes to ``<id>.2.out`` (``.3``, ...) and every message points to its own content.
    """
    if spill_dir is None:
        return None
    safe_id = re.sub(r"[^A-Za-z0-9_.-]", "_", call_id).lstrip(".") or "call"

    def write() -> Path:
        spill_dir.mkdir(parents=True, exist_ok=True)
        for number in range(1, 100_000):
            path = spill_dir / (f"{safe_id}.out" if number == 1 else f"{safe_id}.{number}.out")
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                continue
            try:
                write_fully(fd, data)
            except OSError:
                path.unlink(missing_ok=True)  # no truncated copy that claims to be the full output
                raise
            finally:
                os.close(fd)
            return path
        raise FileExistsError(f"too many outputs named {safe_id} in {spill_dir}")

    return await anyio.to_thread.run_sync(write)
