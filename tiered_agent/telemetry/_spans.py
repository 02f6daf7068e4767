"""OpenTelemetry spans derived from one run's typed events (an observer: the loop holds no telemetry code).

Span names, kinds and attributes follow the GenAI semantic conventions (version and names in
``_attributes``):

* ``invoke_agent {agent name}`` (INTERNAL, the agent runs in process): one per run, the parent;
  current while the run lasts, so spans of other instrumentation (and the application's own, in
  tools) join the trace, and a span current when the run starts becomes its parent.
* ``chat {model}`` (CLIENT): one per model call, from its ``model_request`` to its
  ``model_response`` (retries included); current during the call.
* ``execute_tool {tool name}`` (INTERNAL): one per tool call, with the call's own start and
  duration, so concurrent calls overlap as they ran. The run opens it in the task that runs the
  tool (:meth:`RunSpans.tool_scope`) and it is current there, so spans the tool starts (an MCP
  request, an instrumented HTTP call) are its children; each concurrent call sees its own. A call
  served from the dedup cache gets a zero-length span; calls left unanswered when a run stops end
  with an error at the run's end.

Failures set status ERROR and ``error.type``; summaries, retrievals and errors outside a model
call are events on the run span. Content (opt-in) goes through ``_content`` (redacted).
Where a ``chat`` span ends, the call's metrics are recorded too (``_metrics``, when a
MeterProvider is configured): one observer of the events for both signals.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import structlog
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from .._messages import Message, ToolCall
from .._trace import (
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
from ._attributes import (
    AGENT_NAME,
    ERROR_TYPE,
    INPUT_MESSAGES,
    OPERATION,
    OTHER,
    OUTPUT_MESSAGES,
    TOOL_ARGUMENTS,
    TOOL_RESULT,
    Attributes,
    RunInfo,
    Totals,
    clean,
    request_attributes,
    response_attributes,
    retrieval_attributes,
    run_end_attributes,
    run_info,
    run_start_attributes,
    summary_attributes,
    tool_attributes,
    tool_result_attributes,
)
from ._content import input_messages, output_messages, redacted_text, tool_arguments

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

    from ._metrics import RunMetrics

__all__ = ["RunSpans"]

log = structlog.get_logger(__name__)


def _ns(seconds: float) -> int:
    return round(seconds * 1_000_000_000)


def _fail(span: Span, error_type: str, description: str | None = None) -> None:
    span.set_attribute(ERROR_TYPE, error_type or OTHER)
    span.set_status(Status(StatusCode.ERROR, str(redact(description)) if description else None))


@dataclass
class _Chat:
    span: Span
    token: object  # from context.attach
    request: ModelRequest
    started: float  # time.perf_counter(), for the duration metric
    output: Message | None = None


class RunSpans:
    """The observer of one run: call it with each event, in order (``Telemetry.start_run`` makes one)."""

    def __init__(
        self, tracer: Tracer, agent_name: str, content_limit: int = 0, metrics: RunMetrics | None = None
    ) -> None:
        """``content_limit``: the longest captured text (prompts, outputs); 0 captures no content."""
        self._tracer = tracer
        self._metrics = metrics
        self._agent_name = agent_name
        self._limit = content_limit
        self._info = RunInfo()
        self._totals = Totals()
        self._run: Span | None = None
        self._run_context: Context | None = None
        self._run_token: object | None = None
        self._chat: _Chat | None = None
        self._calls: dict[str, ToolCall] = {}
        self._pending: dict[str, tuple[ToolCall, int]] = {}  # requested, unanswered: call, request time
        self._running: dict[str, Span] = {}  # execute_tool spans opened by tool_scope, awaiting their result
        self._results: dict[str, str] = {}  # tool outputs awaiting their span (content capture only)
        self._warned = False
        self._ended = False  # the run span has ended (run_end, or a failure before run_start)

    def __call__(self, event: Event) -> None:
        handler = _HANDLERS.get(type(event))
        if handler is None:
            return
        try:
            handler(self, event)
        except Exception:  # telemetry must not break the run it observes; said once per run
            self._warn_once(event.type)

    @contextmanager
    def tool_scope(self, call: ToolCall, started_at: float) -> Iterator[None]:
        """Open ``call``'s ``execute_tool`` span and make it current until the block ends.

        Enter it in the task that runs the tool (attach and detach happen in that task's copy of
        the context). The span ends with the call's ``tool_result`` event, at its recorded time.
        """
        token = None
        try:
            span = self._start_tool_span(call.id, call.name, _ns(started_at), call)
            self._running[call.id] = span
            token = otel_context.attach(trace.set_span_in_context(span))
        except Exception:
            self._warn_once("tool_scope")
        try:
            yield
        finally:
            if token is not None:
                otel_context.detach(token)

    @contextmanager
    def run_scope(self) -> Iterator[None]:
        """Open the run's ``invoke_agent`` span as the run begins and make it current until the block
        ends, so what the run starts before its ``run_start`` (its MCP servers, whose SDK traces
        each request) nests under it. A run that fails before ``run_start`` ends the span with its
        error; otherwise ``run_end`` ends it."""
        token = None
        try:
            attributes: Attributes = {OPERATION: "invoke_agent", AGENT_NAME: self._agent_name}
            self._run = self._tracer.start_span(
                f"invoke_agent {self._agent_name}", kind=SpanKind.INTERNAL, attributes=attributes
            )
            self._run_context = trace.set_span_in_context(self._run)
            token = otel_context.attach(self._run_context)
        except Exception:
            self._warn_once("run_scope")
        try:
            yield
        except BaseException as exc:
            self._abandon(exc)
            raise
        finally:
            if token is not None:
                otel_context.detach(token)

    def _abandon(self, exc: BaseException) -> None:
        """End the run span of a run that never got to ``run_end`` with the error that stopped it."""
        if self._run is None or self._ended:
            return
        try:
            self._ended = True
            cancelled = isinstance(exc, anyio.get_cancelled_exc_class() | KeyboardInterrupt)
            _fail(self._run, "cancelled" if cancelled else type(exc).__name__, str(exc) or None)
            self._run.end()
        except Exception:
            self._warn_once("run_scope")

    def _warn_once(self, what: str) -> None:
        if not self._warned:
            self._warned = True
            log.warning("telemetry.event_failed", event=what, exc_info=True)

    # ------------------------------------------------------------------ run
    def _run_start(self, event: RunStarted) -> None:
        self._info = run_info(event)
        attributes = run_start_attributes(event, self._info, self._agent_name)
        if self._limit:
            attributes[INPUT_MESSAGES] = input_messages([Message("user", event.task)], self._limit)
        if self._run is not None:  # opened by run_scope
            self._run.set_attributes(clean(attributes))
            return
        self._run = self._tracer.start_span(
            f"invoke_agent {self._agent_name}",
            kind=SpanKind.INTERNAL,
            attributes=clean(attributes),
            start_time=_ns(event.started_at) if event.started_at else None,
        )
        self._run_context = trace.set_span_in_context(self._run)
        self._run_token = otel_context.attach(self._run_context)

    def _run_end(self, event: RunEnded) -> None:
        try:
            now = time.time_ns()
            if self._chat is not None:
                self._end_chat(event.stop_reason, event.error)
            for call, requested in self._pending.values():
                self._end_tool(call.id, call.name, requested, now, error=event.stop_reason)
            for call_id in list(self._running):  # opened for a call the reply did not hold
                self._end_tool(call_id, "", now, now, error=event.stop_reason)
            self._pending.clear()
            if self._run is not None and not self._ended:
                self._ended = True
                self._end_run(event, now)
        finally:
            if self._run_token is not None:
                otel_context.detach(self._run_token)  # type: ignore[arg-type]
                self._run_token = None

    def _end_run(self, event: RunEnded, now: int) -> None:
        assert self._run is not None
        self._run.set_attributes(clean(run_end_attributes(event, self._totals)))
        if self._limit and event.output is not None:
            answer = Message("assistant", event.output)
            self._run.set_attribute(OUTPUT_MESSAGES, output_messages(answer, "stop", self._limit))
        if event.stop_reason != "answered":
            _fail(self._run, event.stop_reason, event.error)
        self._run.end(end_time=now)

    # ------------------------------------------------------------------ model calls
    def _model_request(self, event: ModelRequest) -> None:
        if self._chat is not None:  # a request whose call never reported back
            self._end_chat(OTHER, "no response recorded")
        attributes: Attributes = {**self._info.common("chat"), **request_attributes(event)}
        if self._limit:
            attributes[INPUT_MESSAGES] = input_messages(event.prompt, self._limit)
        span = self._tracer.start_span(
            f"chat {self._info.model}",
            context=self._run_context,
            kind=SpanKind.CLIENT,
            attributes=clean(attributes),
        )
        token = otel_context.attach(trace.set_span_in_context(span))
        self._chat = _Chat(span, token, event, time.perf_counter())

    def _model_response(self, event: ModelResponse) -> None:
        chat, self._chat = self._chat, None
        if chat is None:
            return
        try:
            chat.span.set_attributes(clean(response_attributes(event)))
            if self._limit:
                output = output_messages(chat.output, event.finish_reason, self._limit)
                chat.span.set_attribute(OUTPUT_MESSAGES, output)
            chat.span.end()
        finally:
            otel_context.detach(chat.token)  # type: ignore[arg-type]
        if self._metrics is not None:
            seconds = time.perf_counter() - chat.started
            self._metrics.call_answered(self._info, seconds, chat.request, event)
        self._totals.response_model = event.model or self._totals.response_model
        requested = time.time_ns()
        for call in chat.output.tool_calls if chat.output else ():
            self._pending[call.id] = (call, requested)

    def _end_chat(self, error_type: str, description: str | None) -> None:
        chat, self._chat = self._chat, None
        if chat is None:
            return
        try:
            _fail(chat.span, error_type, description)
            chat.span.end()
        finally:
            otel_context.detach(chat.token)  # type: ignore[arg-type]
        if self._metrics is not None:
            seconds = time.perf_counter() - chat.started
            self._metrics.call_failed(self._info, seconds, error_type or OTHER)

    def _error(self, event: ErrorEvent) -> None:
        if self._chat is not None:
            self._end_chat(event.kind, event.message)
        elif self._run is not None:
            attributes: Attributes = {
                ERROR_TYPE: event.kind,
                "tiered_agent.iteration": event.iteration,
                "tiered_agent.error.message": str(redact(event.message)),
            }
            self._run.add_event("tiered_agent.error", clean(attributes))

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
        self._end_tool(event.tool_call_id, event.name, start, end, error=error, result=event)
        totals = self._totals
        totals.tool_calls += 1
        totals.tool_errors += event.is_error
        totals.dedup_hits += event.dedup_of is not None

    def _start_tool_span(self, call_id: str, name: str, start: int, call: ToolCall | None = None) -> Span:
        attributes = tool_attributes(call_id, name, self._info)
        call = call or self._calls.get(call_id)
        if self._limit and call is not None:
            attributes[TOOL_ARGUMENTS] = tool_arguments(call, self._limit)
        return self._tracer.start_span(
            f"execute_tool {name}",
            context=self._run_context,
            kind=SpanKind.INTERNAL,
            attributes=clean(attributes),
            start_time=start,
        )

    def _end_tool(
        self,
        call_id: str,
        name: str,
        start: int,
        end: int,
        *,
        error: str | None,
        result: ToolResult | None = None,
    ) -> None:
        """End the call's span (the one its tool_scope opened, else a new one from ``start``)."""
        span = self._running.pop(call_id, None) or self._start_tool_span(call_id, name, start)
        if result is not None:
            span.set_attributes(clean(tool_result_attributes(result)))
        output = self._results.pop(call_id, None)
        if self._limit and output is not None and error is None:
            span.set_attribute(TOOL_RESULT, redacted_text(output, self._limit))
        if error is not None:
            _fail(span, error)
        span.end(end_time=end)

    # ------------------------------------------------------------------ context pipeline
    def _summary(self, event: SummaryEvent) -> None:
        totals = self._totals
        totals.summaries += 1
        totals.summary_input_tokens += event.input_tokens
        totals.summary_output_tokens += event.output_tokens
        if self._metrics is not None:
            self._metrics.summary_written(event)
        if self._run is None:
            return
        attributes = summary_attributes(event)
        if self._limit:
            attributes["tiered_agent.summary.text"] = redacted_text(event.text, self._limit)
        self._run.add_event("tiered_agent.summary", clean(attributes))

    def _retrieval(self, event: RetrievalEvent) -> None:
        self._totals.retrievals += 1
        if self._run is None:
            return
        # the topic is the model's own words: content
        filters = {k: redact(v) for k, v in event.filters.items() if self._limit or k != "topic"}
        self._run.add_event("tiered_agent.retrieval", clean(retrieval_attributes(event, filters)))


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
