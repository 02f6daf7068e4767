"""Model access: one ``complete`` call over litellm, with our own retries and error mapping.

litellm is imported lazily (on the first call), its own retries are switched
off (``num_retries=0``), and every failure leaves as one of the package's
:class:`~tiered_agent._errors.ModelError` subclasses with a one-sentence,
key-free message.
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import random
import re
import socket
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

import anyio
import structlog

from . import _litellm
from ._affinity import CacheAffinity, affinity_fields, current_affinity
from ._defaults import DEFAULT_MAX_RETRIES, DEFAULT_REQUEST_TIMEOUT_S
from ._errors import (
    AuthenticationError,
    ConfigurationError,
    ContextWindowExceeded,
    ModelError,
    ModelNotFoundError,
)
from ._messages import Message, Usage, token_count
from ._trace import redact, register_secret

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_REQUEST_TIMEOUT_S",
    "LiteLLMModel",
    "Model",
    "ModelReply",
    "RetryPolicy",
    "SleepFn",
    "map_usage",
    "retry_after_s",
    "stable_breakpoints",
    "stable_prefix",
]

SleepFn = Callable[[float], Awaitable[None]]

_log = structlog.get_logger(__name__)

_RETRYABLE = (
    "RateLimitError",
    "InternalServerError",
    "ServiceUnavailableError",
    "APIConnectionError",
    "Timeout",
    "BadGatewayError",
)
_RESERVED_KWARGS = frozenset({"model", "messages", "tools", "num_retries", "stream", "timeout"})
_CONTEXT_MARKERS = ("context length", "context_length", "maximum context", "context window")
_NO_PROVIDER_MARKER = "LLM Provider NOT provided"
# litellm's words for an HTTP 200 whose body is not a chat completion (it raises a 500 for it)
_MALFORMED_MARKERS = ("empty or invalid response", "invalid response object", "provider returned 'choices'")
_MISSING_KEY = re.compile(
    r"missing (?:[\w-]+ )?(?:credentials|api[ _]key)|api_key client option must be set", re.I
)
_PREFIX = re.compile(r"^(?:litellm\.[A-Za-z]+|[A-Za-z]+(?:Error|Exception|Exceeded))(?::| -) ")
_MAX_ERROR_CHARS = 500
# a failure to connect, as httpx and aiohttp name it in an exception's chain (litellm's own
# APIConnectionError also wraps any exception a provider raises, so it says nothing by itself)
_CONNECT_ERRORS = frozenset({"ConnectError", "ClientConnectorError", "ClientConnectorDNSError"})
_KEY_ENV_VARS = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "azure": "AZURE_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "xai": "XAI_API_KEY",
    "cohere": "COHERE_API_KEY",
    "fireworks_ai": "FIREWORKS_AI_API_KEY",
}


# ---------------------------------------------------------------- retry policy
@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff for transient model errors.

    The delay before retry ``n`` (1-based) is ``initial_delay_s * multiplier**(n-1)``,
    spread by ``±jitter`` (a fraction), raised to the server's ``Retry-After``
    when it asks for longer, and capped at ``max_delay_s``. ``max_attempts``
    counts the first request (1 = never retry).
    """

    max_attempts: int = DEFAULT_MAX_RETRIES + 1
    initial_delay_s: float = 1.0
    max_delay_s: float = 30.0
    multiplier: float = 2.0
    jitter: float = 0.1

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigurationError(f"RetryPolicy.max_attempts must be >= 1, got {self.max_attempts}")
        if self.initial_delay_s < 0 or self.max_delay_s < self.initial_delay_s:
            raise ConfigurationError(
                "RetryPolicy needs 0 <= initial_delay_s <= max_delay_s, "
                f"got {self.initial_delay_s} and {self.max_delay_s}"
            )
        if self.multiplier < 1:
            raise ConfigurationError(f"RetryPolicy.multiplier must be >= 1, got {self.multiplier}")
        if not 0 <= self.jitter <= 1:
            raise ConfigurationError(f"RetryPolicy.jitter must be in [0, 1], got {self.jitter}")

    def delay(
        self,
        retry: int,
        retry_after: float | None = None,
        *,
        rand: Callable[[], float] = random.random,
    ) -> float:
        """Seconds to wait before retry number ``retry`` (1 = the first retry)."""
        base = self.initial_delay_s * self.multiplier ** max(retry - 1, 0)
        spread = base * self.jitter * (2 * rand() - 1)
        wanted = max(base + spread, retry_after or 0.0, 0.0)
        return min(wanted, self.max_delay_s)


