"""The MCP servers of one run: started together before it, stopped after it, their tools as :class:`Tool`.

``open_mcp_tools(servers)`` is an async context manager around the run. Each
server is served by its own task (:class:`ServerConnection`), so nothing that
happens inside the SDK can cancel the run; the run's own exceptions leave the
context unchanged (never wrapped in an exception group). With no servers it
costs nothing and never imports the SDK.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import structlog

from .._errors import ConfigurationError, TieredAgentError
from .._tools import Tool
from ._config import MCPServerConfig

if TYPE_CHECKING:
    from ._client import ServerConnection

__all__ = ["MCPTools", "check_servers", "open_mcp_tools"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class MCPTools:
    """The loaded tools, and what the trace records about the servers (no env, no headers)."""

    tools: tuple[Tool, ...] = ()
    servers: tuple[dict[str, Any], ...] = field(default=(), hash=False)


def check_servers(servers: Sequence[MCPServerConfig]) -> tuple[MCPServerConfig, ...]:
    """The servers as a tuple; raises :class:`ConfigurationError` for a non-config item or a repeated name."""
    seen: set[str] = set()
    for server in servers:
        if not isinstance(server, MCPServerConfig):
            raise ConfigurationError(
                "mcp_servers takes MCPStdioServer or MCPHttpServer values (see load_mcp_config), "
                f"got {server!r}"
            )
        if server.name in seen:
            raise ConfigurationError(f"two MCP servers are named {server.name!r}")
        seen.add(server.name)
    return tuple(servers)


@asynccontextmanager
async def open_mcp_tools(servers: Sequence[MCPServerConfig]) -> AsyncIterator[MCPTools]:
    """Start ``servers`` concurrently, yield their tools, stop them all on the way out.

    Raises :class:`ConfigurationError` (missing command, tool-name collision) or
    :class:`MCPServerError` (a server exited, timed out or was unreachable) before
    yielding, after stopping the servers that did start.
    """
    if not servers:
        yield MCPTools()
        return
    from ._client import ServerConnection  # the SDK is imported only when servers are configured

    connections = [ServerConnection(server) for server in servers]
    failure: BaseException | None = None
    async with anyio.create_task_group() as group:
        for connection in connections:
            group.start_soon(connection.serve)
        try:
            failure = await _settle(connections)
            if failure is None:
                loaded = _load(connections)
                log.info("mcp_servers_started", servers=[s["name"] for s in loaded.servers])
                yield loaded
        except Exception as exc:  # the run's own error: re-raised below, outside the task group
            failure = exc
        finally:
            for connection in connections:
                connection.stop()
    if failure is not None:
        raise failure


async def _settle(connections: Sequence[ServerConnection]) -> TieredAgentError | None:
    """Wait until every server has started or one has failed; the first failure in config order."""
    decided = anyio.Event()

    async def watch(connection: ServerConnection) -> None:
        await connection.settled.wait()
        if connection.error is not None or all(c.settled.is_set() for c in connections):
            decided.set()

    async with anyio.create_task_group() as watchers:
        for connection in connections:
            watchers.start_soon(watch, connection)
        await decided.wait()
        watchers.cancel_scope.cancel()
    return next((c.error for c in connections if c.error is not None), None)


def _load(connections: Sequence[ServerConnection]) -> MCPTools:
    from ._adapt import adapt_tool

    tools: list[Tool] = []
    owners: dict[str, str] = {}
    records: list[dict[str, Any]] = []
    for connection in connections:
        _check_read_only(connection)
        names: dict[str, str] = {}
        for spec in connection.tools:
            item = adapt_tool(connection.config, spec, connection.call)
            origin = f"tool {spec.name!r} of MCP server {connection.name!r}"
            if item.name in owners:
                raise ConfigurationError(f"{origin} and {owners[item.name]} both become {item.name!r}")
            owners[item.name] = origin
            names[item.name] = spec.name
            tools.append(item)
        records.append({"name": connection.name, "transport": connection.config.transport, "tools": names})
    return MCPTools(tuple(tools), tuple(records))


def _check_read_only(connection: ServerConnection) -> None:
    """Say once when the config marks tools read-only that the server does not list (a typo)."""
    marked = connection.config.read_only
    if isinstance(marked, bool):
        return
    missing = sorted(marked - {spec.name for spec in connection.tools})
    if missing:
        log.warning(
            "mcp_read_only_unknown_tools",
            detail=f"MCP server {connection.name!r}: readOnly names {', '.join(map(repr, missing))}, "
            "which the server does not list",
        )
