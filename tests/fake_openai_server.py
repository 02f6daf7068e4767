"""A fake OpenAI-compatible HTTP server on 127.0.0.1, for tests over real HTTP.

``POST /v1/chat/completions`` answers from a script (or a ``respond``
callable) and records every request; ``GET /v1/models`` lists the configured
models. Point litellm at it with ``model="openai/NAME"`` and
``api_base=server.base_url``. Non-streaming only: ``"stream": true`` gets a 400.

Script entries: a :class:`fakes.ScriptedReply` (``text_reply`` / ``tool_reply``),
a plain ``str`` (text reply), an :class:`HTTPErrorReply` (see
:func:`rate_limit_response` and friends), :class:`Slow` (delay, then answer),
the faults :class:`RawReply` (any status and body bytes, e.g. a malformed 200),
:class:`Reset` (the connection is aborted with a TCP reset) and :class:`Hang`
(no answer until the server closes), or a callable taking the
:class:`HTTPRequest` and returning one of those.
An exhausted script answers 400 "script exhausted" (not retried).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from fakes import ScriptedReply, text_reply

__all__ = [
    "FakeOpenAIServer",
    "HTTPErrorReply",
    "HTTPRequest",
    "Hang",
    "RawReply",
    "Reset",
    "ServerEntry",
    "Slow",
    "auth_error_response",
    "context_length_response",
    "fake_openai",
    "free_port",
    "model_not_found_response",
    "rate_limit_response",
    "server_error_response",
]


@dataclass(frozen=True)
class HTTPErrorReply:
    """An HTTP error answer with an OpenAI-shaped ``{"error": {...}}`` body."""

    status: int
    message: str
    type: str = "invalid_request_error"
    code: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": None, "code": self.code}}


@dataclass(frozen=True)
class Slow:
    """Wait ``delay_s`` before answering with ``entry`` (for client timeouts)."""

    entry: Any
    delay_s: float


@dataclass(frozen=True)
class RawReply:
    """An answer sent exactly as given: ``body`` bytes (malformed JSON, HTML, nothing) with ``status``."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"


@dataclass(frozen=True)
class Reset:
    """Abort the connection with a TCP reset instead of answering."""


@dataclass(frozen=True)
class Hang:
    """Accept the request and never answer (the handler is released when the server closes)."""


_Fault = RawReply | Reset | Hang


def rate_limit_response(retry_after: float | None = 1) -> HTTPErrorReply:
    headers = {"retry-after": _fmt(retry_after)} if retry_after is not None else {}
    return HTTPErrorReply(429, "Rate limit reached for requests", "requests", "rate_limit_exceeded", headers)


def server_error_response(
    message: str = "The server had an error while processing your request.",
) -> HTTPErrorReply:
    return HTTPErrorReply(500, message, "server_error")


def context_length_response(limit: int = 8192, sent: int = 9000) -> HTTPErrorReply:
    message = (
        f"This model's maximum context length is {limit} tokens. However, your messages resulted in "
        f"{sent} tokens. Please reduce the length of the messages."
    )
    return HTTPErrorReply(400, message, "invalid_request_error", "context_length_exceeded")


