"""One MCP server for the length of a run, through the official SDK's ``Client``.

:meth:`ServerConnection.serve` runs in its own task: it starts the server (a
subprocess over stdio, a streamable HTTP session, or the older HTTP+SSE transport),
lists its tools, signals
``ready``, keeps the connection until :meth:`stop`, and closes it (the SDK's stdio
transport stops the whole process tree, also on cancellation). Whatever goes
wrong inside stays in that task: a failure to start becomes :attr:`error` (one
sentence), a server that dies mid-run turns later calls into tool errors.
A subprocess's stderr goes to the log (debug), never to the console. The
secret values of a server's ``env`` and ``headers`` join what the trace's
redaction replaces, so no sentence, log line or trace quotes them.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import sys
import threading
from collections import deque
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import IO, Any, TextIO
from urllib.parse import urlsplit

import anyio
import anyio.to_thread
import httpx2
import structlog
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CONNECTION_CLOSED, INVALID_REQUEST, PARSE_ERROR, REQUEST_TIMEOUT, Implementation
from mcp.types import Tool as MCPTool

from .. import _reaper
from .._errors import ConfigurationError, MCPServerError, TieredAgentError, ToolError
from .._logging import redact_sdk_records
from .._tools import ToolTimeout
from .._trace import is_secret_name, redact, register_secret
from ._config import MCPHttpServer, MCPServerConfig, MCPSseServer, MCPStdioServer
from ._results import render_result

__all__ = ["ServerConnection"]

log = structlog.get_logger(__name__)

_MAX_TOOL_PAGES = 100
_STDERR_TAIL = 20
_STDERR_JOIN_S = 1.0
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # the SDK's defaults: a response stream may stay open
_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
_MAX_QUOTED = 300  # chars of an exception's text quoted in a startup sentence
_SSE_PATH = re.compile(r"/sse(?:/|$)", re.I)
_STDERR_LINE = 64 * 1024  # bytes of one stderr line read at a time (a longer one is logged in parts)
_SUPERVISOR = str(Path(_reaper.__file__))


def _checked_command(name: str, config: MCPStdioServer) -> str:
    """The command, once it names an executable file (looked up on the server's ``PATH`` when it
    has no ``/``); else one :class:`ConfigurationError` sentence saying what it names."""
    if config.cwd is not None and not config.cwd.is_dir():
        raise ConfigurationError(f"MCP server {name!r}: working directory {config.cwd} does not exist")
    command = config.command
    if "/" not in command:
        search = config.env.get("PATH", os.environ.get("PATH", os.defpath))
        found = shutil.which(command, path=search)
        problem = None if found else "not found"
    else:
        path = Path(command) if config.cwd is None else config.cwd / command
        problem = _file_problem(path)
    if problem is not None:
        raise ConfigurationError(
            f"MCP server {name!r}: command {command!r} is {problem}; fix it in the MCP config"
        )
    return command


def _file_problem(path: Path) -> str | None:
    """Why ``path`` cannot be run, or ``None``."""
    if path.is_dir():
        return "a directory"
    if not path.exists():
        return "not found"
    if not os.access(path, os.X_OK):
        return "not executable"
    return None


def _client_info() -> Implementation:
    try:
        own_version = version("tiered-agent")
    except PackageNotFoundError:
        own_version = "0"
    return Implementation(name="tiered-agent", version=own_version)


class ServerConnection:
    """A connection to one configured MCP server; see the module docstring."""

    def __init__(self, config: MCPServerConfig) -> None:
        self.config = config
        for secret in _secret_values(config):
            register_secret(secret)
        redact_sdk_records()  # also for a library user who never configured logging
        self.settled = anyio.Event()  # started, or failed to
        self.tools: list[MCPTool] = []
        self.error: TieredAgentError | None = None
        self._stop = anyio.Event()
        self._startup = anyio.CancelScope()  # the startup deadline; cancelled by stop() while starting
        self._client: Client | None = None
        self._gone = False
        self._stderr: _StderrLog | None = None
        self._http_status: int | None = None

    @property
    def name(self) -> str:
        return self.config.name

    def stop(self) -> None:
        """Close the connection; a server still starting is abandoned (and its process stopped)."""
        self._stop.set()
        if not self.settled.is_set():
            self._startup.cancel()

    # ------------------------------------------------------------------ lifecycle
    async def serve(self) -> None:
        """Connect, list the tools, set ``settled``, hold the connection until :meth:`stop`."""
        self._startup.deadline = anyio.current_time() + self.config.startup_timeout_s
        with self._startup:
            try:
                async with Client(self._transport(), cache=None, client_info=_client_info()) as client:
                    self.tools = await _list_tools(client)
                    self._startup.deadline = math.inf
                    self._client = client
                    self.settled.set()
                    await self._stop.wait()
            except Exception as exc:
                await self._failed(_leaf(exc))
            finally:
                self._client = None
        if self._startup.cancelled_caught and not self.settled.is_set() and not self._stop.is_set():
            hint = await self._stderr_hint()
            limit = self.config.startup_timeout_s
            self.error = MCPServerError(f"MCP server {self.name!r} did not start within {limit:g} s{hint}")
        self.settled.set()

    def _transport(self) -> AbstractAsyncContextManager[Any]:
        if isinstance(self.config, MCPStdioServer):
            return self._stdio(self.config)
        if isinstance(self.config, MCPSseServer):
            return self._sse(self.config)
        return self._http(self.config)

    @asynccontextmanager
    async def _stdio(self, config: MCPStdioServer) -> AsyncIterator[Any]:
        """The server runs under the shell's supervisor (``_reaper.py --serve``), so whatever it
        starts is killed with it, also when it exits on its own; bytes of its stdout that are not
        UTF-8 are read as U+FFFD (that line is then not JSON-RPC, and is skipped by the SDK)."""
        command = _checked_command(self.name, config)
        params = StdioServerParameters(
            command=sys.executable,
            args=["-I", "-S", _SUPERVISOR, "--serve", command, *config.args],
            env=dict(config.env) or None,
            cwd=config.cwd,
            encoding_error_handler="replace",
        )
        self._stderr = stderr = _StderrLog(self.name)
        try:
            async with stdio_client(params, errlog=stderr.writer) as streams:
                stderr.close_writer()  # the server holds its own copy; EOF comes when it exits
                yield streams
        finally:
            stderr.close_writer()

    @asynccontextmanager
    async def _http(self, config: MCPHttpServer) -> AsyncIterator[Any]:
        async def saw(response: httpx2.Response) -> None:
            self._http_status = response.status_code

        hooks: dict[str, list[Any]] = {"response": [saw]}
        async with (
            httpx2.AsyncClient(
                headers=dict(config.headers), timeout=_HTTP_TIMEOUT, event_hooks=hooks
            ) as http,
            streamable_http_client(config.url, http_client=http) as streams,
        ):
            yield streams

    @asynccontextmanager
    async def _sse(self, config: MCPSseServer) -> AsyncIterator[Any]:
        async def saw(response: httpx2.Response) -> None:
            self._http_status = response.status_code

        def client(
            headers: dict[str, str] | None = None,
            timeout: httpx2.Timeout | None = None,
            auth: httpx2.Auth | None = None,
        ) -> httpx2.AsyncClient:
            hooks: dict[str, list[Any]] = {"response": [saw]}
            return httpx2.AsyncClient(
                headers=headers, timeout=timeout or _HTTP_TIMEOUT, auth=auth, event_hooks=hooks
            )

        timeout, read = _HTTP_TIMEOUT.connect or 30.0, _HTTP_TIMEOUT.read or 300.0
        async with sse_client(
            config.url,
            headers=dict(config.headers),
            timeout=timeout,
            sse_read_timeout=read,
            httpx_client_factory=client,
        ) as streams:
            yield streams

    async def _failed(self, exc: BaseException) -> None:
        if self.settled.is_set():
            self._gone = True
            log.warning("mcp_server_stopped", server=self.name, error=_one_line(exc))
            return
        self.error = await self._startup_error(exc)

    async def _startup_error(self, exc: BaseException) -> TieredAgentError:
        name, config = self.name, self.config
        if isinstance(exc, TieredAgentError):
            return exc
        if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
            return MCPServerError(f"MCP server {name!r} exited during startup{await self._stderr_hint()}")
        if isinstance(config, MCPHttpServer):
            found = _http_error(name, config, self._http_status, exc)
            if found is not None:
                return found
        hint = await self._stderr_hint()
        return MCPServerError(f"MCP server {name!r} failed to start: {_one_line(exc)}{hint}")

    async def _stderr_hint(self) -> str:
        if self._stderr is None:
            return ""
        line = await self._stderr.last_line()
        return f"; its last stderr line: {redact(_capped(line))!r}" if line else ""

    # ------------------------------------------------------------------ calls
    async def call(self, tool: str, arguments: dict[str, Any]) -> str:
        """Call ``tool``; every failure is a :class:`ToolError` the model reads (cancellation propagates)."""
        client = self._client
        if client is None or self._gone:
            raise ToolError(self._gone_message())
        try:
            result = await client.call_tool(tool, arguments)
        except MCPError as exc:
            raise self._call_error(exc) from None
        except Exception as exc:
            raise ToolError(f"MCP server {self.name!r}: the call failed ({_one_line(_leaf(exc))})") from None
        return render_result(result)

    def _call_error(self, exc: MCPError) -> ToolError:
        if exc.code == CONNECTION_CLOSED:
            if not self._gone:
                self._gone = True
                log.warning("mcp_server_stopped", server=self.name, error="connection closed")
            return ToolError(self._gone_message())
        if exc.code == REQUEST_TIMEOUT:
            return ToolTimeout(f"MCP server {self.name!r} did not answer in time: {exc.message}")
        return ToolError(f"MCP server {self.name!r} rejected the call: {exc.message}")

    def _gone_message(self) -> str:
        return (
            f"MCP server {self.name!r} is no longer running (connection closed): its tools cannot be "
            "used for the rest of this run; continue without them."
        )


async def _list_tools(client: Client) -> list[MCPTool]:
    if client.server_capabilities.tools is None:
        log.warning(
            "mcp_server_without_tools", server=client.server_info.name if client.server_info else None
        )
        return []
    tools: list[MCPTool] = []
    cursor: str | None = None
    for _ in range(_MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools
    raise MCPServerError(f"an MCP server listed more than {_MAX_TOOL_PAGES} pages of tools")


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups from the SDK's task groups."""
    cancelled = anyio.get_cancelled_exc_class()
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, cancelled)]
        if not inner:
            break
        exc = inner[0]
    return exc