def retry_after_s(exc: BaseException) -> float | None:
    """The ``Retry-After`` (or ``retry-after-ms``) a litellm error carries, in seconds, if any."""
    sources = (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
        getattr(exc, "headers", None),
    )
    for headers in sources:
        if not isinstance(headers, Mapping):
            continue
        lowered = {str(k).lower(): str(v) for k, v in headers.items()}
        if "retry-after-ms" in lowered:
            parsed = _parse_seconds(lowered["retry-after-ms"])
            if parsed is not None:
                return parsed / 1000.0
        if "retry-after" in lowered:
            parsed = _parse_seconds(lowered["retry-after"])
            if parsed is not None:
                return parsed
    return None


def _parse_seconds(value: str) -> float | None:
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return max(seconds, 0.0)


# ---------------------------------------------------------------- replies
@dataclass(frozen=True)
class ModelReply:
    """One model answer.

    ``message`` is the assistant message (iteration 0: the loop sets it with
    ``dataclasses.replace``); ``usage`` covers this one request
    (``requests=1``); ``model`` is the name the provider reported; ``attempts``
    counts requests made, retries included; ``latency_s`` is the wall time of
    the whole ``complete`` call, retries and waits included; ``route`` is the
    endpoint a router reported serving it (OpenRouter's ``provider``), if any.
    """

    message: Message
    usage: Usage
    finish_reason: str | None
    model: str
    attempts: int = 1
    latency_s: float = 0.0
    route: str | None = None


def map_usage(raw: Any, *, cost: float | None = None) -> Usage:
    """A :class:`Usage` from a litellm/OpenAI usage object or dict; every field may be missing or None.

    A count that is negative, fractional or not a number is treated as missing (0): a provider's
    nonsense must not defeat the token budget (which then counts locally) nor print a negative
    total. A cost that is not a finite number >= 0 is unknown.
    """
    details = _get(raw, "prompt_tokens_details")
    cached = max(
        token_count(_get(details, "cached_tokens")), token_count(_get(raw, "cache_read_input_tokens"))
    )
    return Usage(
        prompt_tokens=token_count(_get(raw, "prompt_tokens")),
        completion_tokens=token_count(_get(raw, "completion_tokens")),
        cached_tokens=cached,
        requests=1,
        cost=cost if cost is None or 0 <= cost < math.inf else None,
        cache_write_tokens=token_count(_get(raw, "cache_creation_input_tokens")),
    )


