"""OpenTelemetry spans derived from one run's typed events (an observer: the loop holds no telemetry code).

Conventions: the OpenTelemetry GenAI semantic conventions as released in semantic-conventions
v1.41.0 (``docs/gen-ai/gen-ai-agent-spans.md`` and ``gen-ai-spans.md``, status Development), the
last release before they moved to ``open-telemetry/semantic-conventions-genai``; its v0.1.0 keeps
every name used here. A new instrumentation, so it emits this version directly (no
``OTEL_SEMCONV_STABILITY_OPT_IN`` transition).

* ``invoke_agent {agent name}`` (INTERNAL, the agent runs in process): one per run, the parent;
  current while the run lasts, so spans of other instrumentation (and the application's own in
  tools) join the trace.
* ``chat {model}`` (CLIENT): one per model call, from its ``model_request`` to its
  ``model_response`` (retries included); current during the call.
* ``execute_tool {tool name}`` (INTERNAL): one per tool call, with the call's own start and
  duration, so concurrent calls overlap as they ran. A call served from the dedup cache gets a
  zero-length span; calls left unanswered when a run stops end with an error at the run's end.

Failures set status ERROR and ``error.type``. This project's own attributes are under
``tiered_agent.``; summaries, retrievals and errors outside a model call are events on the run span.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata
from typing import TYPE_CHECKING, Any

import orjson
import structlog
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from ._messages import Message, ToolCall
from ._otel_content import input_messages, output_messages, redacted_text, tool_arguments
from ._trace import (
    ErrorEvent,
    Event,
    MessageEvent,
    ModelRequest,
    ModelResponse,
    RetrievalEvent,
    RunEnded,
    RunStarted,
    SummaryEvent,
    ToolResult,
    redact,
)

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer
    from opentelemetry.util.types import AttributeValue

    from ._telemetry import Telemetry

__all__ = ["SCHEMA_URL", "RunSpans", "package_version", "split_model"]

log = structlog.get_logger(__name__)

SCHEMA_URL = "https://opentelemetry.io/schemas/1.41.0"

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"  # every input token, cached ones included
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
CACHE_WRITE_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_DESCRIPTION = "gen_ai.tool.description"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"  # opt-in content
TOOL_RESULT = "gen_ai.tool.call.result"  # opt-in content
INPUT_MESSAGES = "gen_ai.input.messages"  # opt-in content
OUTPUT_MESSAGES = "gen_ai.output.messages"  # opt-in content
ERROR_TYPE = "error.type"
OTHER = "_OTHER"  # the conventions' fallback value (error.type, provider)

# litellm provider prefixes whose gen_ai.provider.name differs; other prefixes are used as they are
_PROVIDERS = {
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "bedrock": "aws.bedrock",
    "bedrock_converse": "aws.bedrock",
    "cohere_chat": "cohere",
    "gemini": "gcp.gemini",
    "mistral": "mistral_ai",
    "moonshot": "moonshot_ai",
    "text-completion-openai": "openai",
    "vertex_ai": "gcp.vertex_ai",
    "vertex_ai_beta": "gcp.vertex_ai",
    "watsonx": "ibm.watsonx.ai",
    "xai": "x_ai",
}
_FAMILIES = (
    ("gpt-", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("claude", "anthropic"),
    ("gemini", "gcp.gemini"),
)

Attributes = dict[str, "AttributeValue | None"]


def split_model(model: str) -> tuple[str, str]:
    """(``gen_ai.provider.name``, ``gen_ai.request.model``) of a litellm model string."""
    prefix, slash, name = model.partition("/")
    if slash and name:
        return _PROVIDERS.get(prefix.lower(), prefix.lower()), name
    provider = next((p for family, p in _FAMILIES if model.lower().startswith(family)), OTHER)
    return provider, model


@lru_cache(maxsize=1)
def package_version() -> str | None:
    try:
        return metadata.version("tiered-agent")
    except metadata.PackageNotFoundError:
        return None


def _ns(seconds: float) -> int:
    return round(seconds * 1_000_000_000)


def _clean(attributes: Mapping[str, AttributeValue | None]) -> dict[str, AttributeValue]:
    return {k: v for k, v in attributes.items() if v is not None}


def _fail(span: Span, error_type: str, description: str | None = None) -> None:
    span.set_attribute(ERROR_TYPE, error_type or OTHER)
    span.set_status(Status(StatusCode.ERROR, description or None))


@dataclass
class _Chat:
    span: Span
    token: object
    output: Message | None = None


@dataclass
class _Totals:
    """What the run span reports at its end besides the run's own totals."""

    tool_calls: int = 0
    tool_errors: int = 0
    dedup_hits: int = 0
    summaries: int = 0
    summary_input_tokens: int = 0
    summary_output_tokens: int = 0
    retrievals: int = 0
    response_model: str | None = None


