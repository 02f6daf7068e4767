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
async def open_mcp_tools(
    servers: Sequence[MCPServerConfig], taken: Sequence[str] = ()
) -> AsyncIterator[MCPTools]:
    """Start ``servers`` concurrently, yield their tools, stop them all on the way out.

    A tool the run cannot offer (its name taken by one of ``taken``, the run's other tools, or by
    an earlier tool; an input schema that is not an object or is enormous) is refused: left out,
    named in a warning and under ``refused`` in its server's record; the others are offered.
    Raises :class:`ConfigurationError` (missing command) or :class:`MCPServerError` (a server
    exited, timed out or was unreachable) before yielding, after stopping the servers that did start.
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
                loaded = _load(connections, taken)
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


def _load(connections: Sequence[ServerConnection], taken: Sequence[str] = ()) -> MCPTools:
    from ._adapt import adapt_tool, refusal

    tools: list[Tool] = []
    owners = dict.fromkeys(taken, "a tool of the run")
    records: list[dict[str, Any]] = []
    for connection in connections:
        _check_read_only(connection)
        names: dict[str, str] = {}
        refused: dict[str, str] = {}
        for spec in connection.tools:
            item = adapt_tool(connection.config, spec, connection.call)
            origin = f"tool {spec.name!r} of MCP server {connection.name!r}"
            reason = refusal(spec) or (
                f"its name {item.name!r} is taken by {owners[item.name]}" if item.name in owners else None
            )
            if reason is not None:
                log.warning("mcp_tool_refused", detail=f"{origin} is not offered to the model: {reason}")
                refused[spec.name] = reason
                continue
            owners[item.name] = origin
            names[item.name] = spec.name
            tools.append(item)
        record = {"name": connection.name, "transport": connection.config.transport, "tools": names}
        records.append({**record, "refused": refused} if refused else record)
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
