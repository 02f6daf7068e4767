"""Test doubles that drive the *real* litellm code path.

:class:`ScriptedLLM` is a ``litellm.CustomLLM`` registered under the provider
``"fake"``: calling ``litellm.acompletion(model="fake/any", ...)`` (or
``LiteLLMModel("fake/any")``) goes through litellm's dispatch, response
handling and exception mapping, and ends in :meth:`ScriptedLLM.acompletion`,
which returns the next scripted reply (or raises the next scripted litellm
exception) and records the request.

Usage::

    with scripted_provider(text_reply("hi"), tool_reply([("call_1", "read_file", {"path": "a"})])) as llm:
        reply = await LiteLLMModel(FAKE_MODEL, api_key="sk-test").complete(messages, tools)
    llm.requests[0].messages

or the ``scripted_llm`` fixture (available where ``pytest_plugins`` lists
``"fakes"``), then ``scripted_llm.script(...)`` / ``scripted_llm.respond = fn``.

Note: an exception that is not a litellm one (say a ``ValueError``) reaches the
caller as litellm's ``APIConnectionError``, which LiteLLMModel retries.

Script entries (:data:`Entry`): a :class:`ScriptedReply` (see :func:`text_reply`,
:func:`tool_reply`), a plain ``str`` (a text reply), an exception instance
(raised; see :func:`rate_limit_error` and friends), or a callable taking the
:class:`RecordedRequest` and returning one of those (pydantic-ai's
FunctionModel style). When the script is empty, ``respond`` (same callable
shape) computes the reply; with neither, the request fails with a
non-retryable BadRequestError saying the script is exhausted.
"""

from __future__ import annotations

import copy
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tiered_agent._litellm import import_litellm

import_litellm()  # configure litellm (offline cost map, quiet loggers) before anything uses it
import litellm  # noqa: E402 - after the configuration above
from litellm.exceptions import (  # noqa: E402
    AuthenticationError,
    BadRequestError,
    ContextWindowExceededError,
    InternalServerError,
    NotFoundError,
    RateLimitError,
    Timeout,
)
from litellm.llms.custom_llm import CustomLLM  # noqa: E402
from litellm.types.utils import ModelResponse  # noqa: E402

__all__ = [
    "FAKE_MODEL",
    "FAKE_PROVIDER",
    "TOOLS",
    "USER",
    "Entry",
    "RecordedRequest",
    "Responder",
    "ScriptedLLM",
    "ScriptedReply",
    "SleepRecorder",
    "auth_error",
    "context_window_error",
    "make_usage",
    "not_found_error",
    "rate_limit_error",
    "scripted_llm",
    "scripted_provider",
    "server_error",
    "text_reply",
    "timeout_error",
    "tool_reply",
]

FAKE_PROVIDER = "fake"
FAKE_MODEL = "fake/any"

# A minimal request: one user message and one tool.
USER = [{"role": "user", "content": "hi"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]


# ---------------------------------------------------------------- replies
def make_usage(
    prompt: int = 10,
    completion: int = 5,
    *,
    cached: int | None = 0,
    cache_read_input_tokens: int | None = None,
) -> dict[str, Any]:
    """OpenAI-shaped usage JSON. ``cached=None`` omits ``prompt_tokens_details``;
    ``cache_read_input_tokens`` adds Anthropic's field."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    if cache_read_input_tokens is not None:
        usage["cache_read_input_tokens"] = cache_read_input_tokens
    return usage


_DEFAULT_USAGE: Mapping[str, Any] = make_usage()


@dataclass(frozen=True)
class ScriptedReply:
    """One assistant reply; ``tool_calls`` holds (id, name, raw JSON arguments) triples.

    ``usage=None`` sends no usage at all; ``model=None`` echoes the requested model.
    """

    content: str | None = None
    tool_calls: tuple[tuple[str, str, str], ...] = ()
    usage: Mapping[str, Any] | None = field(default_factory=lambda: dict(_DEFAULT_USAGE))
    finish_reason: str | None = None
    model: str | None = None

    def to_openai(self, requested_model: str = "any") -> dict[str, Any]:
        """The reply as an OpenAI ``chat.completion`` JSON object."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                for cid, name, args in self.tool_calls
            ]
        finish = self.finish_reason or ("tool_calls" if self.tool_calls else "stop")
        body: dict[str, Any] = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model or requested_model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if self.usage is not None:
            body["usage"] = copy.deepcopy(dict(self.usage))
        return body

    def to_model_response(self, requested_model: str = "any") -> Any:
        """A fresh ``litellm.ModelResponse`` (what a CustomLLM must return)."""
        return ModelResponse(**self.to_openai(requested_model))


def text_reply(
    text: str, usage: Mapping[str, Any] | None = _DEFAULT_USAGE, *, model: str | None = None
) -> ScriptedReply:
    """A plain text answer."""
    return ScriptedReply(content=text, usage=_copy(usage), model=model)


def tool_reply(
    calls: Sequence[tuple[str, str, Mapping[str, Any] | str]],
    usage: Mapping[str, Any] | None = _DEFAULT_USAGE,
    *,
    content: str | None = None,
    model: str | None = None,
) -> ScriptedReply:
    """Tool calls ``[(id, name, arguments)]``; a dict is JSON-encoded, a str is sent raw (malformed JSON)."""
    triples = tuple(
        (cid, name, args if isinstance(args, str) else json.dumps(args)) for cid, name, args in calls
    )
    return ScriptedReply(content=content, tool_calls=triples, usage=_copy(usage), model=model)