@dataclass
class _RunInfo:
    """What the run_start event says that later spans need."""

    provider: str = OTHER
    model: str = ""
    conversation_id: str = ""
    descriptions: dict[str, str] = field(default_factory=dict)
    read_only: frozenset[str] = frozenset()


class RunSpans:
    """The observer of one run: call it with each event, in order (``Telemetry.start_run`` makes one)."""

    def __init__(self, tracer: Tracer, config: Telemetry) -> None:
        self._tracer = tracer
        self._agent_name = config.agent_name
        self._limit = config.max_content_chars if config.captures_content() else 0  # 0: no content
        self._info = _RunInfo()
        self._totals = _Totals()
        self._run: Span | None = None
        self._run_context: Context | None = None
        self._run_token: object | None = None
        self._chat: _Chat | None = None
        self._calls: dict[str, ToolCall] = {}
        self._pending: dict[str, tuple[ToolCall, int]] = {}  # requested, unanswered: call, request time
        self._results: dict[str, str] = {}  # tool outputs awaiting their span (content capture only)
        self._warned = False

    def __call__(self, event: Event) -> None:
        handler = _HANDLERS.get(type(event))
        if handler is None:
            return
        try:
            handler(self, event)
        except Exception:  # telemetry must not break the run it observes; said once per run
            if not self._warned:
                self._warned = True
                log.warning("telemetry.event_failed", event=event.type, exc_info=True)

    # ------------------------------------------------------------------ run
    def _run_start(self, event: RunStarted) -> None:
        provider, model = split_model(event.model)
        self._info = _RunInfo(
            provider=provider,
            model=model,
            conversation_id=event.conversation_id or event.run_id,
            descriptions=_descriptions(event.tools),
            read_only=frozenset(event.config.get("read_only_tools", ())),
        )
        attributes: Attributes = {
            **self._common("invoke_agent"),
            AGENT_NAME: self._agent_name,
            "tiered_agent.run.id": event.run_id,
            "tiered_agent.run.source": event.source,
            "tiered_agent.context.policy": (event.config.get("context") or {}).get("name"),
            "tiered_agent.context.window": event.config.get("context_window"),
        }
        if self._limit:
            attributes[INPUT_MESSAGES] = input_messages([Message("user", event.task)], self._limit)
        self._run = self._tracer.start_span(
            f"invoke_agent {self._agent_name}",
            kind=SpanKind.INTERNAL,
            attributes=_clean(attributes),
            start_time=_ns(event.started_at) if event.started_at else None,
        )
        self._run_context = trace.set_span_in_context(self._run)
        self._run_token = otel_context.attach(self._run_context)

    def _run_end(self, event: RunEnded) -> None:
        try:
            now = time.time_ns()
            reason = event.stop_reason
            if self._chat is not None:
                self._end_chat(reason, event.error)
            for call, requested in self._pending.values():
                self._tool_span(call.id, call.name, requested, now, error=reason)
            self._pending.clear()
            if self._run is None:
                return
            self._run.set_attributes(_clean(self._end_attributes(event)))
            if self._limit and event.output is not None:
                answer = Message("assistant", event.output)
                self._run.set_attribute(OUTPUT_MESSAGES, output_messages(answer, "stop", self._limit))
            if reason != "answered":
                _fail(self._run, reason, str(redact(event.error)) if event.error else None)
            self._run.end(end_time=now)
        finally:
            if self._run_token is not None:
                otel_context.detach(self._run_token)  # type: ignore[arg-type]
                self._run_token = None

    def _end_attributes(self, event: RunEnded) -> Attributes:
        usage, totals = event.usage, self._totals
        full, sent = event.counterfactual_tokens, event.prompt_tokens_local
        return {
            RESPONSE_MODEL: totals.response_model,
            INPUT_TOKENS: usage.prompt_tokens,
            OUTPUT_TOKENS: usage.completion_tokens,
            CACHE_READ_TOKENS: usage.cached_tokens,
            CACHE_WRITE_TOKENS: usage.cache_write_tokens,
            "tiered_agent.usage.requests": usage.requests,
            "tiered_agent.usage.cost": usage.cost,
            "tiered_agent.run.stop_reason": event.stop_reason,
            "tiered_agent.run.iterations": event.iterations,
            "tiered_agent.prompt.tokens": sent,
            "tiered_agent.prompt.full_history_tokens": full,
            "tiered_agent.prompt.saved_tokens": full - sent,
            "tiered_agent.prompt.savings": 0.0 if full == 0 else 1 - sent / full,
            "tiered_agent.tool.calls": totals.tool_calls,
            "tiered_agent.tool.errors": totals.tool_errors,
            "tiered_agent.dedup.hits": totals.dedup_hits,
            "tiered_agent.summaries": totals.summaries,
            "tiered_agent.summary.input_tokens": totals.summary_input_tokens,
            "tiered_agent.summary.output_tokens": totals.summary_output_tokens,
            "tiered_agent.retrievals": totals.retrievals,
        }

    def _common(self, operation: str) -> Attributes:
        return {
            OPERATION: operation,
            PROVIDER: self._info.provider,
            REQUEST_MODEL: self._info.model,
            CONVERSATION_ID: self._info.conversation_id,
        }

    # ------------------------------------------------------------------ model calls
    def _model_request(self, event: ModelRequest) -> None:
        if self._chat is not None:  # a request whose call never reported back
            self._end_chat(OTHER, "no response recorded")
        attributes: Attributes = {**self._common("chat"), **_request_attributes(event)}
        if self._limit:
            attributes[INPUT_MESSAGES] = input_messages(event.prompt, self._limit)
        span = self._tracer.start_span(
            f"chat {self._info.model}",
            context=self._run_context,
            kind=SpanKind.CLIENT,
            attributes=_clean(attributes),
        )
        self._chat = _Chat(span, otel_context.attach(trace.set_span_in_context(span)))

    def _model_response(self, event: ModelResponse) -> None:
        chat, self._chat = self._chat, None
        if chat is None:
            return
        try:
            chat.span.set_attributes(_clean(_response_attributes(event)))
            if self._limit:
                chat.span.set_attribute(
                    OUTPUT_MESSAGES, output_messages(chat.output, event.finish_reason, self._limit)
                )
            chat.span.end()
        finally:
            otel_context.detach(chat.token)  # type: ignore[arg-type]
        self._totals.response_model = event.model or self._totals.response_model
        requested = time.time_ns()
        for call in chat.output.tool_calls if chat.output else ():
            self._pending[call.id] = (call, requested)

    def _end_chat(self, error_type: str, description: str | None) -> None:
        chat, self._chat = self._chat, None
        if chat is None:
            return
        try:
            _fail(chat.span, error_type, str(redact(description)) if description else None)
            chat.span.end()
        finally:
            otel_context.detach(chat.token)  # type: ignore[arg-type]

    def _error(self, event: ErrorEvent) -> None:
        if self._chat is not None:
            self._end_chat(event.kind, event.message)
        elif self._run is not None:
            attributes: Attributes = {
                ERROR_TYPE: event.kind,
                "tiered_agent.iteration": event.iteration,
                "tiered_agent.error.message": str(redact(event.message)),
            }
            self._run.add_event("tiered_agent.error", _clean(attributes))

    # ------------------------------------------------------------------ messages and tools
    def _message(self, event: MessageEvent) -> None:
        message = event.message
        if message.role == "assistant":
            self._calls.update((call.id, call) for call in message.tool_calls)
            if self._chat is not None:
                self._chat.output = message
        elif message.role == "tool" and self._limit and message.tool_call_id:
            self._results[message.tool_call_id] = message.text

    def _tool_result(self, event: ToolResult) -> None:
        self._pending.pop(event.tool_call_id, None)
        now = time.time_ns()
        start = _ns(event.started_at) if event.started_at is not None else now
        end = start + _ns(event.duration_s) if event.started_at is not None else now
        error = (event.error_kind or OTHER) if event.is_error else None
        self._tool_span(event.tool_call_id, event.name, start, end, error=error, result=event)
        totals = self._totals
        totals.tool_calls += 1
        totals.tool_errors += event.is_error
        totals.dedup_hits += event.dedup_of is not None

    def _tool_span(
        self,
        call_id: str,
        name: str,
        start: int,
        end: int,
        *,
        error: str | None,
        result: ToolResult | None = None,
    ) -> None:
        attributes: Attributes = {
            OPERATION: "execute_tool",
            TOOL_NAME: name,
            TOOL_CALL_ID: call_id,
            TOOL_TYPE: "function",
            TOOL_DESCRIPTION: self._info.descriptions.get(name),
            "tiered_agent.tool.read_only": name in self._info.read_only,
            **(_tool_result_attributes(result) if result else {}),
        }
        output = self._results.pop(call_id, None)
        call = self._calls.get(call_id)
        if self._limit and call is not None:
            attributes[TOOL_ARGUMENTS] = tool_arguments(call, self._limit)
        if self._limit and output is not None and error is None:
            attributes[TOOL_RESULT] = redacted_text(output, self._limit)
        span = self._tracer.start_span(
            f"execute_tool {name}",
            context=self._run_context,
            kind=SpanKind.INTERNAL,
            attributes=_clean(attributes),
            start_time=start,
        )
        if error is not None:
            _fail(span, error)
        span.end(end_time=end)

    # ------------------------------------------------------------------ context pipeline
    def _summary(self, event: SummaryEvent) -> None:
        totals = self._totals
        totals.summaries += 1
        totals.summary_input_tokens += event.input_tokens
        totals.summary_output_tokens += event.output_tokens
        if self._run is None:
            return
        attributes: Attributes = {
            "tiered_agent.summary.first_iteration": event.first_iteration,
            "tiered_agent.summary.last_iteration": event.last_iteration,
            "tiered_agent.summary.model": event.model or "digest",
            "tiered_agent.summary.input_tokens": event.input_tokens,
            "tiered_agent.summary.output_tokens": event.output_tokens,
            "tiered_agent.summary.created_at_iteration": event.created_at_iteration,
        }
        if self._limit:
            attributes["tiered_agent.summary.text"] = redacted_text(event.text, self._limit)
        self._run.add_event("tiered_agent.summary", _clean(attributes))

    def _retrieval(self, event: RetrievalEvent) -> None:
        self._totals.retrievals += 1
        if self._run is None:
            return
        filters = {k: v for k, v in event.filters.items() if self._limit or k != "topic"}  # topic: content
        attributes: Attributes = {
            "tiered_agent.iteration": event.iteration,
            "tiered_agent.retrieval.filters": str(redact(_json(filters))),
            "tiered_agent.retrieval.matched": event.matched,
            "tiered_agent.retrieval.page": event.page,
            "tiered_agent.retrieval.pages": event.pages,
        }
        self._run.add_event("tiered_agent.retrieval", _clean(attributes))


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _descriptions(tools: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for schema in tools:
        function = schema.get("function") or {}
        if function.get("name") and function.get("description"):
            out[str(function["name"])] = str(function["description"])
    return out


def _request_attributes(event: ModelRequest) -> Attributes:
    """The prompt's size against the full history, and what the context pipeline hid to get there."""
    context = event.context
    summary = context.get("summary_range") or (None, None)
    windowed = [int(i) for i in context.get("windowed_out") or ()]
    return {
        "tiered_agent.iteration": event.iteration,
        "tiered_agent.prompt.messages": event.n_messages,
        "tiered_agent.prompt.tokens": event.prompt_tokens_local,
        "tiered_agent.prompt.estimated_tokens": event.estimated_prompt_tokens,
        "tiered_agent.prompt.full_history_tokens": event.counterfactual_tokens,
        "tiered_agent.prompt.saved_tokens": event.counterfactual_tokens - event.prompt_tokens_local,
        "tiered_agent.context.truncated_outputs": context.get("truncated_outputs"),
        "tiered_agent.context.truncated_chars": context.get("truncated_chars"),
        "tiered_agent.context.truncated_tokens": context.get("truncated_tokens"),
        "tiered_agent.context.truncated_call_ids": [
            str(t.get("tool_call_id")) for t in context.get("truncations") or ()
        ],
        "tiered_agent.context.masked_outputs": context.get("masked_outputs"),
        "tiered_agent.context.masked_chars": context.get("masked_chars"),
        "tiered_agent.context.windowed_out": len(windowed),
        "tiered_agent.context.windowed_out_iterations": windowed,
        "tiered_agent.context.summary.first_iteration": summary[0],
        "tiered_agent.context.summary.last_iteration": summary[1],
        "tiered_agent.context.compacted": context.get("compacted"),
        "tiered_agent.dedup.hits": context.get("dedup_hits"),  # so far in the run
    }


def _response_attributes(event: ModelResponse) -> Attributes:
    usage = event.usage
    return {
        RESPONSE_MODEL: event.model or None,
        FINISH_REASONS: [event.finish_reason] if event.finish_reason else None,
        INPUT_TOKENS: usage.prompt_tokens,
        OUTPUT_TOKENS: usage.completion_tokens,
        CACHE_READ_TOKENS: usage.cached_tokens,
        CACHE_WRITE_TOKENS: usage.cache_write_tokens,
        "tiered_agent.model.attempts": event.attempts,
        "tiered_agent.usage.cost": usage.cost,
    }


def _tool_result_attributes(event: ToolResult) -> Attributes:
    return {
        "tiered_agent.iteration": event.iteration,
        "tiered_agent.tool.output_chars": event.output_chars,
        "tiered_agent.tool.dedup_of": event.dedup_of,
    }


_HANDLERS: dict[type[Any], Callable[[RunSpans, Any], None]] = {
    RunStarted: RunSpans._run_start,
    MessageEvent: RunSpans._message,
    ModelRequest: RunSpans._model_request,
    ModelResponse: RunSpans._model_response,
    ToolResult: RunSpans._tool_result,
    ErrorEvent: RunSpans._error,
    SummaryEvent: RunSpans._summary,
    RetrievalEvent: RunSpans._retrieval,
    RunEnded: RunSpans._run_end,
}
