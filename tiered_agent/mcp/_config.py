"""MCP server configuration: typed, frozen values and the ``mcpServers`` JSON loader.

The file format is the one Claude Desktop, Claude Code, Cursor and others read::

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
                  "env": {"DEBUG": "0"}, "cwd": "/srv"},
        "docs":  {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}
    }}

Tolerated variants: VS Code's top-level ``servers``; a ``type`` or ``transport`` key
(``stdio``, ``http``, ``streamable-http``, ``streamableHttp``, ``sse`` for the older
HTTP+SSE transport); ``serverUrl``/``httpUrl`` for ``url``; ``"disabled": true`` or
``"enabled": false`` to skip an entry; keys other clients use (``autoApprove``,
``timeout``, ...) are ignored. Per server, ``startupTimeout`` and ``toolTimeout`` (seconds;
also ``startup_timeout_sec``/``tool_timeout_sec`` as Codex spells them, and ``...Ms`` /
``..._ms`` in milliseconds) and ``readOnly`` (``true``: every tool of the server; a list: those
tools) for servers whose tools carry no ``readOnlyHint``. ``${VAR}``, ``${VAR:-default}`` and
Cursor's ``${env:VAR}`` are expanded from the environment in ``command``, ``args``, ``env``,
``cwd``, ``url`` and ``headers``, as Claude Code and Cursor do; an unset variable without a
default is a configuration error. VS Code's ``${input:...}`` prompts cannot be asked here:
each is a warning, and the text is used as written.

This module never imports the MCP SDK: the CLI reads the file before anything heavy loads.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import orjson
import structlog

from .._errors import ConfigurationError

__all__ = [
    "DEFAULT_STARTUP_TIMEOUT_S",
    "DEFAULT_TOOL_TIMEOUT_S",
    "MCPHttpServer",
    "MCPServerConfig",
    "MCPSseServer",
    "MCPStdioServer",
    "ReadOnly",
    "load_mcp_config",
]

DEFAULT_STARTUP_TIMEOUT_S = 30.0
DEFAULT_TOOL_TIMEOUT_S = 60.0

log = structlog.get_logger(__name__)

_VAR_RE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_INPUT_RE = re.compile(r"\$\{input:([^}]*)\}")  # VS Code's prompted inputs
_HTTP_TYPES = frozenset({"http", "streamable-http", "streamable_http", "streamablehttp", "streamable"})
_URL_KEYS = ("url", "serverUrl", "httpUrl")
_MAX_TIMEOUT_S = 3600.0  # a longer "seconds" value is almost surely milliseconds
# config key -> (which timeout, seconds per unit)
_TIMEOUT_KEYS: dict[str, tuple[str, float]] = {
    "startupTimeout": ("startup_timeout_s", 1.0),
    "startupTimeoutSec": ("startup_timeout_s", 1.0),
    "startup_timeout_sec": ("startup_timeout_s", 1.0),
    "startupTimeoutMs": ("startup_timeout_s", 0.001),
    "startup_timeout_ms": ("startup_timeout_s", 0.001),
    "toolTimeout": ("tool_timeout_s", 1.0),
    "toolTimeoutSec": ("tool_timeout_s", 1.0),
    "tool_timeout_sec": ("tool_timeout_s", 1.0),
    "toolTimeoutMs": ("tool_timeout_s", 0.001),
    "tool_timeout_ms": ("tool_timeout_s", 0.001),
}
_KNOWN_KEYS = frozenset(
    {
        "command",
        "args",
        "env",
        "cwd",
        "headers",
        "type",
        "transport",
        "disabled",
        "enabled",
        "readOnly",
        *_URL_KEYS,
        *_TIMEOUT_KEYS,
    }
)

ReadOnly = bool | frozenset[str]
"""Which of a server's tools count as read-only besides those whose ``readOnlyHint`` says so:
``True`` every tool, a set of MCP tool names those tools, ``False`` / empty none."""


def _check_common(kind: str, name: str, tool_timeout_s: float | None, startup_timeout_s: float) -> None:
    if not name.strip():
        raise ConfigurationError(f"{kind}: the server name must not be empty")
    if tool_timeout_s is not None and tool_timeout_s <= 0:
        raise ConfigurationError(
            f"MCP server {name!r}: tool_timeout_s must be positive, got {tool_timeout_s}"
        )
    if startup_timeout_s <= 0:
        raise ConfigurationError(
            f"MCP server {name!r}: startup_timeout_s must be positive, got {startup_timeout_s}"
        )


def _read_only(name: str, value: object) -> ReadOnly:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ConfigurationError(
            f"MCP server {name!r}: read_only must be true, false or a list of tool names"
        )
    names = frozenset(value)
    if not all(isinstance(item, str) and item for item in names):
        raise ConfigurationError(f"MCP server {name!r}: read_only must list tool names (strings)")
    return names


def _frozen_strings(name: str, what: str, mapping: Mapping[str, str]) -> Mapping[str, str]:
    for key, value in mapping.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ConfigurationError(f"MCP server {name!r}: {what} keys and values must be strings")
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, slots=True)
class MCPStdioServer:
    """An MCP server started as a subprocess for the run and spoken to over its stdin/stdout.

    ``env`` is added to the SDK's minimal inherited environment (``PATH``, ``HOME``,
    ``USER``, ...): the server does not see this process's API keys unless listed; values
    of secret-looking names (``*_KEY``, ``*TOKEN``, ...) are redacted from everything the
    run writes or says. ``tool_timeout_s`` bounds each call (``None``: no limit);
    ``startup_timeout_s`` bounds starting the server and listing its tools. ``read_only``:
    see :data:`ReadOnly`.
    """

    transport: ClassVar[str] = "stdio"

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, hash=False, repr=False)
    cwd: Path | None = None
    tool_timeout_s: float | None = DEFAULT_TOOL_TIMEOUT_S
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S
    read_only: ReadOnly = False

    def __post_init__(self) -> None:
        _check_common("MCPStdioServer", self.name, self.tool_timeout_s, self.startup_timeout_s)
        object.__setattr__(self, "read_only", _read_only(self.name, self.read_only))
        if not self.command.strip():
            raise ConfigurationError(f"MCP server {self.name!r}: the command must not be empty")
        if any(not isinstance(arg, str) for arg in self.args):
            raise ConfigurationError(f"MCP server {self.name!r}: args must be strings")
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "env", _frozen_strings(self.name, "env", self.env))
        if self.cwd is not None:
            object.__setattr__(self, "cwd", Path(self.cwd))


@dataclass(frozen=True, slots=True)
class MCPHttpServer:
    """A remote MCP server reached over streamable HTTP at ``url``, with extra request ``headers``
    (the values of ``Authorization``, ``Cookie`` and secret-looking names are redacted from
    everything the run writes or says)."""

    transport: ClassVar[str] = "http"

    name: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict, hash=False, repr=False)
    tool_timeout_s: float | None = DEFAULT_TOOL_TIMEOUT_S
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S
    read_only: ReadOnly = False

    def __post_init__(self) -> None:
        _check_common(type(self).__name__, self.name, self.tool_timeout_s, self.startup_timeout_s)
        if not self.url.startswith(("http://", "https://")):
            raise ConfigurationError(f"MCP server {self.name!r}: url must start with http:// or https://")
        object.__setattr__(self, "headers", _frozen_strings(self.name, "headers", self.headers))
        object.__setattr__(self, "read_only", _read_only(self.name, self.read_only))


@dataclass(frozen=True, slots=True)
class MCPSseServer(MCPHttpServer):
    """A remote MCP server on the older HTTP+SSE transport (``"type": "sse"``): an event stream at
    ``url`` (often ``.../sse``) and the messages it names; the official SDK's SSE client."""

    transport: ClassVar[str] = "sse"