def auth_error_response() -> HTTPErrorReply:
    return HTTPErrorReply(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")


def model_not_found_response(model: str = "nope") -> HTTPErrorReply:
    message = f"The model `{model}` does not exist or you do not have access to it."
    return HTTPErrorReply(404, message, "invalid_request_error", "model_not_found")


def _fmt(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else str(seconds)


@dataclass(frozen=True)
class HTTPRequest:
    """One request the server received (``body`` is the parsed JSON, ``{}`` for GET)."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


ServerEntry = ScriptedReply | str | HTTPErrorReply | Slow | _Fault | Callable[[HTTPRequest], Any]
_Answer = tuple[int, dict[str, Any], dict[str, str]] | _Fault


class FakeOpenAIServer:
    """The server; use as a context manager or through the ``fake_openai`` fixture."""

    def __init__(self, models: tuple[str, ...] = ("gpt-4o-mini", "fake-model")) -> None:
        self.models = models
        self.requests: list[HTTPRequest] = []
        self.respond: Callable[[HTTPRequest], Any] | None = None
        self._script: deque[Any] = deque()
        self._lock = threading.Lock()
        self.closing = threading.Event()  # releases Hang handlers
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def chat_requests(self) -> list[HTTPRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def script(self, *entries: ServerEntry) -> FakeOpenAIServer:
        """Append answers for the next chat completion requests."""
        with self._lock:
            self._script.extend(entries)
        return self

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self.closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def record(self, request: HTTPRequest) -> None:
        """Record a request that is not a chat completion."""
        with self._lock:
            self.requests.append(request)

    def _record(self, request: HTTPRequest) -> Any:
        with self._lock:
            self.requests.append(request)
            return self._script.popleft() if self._script else self.respond

    def answer(self, request: HTTPRequest) -> _Answer:
        """(status, JSON body, headers) for one chat completion request, or a fault to act out."""
        entry = self._record(request)
        if request.body.get("stream"):
            return _error(HTTPErrorReply(400, "fake server: streaming is not supported"))
        if entry is None:
            return _error(
                HTTPErrorReply(400, f"fake server: script exhausted after {len(self.requests) - 1}")
            )
        return _resolve(entry, request)


def _resolve(entry: Any, request: HTTPRequest) -> _Answer:
    if isinstance(entry, RawReply | Reset | Hang):
        return entry
    if isinstance(entry, Slow):
        time.sleep(entry.delay_s)
        return _resolve(entry.entry, request)
    if callable(entry) and not isinstance(entry, ScriptedReply | HTTPErrorReply):
        return _resolve(entry(request), request)
    if isinstance(entry, str):
        entry = text_reply(entry)
    if isinstance(entry, HTTPErrorReply):
        return _error(entry)
    if isinstance(entry, ScriptedReply):
        return 200, entry.to_openai(str(request.body.get("model", "fake-model"))), {}
    raise TypeError(f"fake server: cannot answer with {entry!r}")


def _error(reply: HTTPErrorReply) -> tuple[int, dict[str, Any], dict[str, str]]:
    return reply.status, reply.body(), dict(reply.headers)


class _Handler(BaseHTTPRequestHandler):
    """Answers as its class's ``server_fake`` scripts it (one subclass per server)."""

    server_fake: FakeOpenAIServer

    protocol_version = "HTTP/1.0"  # one request per connection: nothing lingers at shutdown

    def do_GET(self) -> None:
        self.server_fake.record(HTTPRequest("GET", self.path, dict(self.headers.items()), {}))
        if self.path.rstrip("/").endswith("/models"):
            models = self.server_fake.models
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in models]
            self._send(200, {"object": "list", "data": data}, {})
        else:
            self._send(404, HTTPErrorReply(404, f"no route {self.path}").body(), {})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(400, HTTPErrorReply(400, "fake server: body is not JSON").body(), {})
            return
        request = HTTPRequest("POST", self.path, dict(self.headers.items()), body)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.server_fake.record(request)
            self._send(404, HTTPErrorReply(404, f"no route {self.path}").body(), {})
            return
        answer = self.server_fake.answer(request)
        if isinstance(answer, tuple):
            self._send(*answer)
        else:
            self._fault(answer)

    def _fault(self, fault: _Fault) -> None:
        if isinstance(fault, Hang):
            self.server_fake.closing.wait()
        elif isinstance(fault, Reset):  # SO_LINGER 0: close() sends RST instead of FIN
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
        else:
            self._send_raw(fault.status, fault.body, fault.content_type)

    def _send(self, status: int, body: dict[str, Any], headers: Mapping[str, str]) -> None:
        self._send_raw(status, json.dumps(body).encode(), "application/json", headers)

    def _send_raw(
        self, status: int, payload: bytes, content_type: str, headers: Mapping[str, str] | None = None
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout tests); nothing to answer

    def log_message(self, format: str, *args: Any) -> None:
        return  # keep test output clean


def _make_handler(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_Handler,), {"server_fake": server})


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released): connecting to it is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """A running :class:`FakeOpenAIServer`; ``.base_url``, ``.requests``, ``.script(...)``."""
    with FakeOpenAIServer() as server:
        yield server
