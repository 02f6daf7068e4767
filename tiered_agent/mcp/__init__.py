"""MCP tool servers: configuration, and their tools as ordinary :class:`~tiered_agent.Tool` objects.

    from tiered_agent import Agent, MCPStdioServer, load_mcp_config

    agent = Agent(model, mcp_servers=[MCPStdioServer("files", "npx", ("-y", "server-filesystem", "."))])
    agent = Agent(model, mcp_servers=load_mcp_config(".mcp.json"))

Names are imported lazily: reading a config never imports the MCP SDK.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

__all__ = [
    "DEFAULT_STARTUP_TIMEOUT_S",
    "DEFAULT_TOOL_TIMEOUT_S",
    "MCPHttpServer",
    "MCPServerConfig",
    "MCPSseServer",
    "MCPStdioServer",
    "MCPTools",
    "load_mcp_config",
    "open_mcp_tools",
    "render_result",
    "tool_name",
]

_LOCATIONS = {
    "DEFAULT_STARTUP_TIMEOUT_S": "._config",
    "DEFAULT_TOOL_TIMEOUT_S": "._config",
    "MCPHttpServer": "._config",
    "MCPServerConfig": "._config",
    "MCPSseServer": "._config",
    "MCPStdioServer": "._config",
    "load_mcp_config": "._config",
    "MCPTools": "._runtime",
    "open_mcp_tools": "._runtime",
    "render_result": "._results",
    "tool_name": "._adapt",
}

if TYPE_CHECKING:
    from ._adapt import tool_name
    from ._config import (
        DEFAULT_STARTUP_TIMEOUT_S,
        DEFAULT_TOOL_TIMEOUT_S,
        MCPHttpServer,
        MCPServerConfig,
        MCPSseServer,
        MCPStdioServer,
        load_mcp_config,
    )
    from ._results import render_result
    from ._runtime import MCPTools, open_mcp_tools

__getattr__ = lazy_exports(__name__, _LOCATIONS, globals())


def __dir__() -> list[str]:
    return sorted(__all__)
