"""OpenTelemetry metrics of runs: the GenAI client metrics and this project's prompt counters.

Recorded by ``_spans.RunSpans`` (the one observer of a run's events) where a model call's
``chat`` span ends, so a measurement and its span describe the same call:

* ``gen_ai.client.token.usage`` (histogram, ``{token}``): the input and output tokens the provider
  reported for each model call (``gen_ai.token.type`` ``input`` / ``output``; input counts every
  input token, cached ones included, as ``gen_ai.usage.input_tokens`` does), and for each summary an
  LLM summarizer wrote. Nothing is recorded for a reply without usage.
* ``gen_ai.client.operation.duration`` (histogram, ``s``): each model call from its request to its
  response, retries included; a call that failed carries ``error.type`` (the error's class name,
  ``cancelled``, or ``_OTHER``).
* ``tiered_agent.prompt.tokens`` and ``tiered_agent.prompt.full_history_tokens`` (counters,
  ``{token}``, local tokenizer): each answered call's prompt, and what the same prompt would have
  been with the full, unmanaged history. Their difference is what the context pipeline saved and
  ``1 - prompt / full_history`` the run's savings; two monotonic counters rather than one of
  savings, because a single prompt can be larger than the full history (it carries the
  ``context_retrieve`` schema and a summary, the full history neither).

The GenAI metrics carry ``gen_ai.operation.name`` (``chat``), ``gen_ai.provider.name``,
``gen_ai.request.model`` and ``gen_ai.response.model`` when known; the counters the provider,
the request model and ``tiered_agent.context.policy``. No ids: metric attributes stay
low-cardinality. Bucket boundaries are the conventions' (v1.41), given as advice, so an
application's View still wins. Plain values only: OpenTelemetry comes in through the meter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._attributes import (
    ERROR_TYPE,
    OPERATION,
    PROVIDER,
    REQUEST_MODEL,
    RESPONSE_MODEL,
    Attributes,
    RunInfo,
    clean,
    split_model,
)

if TYPE_CHECKING:
    from opentelemetry.metrics import Meter

    from .._trace import ModelRequest, ModelResponse, SummaryEvent

__all__ = [
    "DURATION_BUCKETS",
    "FULL_HISTORY_TOKENS",
    "OPERATION_DURATION",
    "PROMPT_TOKENS",
    "TOKEN_BUCKETS",
    "TOKEN_USAGE",
    "RunMetrics",
]

TOKEN_USAGE = "gen_ai.client.token.usage"
OPERATION_DURATION = "gen_ai.client.operation.duration"
PROMPT_TOKENS = "tiered_agent.prompt.tokens"
FULL_HISTORY_TOKENS = "tiered_agent.prompt.full_history_tokens"
TOKEN_TYPE = "gen_ai.token.type"
POLICY = "tiered_agent.context.policy"
# the conventions' ExplicitBucketBoundaries for the two GenAI client metrics
TOKEN_BUCKETS: tuple[float, ...] = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip
DURATION_BUCKETS: tuple[float, ...] = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip


class RunMetrics:
    """The instruments, and what each model call and summary records into them."""

    def __init__(self, meter: Meter) -> None:
        self._tokens = meter.create_histogram(
            TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )
        self._duration = meter.create_histogram(
            OPERATION_DURATION,
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self._prompt = meter.create_counter(
            PROMPT_TOKENS, unit="{token}", description="Prompt tokens sent (local count)."
        )
        self._full = meter.create_counter(
            FULL_HISTORY_TOKENS,
            unit="{token}",
            description="Prompt tokens the same calls would have sent with the full history (local count).",
        )

    def call_answered(
        self, info: RunInfo, seconds: float, request: ModelRequest, response: ModelResponse
    ) -> None:
        attributes = _chat(info.provider, info.model, response.model or None)
        self._duration.record(seconds, clean(attributes))
        self._usage(attributes, response.usage.prompt_tokens, response.usage.completion_tokens)
        counted = clean({PROVIDER: info.provider, REQUEST_MODEL: info.model, POLICY: info.policy})
        self._prompt.add(request.prompt_tokens_local, counted)
        self._full.add(request.counterfactual_tokens, counted)

    def call_failed(self, info: RunInfo, seconds: float, error_type: str) -> None:
        attributes = _chat(info.provider, info.model, None)
        self._duration.record(seconds, clean({**attributes, ERROR_TYPE: error_type}))

    def summary_written(self, event: SummaryEvent) -> None:
        """An LLM summarizer's call (its tokens; the deterministic digest calls no model)."""
        if event.model:
            provider, model = split_model(event.model)
            self._usage(_chat(provider, model, None), event.input_tokens, event.output_tokens)

    def _usage(self, attributes: Attributes, input_tokens: int, output_tokens: int) -> None:
        if input_tokens == output_tokens == 0:  # the provider reported no usage
            return
        self._tokens.record(input_tokens, clean({**attributes, TOKEN_TYPE: "input"}))
        self._tokens.record(output_tokens, clean({**attributes, TOKEN_TYPE: "output"}))


def _chat(provider: str, model: str, response_model: str | None) -> Attributes:
    return {OPERATION: "chat", PROVIDER: provider, REQUEST_MODEL: model, RESPONSE_MODEL: response_model}
