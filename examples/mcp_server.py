"""A small MCP server for trying ``tiered-agent run --mcp-config examples/mcp.json`` offline.

Written with the official MCP Python SDK (``MCPServer``, called FastMCP before 2.x);
it speaks stdio when started by the agent. Its tools become ``demo__add``,
``demo__count_words``, ``demo__remember`` and ``demo__recall``.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True)  # identical calls are served from the agent's dedup cache

server = MCPServer("demo")
notes: list[str] = []


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool(annotations=READ_ONLY)
def count_words(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


@server.tool()
def remember(note: str) -> str:
    """Keep a note for later in this session."""
    notes.append(note)
    return f"noted ({len(notes)} note(s) kept)"


@server.tool(annotations=READ_ONLY)
def recall() -> list[str]:
    """The notes kept so far."""
    return notes


if __name__ == "__main__":
    server.run()  # stdio
