"""A hostile MCP server for the tests, written with the official SDK (``MCPServer``), over stdio.

At startup it may also write ``MCP_HOSTILE_STDERR_MB`` megabytes of lines to stderr (from a
thread, while it serves) and fork a child that sleeps, writing its pid to ``MCP_HOSTILE_CHILD_FILE``
(the child outlives the server unless the runtime kills it).

Its tools answer with what a server may send: megabytes of text, image and binary content, an
error, no answer at all, an exit in the middle of a call. Its listing holds what a server may list:
names that collide once made to fit the tool-name rule (``get.item``, ``get item``), names with
spaces and non-ASCII letters, and input schemas that are invalid, refer to themselves, are not
objects or are enormous.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import anyio
from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("hostile-server")


@server.tool()
def huge(megabytes: int) -> str:
    """Megabytes of text."""
    return "0123456789abcdef" * (megabytes * 65_536)


@server.tool()
def picture() -> Image:
    """An image of random bytes that is no picture."""
    return Image(data=os.urandom(4096), format="png")


@server.tool()
def nul() -> str:
    """Text holding NUL bytes, a lone surrogate's escape and markup."""
    return "a\x00b</script><script>alert(1)</script>"


@server.tool()
def broken(reason: str) -> str:
    """Always an error."""
    raise ToolError(reason)


@server.tool()
async def forever() -> str:
    """Never answers."""
    await anyio.sleep_forever()
    return "unreachable"


@server.tool()
def die() -> str:
    """The server exits in the middle of the call."""
    os._exit(3)


def _same(text: str) -> str:
    return text


# names that collide once made to fit ^[A-Za-z0-9_-]{1,64}$, a name with spaces, one non-ASCII
for name in ("get.item", "get item", "get_item", "naïve tool ✓"):
    server.add_tool(_same, name=name, description=f"Echo ({name}).")

_ODD_SCHEMAS: dict[str, dict[str, Any]] = {
    "self_ref": {"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}},
    "root_ref": {"type": "object", "$ref": "#"},
    "invalid": {"type": "object", "properties": {"a": {"type": "nonsense"}}},
    "enormous": {
        "type": "object",
        "properties": {f"p{i}": {"type": "string", "description": "d" * 200} for i in range(2000)},
    },
}
for name, schema in _ODD_SCHEMAS.items():
    server.add_tool(_same, name=name, description=f"A tool whose schema is {name}.")
    server._tool_manager.get_tool(name).parameters = schema  # type: ignore[union-attr]


def _flood_stderr(megabytes: int) -> None:
    block = (b"e" * 1023 + b"\n") * 1024
    for _ in range(megabytes):
        os.write(2, block)


def _fork_child(pid_file: str) -> None:
    child = os.fork()
    if child == 0:
        time.sleep(300)
        os._exit(0)
    with open(pid_file, "w") as handle:
        handle.write(str(child))


if __name__ == "__main__":
    if os.environ.get("MCP_HOSTILE_CHILD_FILE"):
        _fork_child(os.environ["MCP_HOSTILE_CHILD_FILE"])
    if os.environ.get("MCP_HOSTILE_STDERR_MB"):
        megabytes = int(os.environ["MCP_HOSTILE_STDERR_MB"])
        threading.Thread(target=_flood_stderr, args=(megabytes,), daemon=True).start()
    server.run()
