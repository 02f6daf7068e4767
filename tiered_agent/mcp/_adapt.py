"""An MCP tool as an ordinary :class:`Tool`: its name, schema validation and read-only hint (or the
server config's ``read_only``).

The model sees ``SERVER__TOOL``, made to fit the tool-name rule (1-64 letters,
digits, ``_`` or ``-``): other characters become ``_`` and a name still too long
is shortened with a hash of the original, so it stays unique. Arguments are
checked against the tool's JSON schema (``jsonschema``) before the call, so the
model's mistakes come back as ``invalid_arguments`` like for built-in tools.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import jsonschema
import orjson
import structlog
from jsonschema.exceptions import SchemaError
from mcp.types import Tool as MCPTool

from .._tools import ArgumentValidator, Tool
from ._config import MCPServerConfig

__all__ = ["MAX_SCHEMA_BYTES", "adapt_tool", "marked_read_only", "refusal", "tool_name"]

log = structlog.get_logger(__name__)

MAX_NAME = 64
MAX_SCHEMA_BYTES = 100_000  # every request carries every tool's schema: ~25,000 tokens at most each
_INVALID_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_MAX_PROBLEM_CHARS = 300

CallFn = Callable[[str, dict[str, Any]], Awaitable[str]]


def tool_name(server: str, tool: str) -> str:
    """``SERVER__TOOL`` within the tool-name rule; distinct inputs stay distinct unless they differ
    only in characters the rule forbids."""
    raw = f"{server}__{tool}"
    name = _INVALID_CHARS.sub("_", raw)
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def adapt_tool(server: MCPServerConfig, spec: MCPTool, call: CallFn) -> Tool:
    """A :class:`Tool` whose function sends ``tools/call`` for ``spec`` through ``call``."""
    name = tool_name(server.name, spec.name)
    parameters = dict(spec.input_schema)
    parameters.setdefault("properties", {})
    mcp_name = spec.name

    async def run(**arguments: Any) -> str:
        return await call(mcp_name, arguments)

    run.__name__ = name
    annotations = spec.annotations
    fallback = f"Tool {spec.name!r} of the MCP server {server.name!r}."
    return Tool(
        name=name,
        description=spec.description or spec.title or fallback,
        parameters=parameters,
        fn=run,
        read_only=bool(annotations is not None and annotations.read_only_hint)
        or marked_read_only(server, spec.name),
        timeout_s=server.tool_timeout_s,
        validator=schema_validator(name, parameters),
    )


def refusal(spec: MCPTool) -> str | None:
    """Why the run cannot offer ``spec`` to a model (a provider would refuse every request carrying
    it), or None: an input schema whose ``type`` is not ``object``, or one over 100,000 bytes."""
    schema = spec.input_schema
    kind = schema.get("type", "object")
    if kind != "object":
        return f"its input schema is of type {str(kind)[:40]!r}; a tool's parameters must be an object"
    try:
        size = len(orjson.dumps(schema))
    except (TypeError, orjson.JSONEncodeError) as exc:  # nested past 255 levels, a key that is not text
        return f"its input schema cannot be sent as JSON ({exc})"
    if size > MAX_SCHEMA_BYTES:
        return f"its input schema is {size:,} bytes; at most {MAX_SCHEMA_BYTES:,} are sent to a model"
    return None


def marked_read_only(server: MCPServerConfig, tool: str) -> bool:
    """Whether the server's config marks ``tool`` read-only (``read_only=True`` or naming it)."""
    marked = server.read_only
    return marked if isinstance(marked, bool) else tool in marked


def schema_validator(name: str, schema: Mapping[str, Any]) -> ArgumentValidator | None:
    """A validator for ``schema`` (JSON Schema 2020-12 unless it says otherwise); None when the
    schema itself is invalid: the server then validates alone."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        log.warning("mcp_tool_schema_invalid", tool=name, error=exc.message[:200])
        return None
    validator = cls(schema)

    def validate(arguments: Mapping[str, Any]) -> Sequence[tuple[str, str]]:
        errors = sorted(validator.iter_errors(dict(arguments)), key=lambda e: [str(p) for p in e.path])
        return [(_location(error.absolute_path), error.message[:_MAX_PROBLEM_CHARS]) for error in errors]

    return validate


def _location(path: Sequence[object]) -> str:
    return ".".join(str(part) for part in path) or "(arguments)"