def _copy(usage: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if usage is None else copy.deepcopy(dict(usage))


# ---------------------------------------------------------------- scripted exceptions
def _error_response(status: int, headers: Mapping[str, str] | None = None) -> httpx.Response:
    request = httpx.Request("POST", "http://fake.invalid/v1/chat/completions")
    return httpx.Response(status, headers=dict(headers or {}), request=request)


def rate_limit_error(retry_after: float | None = None) -> Exception:
    """A litellm 429, optionally with a ``Retry-After`` header (seconds)."""
    headers = {"retry-after": str(retry_after)} if retry_after is not None else None
    return RateLimitError(
        "Rate limit reached", llm_provider=FAKE_PROVIDER, model="any", response=_error_response(429, headers)
    )


def server_error(message: str = "upstream exploded") -> Exception:
    return InternalServerError(message, llm_provider=FAKE_PROVIDER, model="any")


def timeout_error() -> Exception:
    return Timeout("Request timed out.", model="any", llm_provider=FAKE_PROVIDER)


def context_window_error() -> Exception:
    return ContextWindowExceededError(
        "This model's maximum context length is 8192 tokens", model="any", llm_provider=FAKE_PROVIDER
    )


def auth_error() -> Exception:
    return AuthenticationError("Incorrect API key provided", llm_provider=FAKE_PROVIDER, model="any")


def not_found_error() -> Exception:
    return NotFoundError("The model `any` does not exist", llm_provider=FAKE_PROVIDER, model="any")


# ---------------------------------------------------------------- the CustomLLM
@dataclass(frozen=True)
class RecordedRequest:
    """What litellm handed the provider: messages and tools as sent, plus the other parameters."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    params: dict[str, Any]
    api_key: str | None
    api_base: str | None
    timeout: Any


Entry = ScriptedReply | str | BaseException | Callable[[RecordedRequest], Any]
Responder = Callable[[RecordedRequest], Any]


class ScriptedLLM(CustomLLM):
    """A litellm provider that answers from a script; see the module docstring."""

    def __init__(self, script: Iterable[Entry] = (), *, respond: Responder | None = None) -> None:
        super().__init__()
        self._script: deque[Entry] = deque(script)
        self._lock = threading.Lock()
        self.respond = respond
        self.requests: list[RecordedRequest] = []

    def script(self, *entries: Entry) -> ScriptedLLM:
        """Append entries to the script."""
        with self._lock:
            self._script.extend(entries)
        return self

    @property
    def remaining(self) -> int:
        return len(self._script)

    def _answer(self, model: str, messages: list[Any], api_key: Any, api_base: Any, **kwargs: Any) -> Any:
        params = dict(kwargs.get("optional_params") or {})
        tools = params.pop("tools", None) or []
        request = RecordedRequest(
            model=model,
            messages=copy.deepcopy(list(messages)),
            tools=copy.deepcopy(list(tools)),
            params=params,
            api_key=api_key,
            api_base=api_base,
            timeout=kwargs.get("timeout"),
        )
        with self._lock:
            self.requests.append(request)
            entry: Any = self._script.popleft() if self._script else self.respond
        if entry is None:
            raise BadRequestError(
                f"ScriptedLLM: script exhausted after {len(self.requests) - 1} request(s)",
                model=model,
                llm_provider=FAKE_PROVIDER,
            )
        return _resolve(entry, request, model)

    def completion(self, model: str, messages: list[Any], api_base: Any, *a: Any, **kw: Any) -> Any:
        return self._answer(model, messages, kw.pop("api_key", None), api_base, **kw)

    async def acompletion(self, model: str, messages: list[Any], api_base: Any, *a: Any, **kw: Any) -> Any:
        return self._answer(model, messages, kw.pop("api_key", None), api_base, **kw)


def _resolve(entry: Any, request: RecordedRequest, model: str) -> Any:
    for _ in range(2):  # a callable may return an entry; one level is enough
        if callable(entry) and not isinstance(entry, ScriptedReply | BaseException):
            entry = entry(request)
    if isinstance(entry, BaseException):
        raise entry
    if isinstance(entry, str):
        entry = text_reply(entry)
    if not isinstance(entry, ScriptedReply):
        raise TypeError(f"ScriptedLLM: cannot answer with {entry!r}")
    return entry.to_model_response(model)


@contextmanager
def scripted_provider(
    *script: Entry, respond: Responder | None = None, provider: str = FAKE_PROVIDER
) -> Iterator[ScriptedLLM]:
    """Register a :class:`ScriptedLLM` as ``provider`` (model ``"fake/any"``); restore litellm afterwards."""
    llm = ScriptedLLM(script, respond=respond)
    saved_map = list(litellm.custom_provider_map)
    saved_custom = list(litellm._custom_providers)
    saved_providers = list(litellm.provider_list)
    others = [item for item in saved_map if item["provider"] != provider]
    litellm.custom_provider_map = [*others, {"provider": provider, "custom_handler": llm}]
    try:
        yield llm
    finally:
        litellm.custom_provider_map = saved_map
        litellm._custom_providers[:] = saved_custom
        litellm.provider_list[:] = saved_providers


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedLLM]:
    """An empty :class:`ScriptedLLM` registered as provider ``fake``; script it with ``.script(...)``."""
    with scripted_provider() as llm:
        yield llm


class SleepRecorder:
    """Stands in for anyio.sleep: records the delays, waits for nothing."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


# --------------------------------------------------------------------------- Anthropic over HTTP
@contextmanager
def fake_anthropic(text: str, usage: Mapping[str, int]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A Messages API endpoint on 127.0.0.1 that answers every request with ``text`` and ``usage``.

    Yields ``(api_base, bodies)``: the base URL to give litellm and the JSON bodies received, so a
    test can read what litellm really sent (cache_control breakpoints, tools, ...).
    """
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    bodies: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            bodies.append(body)
            reply = {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "usage": dict(usage),
            }
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    finally:
        server.shutdown()
        server.server_close()