def _http_error(
    name: str, config: MCPHttpServer, status: int | None, exc: BaseException
) -> MCPServerError | None:
    """The sentence for an HTTP server that failed to start, when the failure says what went wrong."""
    where = _safe_url(config.url)
    if status is not None and status >= 400:
        return MCPServerError(
            f"MCP server {name!r} at {where} answered HTTP {status}{_url_hint(config, status)}"
        )
    if isinstance(exc, httpx2.TransportError):
        return MCPServerError(f"MCP server {name!r} at {where} cannot be reached: {_one_line(exc)}")
    if isinstance(exc, MCPError) and exc.code in (PARSE_ERROR, INVALID_REQUEST):
        what = "its reply is not JSON-RPC" if exc.code == PARSE_ERROR else _capped(exc.message, 120)
        return MCPServerError(
            f"MCP server {name!r} at {where} did not answer as an MCP server ({what}): "
            "check that the URL is the server's MCP endpoint"
        )
    return None


def _url_hint(config: MCPHttpServer, status: int) -> str:
    """What a 404 or 405 may mean: an SSE endpoint spoken to as streamable HTTP, or a wrong path."""
    if status not in (404, 405):
        return ""
    if not isinstance(config, MCPSseServer) and _SSE_PATH.search(urlsplit(config.url).path):
        return '; the URL looks like an SSE endpoint: add "type": "sse" to the server\'s config'
    return "; check the URL (the MCP endpoint is often /mcp, or /sse for SSE servers)"