MCPServerConfig = MCPStdioServer | MCPHttpServer  # MCPSseServer is an MCPHttpServer


# --------------------------------------------------------------------------- loader


def load_mcp_config(
    path: Path | str, *, environ: Mapping[str, str] | None = None
) -> tuple[MCPServerConfig, ...]:
    """The servers of an ``mcpServers`` JSON file, in file order; disabled entries are skipped.

    Raises :class:`ConfigurationError` with one sentence naming the file, the server
    and the field for anything that cannot work (never quoting env or header values).
    """
    path = Path(path)
    document = _read_json(path)
    servers = document.get("mcpServers", document.get("servers"))
    if not isinstance(servers, dict):
        raise ConfigurationError(
            f'MCP config {path}: expected an object {{"mcpServers": {{"<name>": {{...}}}}}}'
        )
    env = os.environ if environ is None else environ
    loaded: list[MCPServerConfig] = []
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            raise ConfigurationError(f"MCP config {path}: server {name!r} must be a JSON object")
        if entry.get("disabled") is True or entry.get("enabled") is False:
            log.info("mcp_server_disabled", server=name)
            continue
        loaded.append(_server(path, str(name), entry, env))
    return tuple(loaded)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        document = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise ConfigurationError(f"MCP config {path}: cannot read it ({exc.strerror or exc})") from None
    except orjson.JSONDecodeError as exc:
        raise ConfigurationError(f"MCP config {path} is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ConfigurationError(f"MCP config {path}: the top level must be a JSON object")
    return document


def _server(path: Path, name: str, entry: dict[str, Any], env: Mapping[str, str]) -> MCPServerConfig:
    ignored = sorted(set(entry) - _KNOWN_KEYS)
    if ignored:
        log.debug("mcp_config_keys_ignored", server=name, keys=ignored)
    where = f"MCP config {path}: server {name!r}"
    fields = _Fields(where, entry, env)
    transport = _transport(where, entry)
    common: dict[str, Any] = {"name": name, **fields.timeouts(), "read_only": fields.read_only()}
    try:
        if transport == "stdio":
            return MCPStdioServer(
                command=fields.string("command", required=True) or "",
                args=tuple(fields.strings("args")),
                env=fields.mapping("env"),
                cwd=Path(cwd) if (cwd := fields.string("cwd")) else None,
                **common,
            )
        url_key = next(key for key in _URL_KEYS if key in entry)
        kind = MCPSseServer if transport == "sse" else MCPHttpServer
        return kind(
            url=fields.string(url_key, required=True) or "", headers=fields.mapping("headers"), **common
        )
    except ConfigurationError as exc:
        if str(exc).startswith("MCP config"):
            raise
        raise ConfigurationError(f"MCP config {path}: {exc}") from None


def _transport(where: str, entry: dict[str, Any]) -> str:
    declared = entry.get("type", entry.get("transport"))
    has_url = any(key in entry for key in _URL_KEYS)
    if declared is None:
        if "command" in entry and has_url:
            raise ConfigurationError(f"{where} has both a command and a url; keep one")
        if "command" in entry:
            return "stdio"
        if has_url:
            return "http"
        raise ConfigurationError(f"{where} needs a command (stdio server) or a url (streamable HTTP server)")
    kind = str(declared).strip().lower()
    if kind == "stdio" and "command" in entry:
        return "stdio"
    if kind in _HTTP_TYPES and has_url:
        return "http"
    if kind == "sse" and has_url:
        return "sse"
    if kind in (*_HTTP_TYPES, "sse", "stdio"):
        needed = "command" if kind == "stdio" else "url"
        raise ConfigurationError(f"{where} declares type {declared!r} but has no {needed}")
    raise ConfigurationError(f"{where} has an unknown type {declared!r} (use stdio, http or sse)")


@dataclass(frozen=True, slots=True)
class _Fields:
    """Typed, ``${VAR}``-expanded access to one server entry's fields."""

    where: str
    entry: dict[str, Any]
    env: Mapping[str, str]

    def string(self, key: str, *, required: bool = False) -> str | None:
        value = self.entry.get(key)
        if value is None:
            if required:
                raise ConfigurationError(f"{self.where} needs a {key!r}")
            return None
        if not isinstance(value, str):
            raise ConfigurationError(f"{self.where}: {key!r} must be a string")
        return self.expand(value, key)

    def strings(self, key: str) -> list[str]:
        value = self.entry.get(key) or []
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ConfigurationError(f"{self.where}: {key!r} must be a list of strings")
        return [self.expand(item, key) for item in value]

    def mapping(self, key: str) -> dict[str, str]:
        value = self.entry.get(key) or {}
        if not isinstance(value, dict):
            raise ConfigurationError(f"{self.where}: {key!r} must be an object of strings")
        result: dict[str, str] = {}
        for name, item in value.items():
            text = _scalar_text(item)
            if text is None:
                raise ConfigurationError(f"{self.where}: {key}.{name} must be a string")
            result[str(name)] = self.expand(text, f"{key}.{name}")
        return result

    def timeouts(self) -> dict[str, float]:
        """``startup_timeout_s`` / ``tool_timeout_s`` from the keys of :data:`_TIMEOUT_KEYS` given."""
        found: dict[str, float] = {}
        for key, (target, unit) in _TIMEOUT_KEYS.items():
            if key not in self.entry:
                continue
            value = self.entry[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ConfigurationError(f"{self.where}: {key!r} must be a positive number")
            seconds = value * unit
            if seconds > _MAX_TIMEOUT_S:
                raise ConfigurationError(
                    f"{self.where}: {key!r} is {value:g} seconds, over an hour; "
                    f"for milliseconds write {_milliseconds_key(key)!r}"
                )
            if target in found:
                raise ConfigurationError(f"{self.where} sets its {target.split('_')[0]} timeout twice")
            found[target] = seconds
        return found

    def read_only(self) -> ReadOnly:
        """``readOnly``: true, false, or a list of the server's tool names."""
        value = self.entry.get("readOnly", False)
        if isinstance(value, bool):
            return value
        if isinstance(value, list) and all(isinstance(item, str) and item for item in value):
            return frozenset(value)
        raise ConfigurationError(f"{self.where}: 'readOnly' must be true, false or a list of tool names")

    def expand(self, text: str, field_name: str) -> str:
        for prompt in _INPUT_RE.findall(text):
            log.warning(
                "mcp_config_input_not_expanded",
                detail=f"{self.where}: {field_name} uses ${{input:{prompt}}}, a VS Code input prompt "
                "this runtime cannot ask; it is sent as written (put the value, or ${env:NAME}, there)",
            )

        def replace(match: re.Match[str]) -> str:
            variable, default = match.group(1), match.group(2)
            value = self.env.get(variable)
            if value is not None and (value or default is None):
                return value
            if default is not None:
                return default
            raise ConfigurationError(
                f"{self.where}: environment variable {variable} (used in {field_name}) is not set"
            )

        return _VAR_RE.sub(replace, text)


def _milliseconds_key(key: str) -> str:
    """The milliseconds spelling of a seconds key: ``startupTimeout`` -> ``startupTimeoutMs``."""
    if key.endswith("_sec"):
        return key.removesuffix("_sec") + "_ms"
    return key.removesuffix("Sec") + "Ms"


def _scalar_text(value: object) -> str | None:
    """A string, or a number or boolean as JSON spells it (``"PORT": 3000`` is a common slip)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value if isinstance(value, str) else None