def _get(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _message_from(raw: Any) -> Message:
    """The reply's assistant message; ValueError when its shape is wrong. Lone surrogates in its
    text are written as escapes, so the paid reply can always be traced."""
    raw_calls = _get(raw, "tool_calls") or ()
    if not isinstance(raw_calls, list | tuple):
        raise ValueError(f"tool_calls is a {type(raw_calls).__name__}, not a list")
    calls = []
    for call in raw_calls:
        function = _get(call, "function")
        calls.append(
            {
                "id": _get(call, "id"),
                "function": {"name": _get(function, "name"), "arguments": _get(function, "arguments")},
            }
        )
    data = {"role": "assistant", "content": _get(raw, "content"), "tool_calls": calls}
    return Message.from_openai(data, iteration=0)


# ---------------------------------------------------------------- the protocol
@runtime_checkable
class Model(Protocol):
    """What the agent loop needs from a model."""

    name: str

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelReply: ...

    def context_window(self) -> int | None: ...


# ---------------------------------------------------------------- litellm
@dataclass(frozen=True)
class _Failure:
    error: ModelError
    retryable: bool


class LiteLLMModel:
    """A :class:`Model` over ``litellm.acompletion``; construction does no I/O and imports nothing.

    ``timeout_s`` bounds each request, ``retry`` the attempts (by default a provider that never
    answers is given up after about 3 minutes). ``sleep`` replaces ``anyio.sleep`` between retries
    (tests inject a recorder). ``context_window`` overrides litellm's cost-map value. ``api_key``
    is redacted from every trace, log and error sentence (:func:`~tiered_agent._trace.register_secret`).
    ``cache_affinity`` adds the request fields that keep the provider's cache warm across a run's
    calls (``_affinity.py``: OpenAI's ``prompt_cache_key``, OpenRouter's endpoint pinned, Claude's
    1-hour TTL after long gaps); ``clock`` is the monotonic clock it measures gaps with.
    """

    name: str
    api_base: str | None
    api_key: str | None
    retry: RetryPolicy
    sleep: SleepFn

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S,
        retry: RetryPolicy | None = None,
        extra_kwargs: Mapping[str, Any] | None = None,
        context_window: int | None = None,
        sleep: SleepFn | None = None,
        cache_breakpoints: bool = True,
        cache_affinity: bool = True,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigurationError(f"model must be a non-empty string like 'openai/gpt-4o', got {model!r}")
        if timeout_s <= 0:
            raise ConfigurationError(f"timeout_s must be > 0, got {timeout_s}")
        if context_window is not None and context_window <= 0:
            raise ConfigurationError(f"context_window must be > 0, got {context_window}")
        reserved = sorted(_RESERVED_KWARGS & set(extra_kwargs or {}))
        if reserved:
            raise ConfigurationError(f"extra_kwargs may not set {', '.join(reserved)}")
        self.name = model
        self.api_base = api_base
        self.api_key = api_key
        register_secret(api_key)
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self.extra_kwargs = dict(extra_kwargs or {})
        self.context_window_override = context_window
        self.sleep = sleep or anyio.sleep
        self.cache_breakpoints = cache_breakpoints
        self.cache_affinity = cache_affinity
        self.clock = clock or time.monotonic

    def context_window(self) -> int | None:
        """The override if given, else litellm's cost map; ``None`` when unknown."""
        if self.context_window_override is not None:
            return self.context_window_override
        return _litellm.context_window(self.name)

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelReply:
        litellm = _litellm.import_litellm()
        affinity = current_affinity() if self.cache_affinity else None
        if affinity is not None:
            affinity.requested(self.clock())
        kwargs = self._request(messages, tools, affinity)
        started = time.perf_counter()
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await litellm.acompletion(**kwargs)
            except Exception as exc:
                await self._handle_failure(litellm, exc, attempt)
                continue
            reply = self._reply(litellm, response, attempt, time.perf_counter() - started)
            if affinity is not None:
                affinity.answered(reply.route)
            return reply

    def _request(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        affinity: CacheAffinity | None = None,
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.name,
            "messages": messages,
            "tools": tools or None,
            "api_base": self.api_base,
            "api_key": self.api_key,
            "timeout": self.timeout_s,
            "num_retries": 0,
        }
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        points = None
        if self.cache_breakpoints and needs_cache_breakpoints(self.name):
            points = kwargs["cache_control_injection_points"] = _points(len(messages), _STABLE.get())
        if self.cache_affinity:
            kwargs.update(affinity_fields(self.name, messages, affinity, points))
        return _with_extra(kwargs, self.extra_kwargs)

    async def _handle_failure(self, litellm: ModuleType, exc: Exception, attempt: int) -> None:
        """Sleep before the next attempt, or raise the mapped error."""
        failure = self._classify(litellm, exc, attempt)
        if not failure.retryable or attempt >= self.retry.max_attempts:
            raise failure.error from exc
        delay = self.retry.delay(attempt, retry_after_s(exc))
        _log.warning(
            "model_retry",
            model=self.name,
            attempt=attempt,
            max_attempts=self.retry.max_attempts,
            delay_s=round(delay, 3),
            error=type(exc).__name__,
        )
        await self.sleep(delay)

    def _classify(self, litellm: ModuleType, exc: Exception, attempt: int) -> _Failure:
        text = self._clean(exc)
        if isinstance(exc, litellm.ContextWindowExceededError) or (
            isinstance(exc, litellm.BadRequestError) and _says_context(text)
        ):
            message = f"The prompt exceeds the context window of model {self.name!r}: {text}"
            return _Failure(ContextWindowExceeded(message), retryable=False)
        if isinstance(exc, litellm.AuthenticationError) or _MISSING_KEY.search(text):
            return _Failure(AuthenticationError(self._auth_message(litellm)), retryable=False)
        if isinstance(exc, litellm.NotFoundError):
            return _Failure(ModelNotFoundError(self._not_found_message()), retryable=False)
        if isinstance(exc, litellm.BadRequestError) and _NO_PROVIDER_MARKER in text:
            return _Failure(ModelNotFoundError(self._no_provider_message()), retryable=False)
        if _malformed(exc, text):  # the server answered, with garbage: asking again is no fix
            message = f"Model {self.name!r} sent a reply that is not a chat completion: {text}{_why(exc)}"
            return _Failure(ModelError(message), retryable=False)
        retryable = isinstance(exc, tuple(getattr(litellm, n) for n in _RETRYABLE))
        return _Failure(ModelError(self._failed_message(litellm, exc, attempt, text)), retryable=retryable)

    def _failed_message(self, litellm: ModuleType, exc: Exception, attempt: int, text: str) -> str:
        """A failure after ``attempt`` attempts; one to connect names the endpoint and the OS's cause
        (litellm says only "Connection error.")."""
        cause = connection_failure(exc)
        if cause is not None:
            where = redact(self.api_base) if self.api_base else self._default_endpoint(litellm)
            text = f"cannot connect to {where} ({cause})"
        else:
            text = f"{type(exc).__name__}: {text}"
        return f"Model {self.name!r} failed after {attempt} attempt(s): {text}"

    def _default_endpoint(self, litellm: ModuleType) -> str:
        provider = _provider(litellm, self.name)
        return f"the {provider} provider's endpoint" if provider else "the provider's endpoint"

    def _clean(self, exc: BaseException) -> str:
        """The error text: no credentials, no litellm class-name prefixes, no traceback, bounded."""
        text = str(exc).split("Traceback (most recent call last)")[0]
        while (stripped := _PREFIX.sub("", text, count=1).strip()) != text:
            text = stripped
        if self.api_key:
            text = text.replace(self.api_key, "[redacted]")
        cleaned: str = redact(" ".join(text.split()))
        if len(cleaned) > _MAX_ERROR_CHARS:
            cleaned = cleaned[: _MAX_ERROR_CHARS - 3] + "..."
        return cleaned or type(exc).__name__

    def _auth_message(self, litellm: ModuleType) -> str:
        provider = _provider(litellm, self.name)
        env_var = _key_env_var(litellm, self.name, provider)
        who = f"The {provider} provider" if provider else "The provider"
        if self.api_key:
            return f"{who} rejected the api_key passed for model {self.name!r}; check that key."
        if env_var and os.environ.get(env_var):
            return f"{who} rejected the key in {env_var} for model {self.name!r}; check that key."
        where = f"set {env_var}" if env_var else "set the provider's API key environment variable"
        if self.api_base:  # a self-hosted, OpenAI-compatible server often checks no key at all
            return (
                f"No valid credentials for model {self.name!r}: {where} or pass api_key; a server at "
                f"{redact(self.api_base)} that checks no key accepts any placeholder "
                f"(e.g. {env_var or 'OPENAI_API_KEY'}=sk-local)."
            )
        return f"No valid credentials for model {self.name!r}: {where} or pass api_key."

    def _not_found_message(self) -> str:
        where = f" at {redact(self.api_base)}" if self.api_base else ""
        return f"The provider{where} does not know model {self.name!r}; check the model name."

    def _no_provider_message(self) -> str:
        return (
            f"litellm cannot tell which provider serves model {self.name!r}; "
            "prefix it with one, e.g. 'openai/NAME' or 'anthropic/NAME'."
        )

    def _reply(self, litellm: ModuleType, response: Any, attempts: int, latency_s: float) -> ModelReply:
        choices = _get(response, "choices") or []
        if not choices:
            raise ModelError(f"Model {self.name!r} returned no choices")
        choice = choices[0]
        reported = _get(response, "model")
        route = _get(response, "provider")
        finish = _get(choice, "finish_reason")
        try:
            message = _message_from(_get(choice, "message"))
        except ValueError as exc:  # a tool call whose id is an object, a list of calls that is not one
            raise ModelError(
                f"Model {self.name!r} sent a reply that is not a chat completion: {exc}"
            ) from None
        return ModelReply(
            message=message,
            usage=map_usage(_get(response, "usage"), cost=self._cost(litellm, response)),
            finish_reason=finish if isinstance(finish, str) else None,
            model=str(reported) if isinstance(reported, str) and reported else self.name,
            attempts=attempts,
            latency_s=latency_s,
            route=route if isinstance(route, str) and route else None,
        )

    def _cost(self, litellm: ModuleType, response: Any) -> float | None:
        try:
            cost = litellm.completion_cost(completion_response=response)
        except Exception as exc:  # unknown model: litellm has no price, which is not an error for us
            _log.debug("model_cost_unknown", model=self.name, error=type(exc).__name__)
            return None
        return float(cost) if isinstance(cost, int | float) else None

    def __repr__(self) -> str:
        return f"LiteLLMModel(name={self.name!r}, api_base={redact(self.api_base)!r})"


# Claude caches a prompt prefix only up to explicit breakpoints (OpenAI and Gemini cache
# automatically). One on the system prompt and one on the newest message: the next request then
# reads everything up to the previous newest message from the cache. litellm injects them.
CACHE_BREAKPOINTS: tuple[dict[str, Any], ...] = (
    {"location": "message", "role": "system"},
    {"location": "message", "index": -1},
)
_EXPLICIT_CACHE_PROVIDERS = ("anthropic/", "bedrock/", "vertex_ai/", "azure_ai/")
MAX_BREAKPOINTS = 4  # Anthropic's limit per request
# The prompt's stable prefixes the context policy reports for the request being sent (message
# counts, preferred first: ``BuiltPrompt.stable``); the agent loop sets them around its call.
_STABLE: ContextVar[tuple[int, ...]] = ContextVar("tiered_agent_stable_prefix", default=())


@contextmanager
def stable_prefix(stable: Sequence[int]) -> Iterator[None]:
    """Within this block, requests mark the cache breakpoints of these stable prefixes (message
    counts, preferred first) besides :data:`CACHE_BREAKPOINTS` (:func:`stable_breakpoints`)."""
    token = _STABLE.set(tuple(stable))
    try:
        yield
    finally:
        _STABLE.reset(token)


def stable_breakpoints(stable: Sequence[int], messages: int, spare: int) -> tuple[int, ...]:
    """The stable prefixes to mark when ``spare`` breakpoints are left (message counts): the first
    ``spare`` of ``stable`` (preferred first) that end before the newest message, each once.

    One definition for the live requests and the bench's cache simulation: the breakpoint of a
    prefix of ``k`` messages is on message ``k - 1``."""
    chosen: list[int] = []
    for count in stable:
        if len(chosen) >= spare:
            break
        if 0 < count < messages and count not in chosen:
            chosen.append(count)
    return tuple(chosen)


def _points(messages: int, stable: Sequence[int]) -> list[dict[str, Any]]:
    """litellm's injection points: :data:`CACHE_BREAKPOINTS`, then the stable prefixes that fit."""
    points = [dict(point) for point in CACHE_BREAKPOINTS]
    spare = MAX_BREAKPOINTS - len(points)
    points += [{"location": "message", "index": k - 1} for k in stable_breakpoints(stable, messages, spare)]
    return points


def _with_extra(kwargs: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``kwargs`` with the caller's ``extra_kwargs`` over them; ``extra_body`` dicts are merged (the
    caller's keys win)."""
    merged = {**kwargs, **extra}
    if isinstance(kwargs.get("extra_body"), dict) and isinstance(extra.get("extra_body"), dict):
        merged["extra_body"] = {**kwargs["extra_body"], **extra["extra_body"]}
    return merged


def needs_cache_breakpoints(model: str) -> bool:
    """True for Claude models behind providers that cache only at explicit breakpoints."""
    name = model.lower()
    return name.startswith(_EXPLICIT_CACHE_PROVIDERS) and "claude" in name


def _malformed(exc: BaseException, text: str) -> bool:
    """True when the provider's answer could not be read as a chat completion (a malformed 200)."""
    lowered = text.lower()
    if any(marker in lowered for marker in _MALFORMED_MARKERS):
        return True
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, json.JSONDecodeError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _why(exc: BaseException) -> str:
    """What litellm found wrong in a reply it could not read, from the traceback its message holds
    (``Invalid response object Traceback ... ValidationError: 1 validation error for Usage ...``):
    `` (the error, its first lines)``, or '' when the message holds none."""
    _, found, tail = str(exc).partition("Traceback (most recent call last)")
    lines = [line.strip() for line in tail.split("received_args=")[0].splitlines() if found and line.strip()]
    start = next((i for i, line in enumerate(lines) if _RAISED.match(line)), None)
    if start is None:
        return ""
    detail = redact(" ".join(line for line in lines[start : start + 4] if not line.startswith("For further")))
    return f" ({detail[:_MAX_ERROR_CHARS]})"


_RAISED = re.compile(r"^(?:[A-Za-z_.]+\.)?[A-Za-z]*(?:Error|Exception): ")


def _says_context(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in _CONTEXT_MARKERS)


def connection_failure(exc: BaseException) -> str | None:
    """Why a request could not connect, in the OS's words (``connection refused``, ``name or service
    not known``), from the exception's chain; None when ``exc`` is not a failure to connect."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain and len(chain) < 20:
        chain.append(current)
        current = current.__cause__ or current.__context__
    connecting = (ConnectionRefusedError, socket.gaierror)
    if not any(type(e).__name__ in _CONNECT_ERRORS or isinstance(e, connecting) for e in chain):
        return None
    for link in reversed(chain):  # the root cause first
        if isinstance(link, socket.gaierror) and link.strerror:
            return link.strerror.lower()
        if isinstance(link, OSError) and link.errno:
            return os.strerror(link.errno).lower()
    return "no connection"


def _provider(litellm: ModuleType, model: str) -> str | None:
    try:
        provider = litellm.get_llm_provider(model=model)[1]
    except Exception as exc:  # the model string names no provider
        _log.debug("model_provider_unknown", model=model, error=type(exc).__name__)
        return None
    return str(provider) if provider else None


def _key_env_var(litellm: ModuleType, model: str, provider: str | None) -> str | None:
    if provider in _KEY_ENV_VARS:
        return _KEY_ENV_VARS[provider]
    try:
        missing = litellm.validate_environment(model=model).get("missing_keys") or []
    except Exception as exc:  # validate_environment is best-effort help text
        _log.debug("model_env_unknown", model=model, error=type(exc).__name__)
        return None
    keys = [str(k) for k in missing if "KEY" in str(k)]
    return keys[0] if keys else None