def _secret_values(config: MCPServerConfig) -> list[str]:
    """The values of ``env`` entries with secret-looking names and of credential headers (with the
    token after a scheme such as ``Bearer``), for the redaction."""
    if isinstance(config, MCPStdioServer):
        return [value for key, value in config.env.items() if is_secret_name(key)]
    values: list[str] = []
    for key, value in config.headers.items():
        if key.lower() in _SECRET_HEADERS or is_secret_name(key):
            values += {value, *value.split()[-1:]}  # the header, and the token after a scheme
    return values


def _capped(text: str, limit: int = _MAX_QUOTED) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _one_line(exc: BaseException) -> str:
    text = _capped(" ".join(str(exc).split()))
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _safe_url(url: str) -> str:
    """The URL without credentials, query or fragment (they may hold tokens)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


class _StderrLog:
    """A pipe for a server's stderr, drained by a thread into the debug log; keeps the last lines."""

    def __init__(self, server: str) -> None:
        read_fd, write_fd = os.pipe()
        self.server = server
        self.writer: TextIO = open(write_fd, "w", encoding="utf-8")  # noqa: SIM115 - closed by close_writer
        self.tail: deque[str] = deque(maxlen=_STDERR_TAIL)
        self._thread = threading.Thread(
            target=self._pump, args=(os.fdopen(read_fd, "rb"),), name=f"mcp-stderr-{server}", daemon=True
        )
        self._thread.start()

    def close_writer(self) -> None:
        if not self.writer.closed:
            self.writer.close()

    def _pump(self, stream: IO[bytes]) -> None:
        """Read to EOF in lines of at most :data:`_STDERR_LINE` bytes (memory stays bounded
        whatever the server writes); each is redacted where it is logged (``_logging``)."""
        with stream:
            while raw := stream.readline(_STDERR_LINE):
                line = raw.decode("utf-8", errors="replace").rstrip()
                if line.strip():
                    self.tail.append(line.strip())
                    log.debug("mcp_server_stderr", server=self.server, line=line)

    async def last_line(self) -> str | None:
        """The last stderr line, once the server's output has been read (bounded wait)."""
        self.close_writer()
        await anyio.to_thread.run_sync(self._thread.join, _STDERR_JOIN_S)
        return self.tail[-1] if self.tail else None
