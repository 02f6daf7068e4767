"""A real MCP server for the tests, written with the official SDK (``MCPServer``, the 2.x FastMCP).

Run over stdio (``python tests/mcp_test_server.py``), streamable HTTP on 127.0.0.1
(``python tests/mcp_test_server.py --http PORT``) or the older HTTP+SSE transport
(``--sse PORT``: the event stream at ``/sse``). When ``MCP_TEST_CALL_LOG`` names a
file, every tool call appends its tool name there, so a test can count what the
server really executed (for instance, that a deduplicated call never arrived);
``MCP_TEST_PID_FILE`` receives the process id at startup.
"""

from __future__ import annotations

import argparse
import base64
import os
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

# A 1x1 transparent PNG (67 bytes).
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
READ_ONLY = ToolAnnotations(read_only_hint=True)

server = MCPServer("test-server")


def _log_call(name: str) -> None:
    path = os.environ.get("MCP_TEST_CALL_LOG")
    if path:
        with Path(path).open("a") as log:
            log.write(name + "\n")


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> int:
    """Add two integers."""
    _log_call("add")
    return a + b


@server.tool(name="shout.text")
def shout(text: str) -> str:
    """Upper-case a text (the dotted name tests name sanitizing)."""
    _log_call("shout.text")
    return text.upper()


@server.tool(annotations=READ_ONLY)
def pixel() -> Image:
    """A 1x1 PNG image."""
    _log_call("pixel")
    return Image(data=PNG, format="png")


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason (an isError result)."""
    _log_call("fail")
    raise ToolError(f"refused: {reason}")


@server.tool(annotations=READ_ONLY)
def pid() -> int:
    """The server's process id."""
    _log_call("pid")
    return os.getpid()


@server.tool(annotations=READ_ONLY)
def lines(n: int) -> str:
    """``n`` numbered lines of 25 characters."""
    _log_call("lines")
    return "\n".join(f"line {i:06d} of the output" for i in range(n))


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep, then say so."""
    _log_call("sleep")
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of an HTTP request header (streamable HTTP only)."""
    _log_call("header")
    headers = ctx.headers or {}
    return str(headers.get(name.lower(), "(absent)"))


if __name__ == "__main__":
    if os.environ.get("MCP_TEST_PID_FILE"):
        Path(os.environ["MCP_TEST_PID_FILE"]).write_text(str(os.getpid()))
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, help="serve streamable HTTP on 127.0.0.1:PORT instead of stdio")
    parser.add_argument("--sse", type=int, help="serve HTTP+SSE on 127.0.0.1:PORT (stream at /sse)")
    options = parser.parse_args()
    if options.http:
        server.run("streamable-http", host="127.0.0.1", port=options.http)
    elif options.sse:
        server.run("sse", host="127.0.0.1", port=options.sse)
    else:
        server.run()
