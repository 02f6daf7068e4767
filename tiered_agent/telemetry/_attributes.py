"""Span attributes from run events: the GenAI conventions' names and this project's ``tiered_agent.*``.

Conventions: the OpenTelemetry GenAI semantic conventions as released in semantic-conventions
v1.41.0 (``docs/gen-ai/gen-ai-agent-spans.md`` and ``gen-ai-spans.md``, status Development), the
last release before they moved to ``open-telemetry/semantic-conventions-genai``, whose v0.1.0
keeps every name used here. As a new instrumentation we emit that version directly (no
``OTEL_SEMCONV_STABILITY_OPT_IN`` transition). Plain values only: no OpenTelemetry import here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata
from typing import TYPE_CHECKING, Any

import orjson

from .._messages import Usage
from .._trace import (
    AgingRecord,
    ContextRecord,
    ModelRequest,
    ModelResponse,
    RetrievalEvent,
    RunEnded,
    RunStarted,
    SummaryEvent,
    ToolResult,
)

if TYPE_CHECKING:
    from opentelemetry.util.types import AttributeValue

__all__ = [
    "SCHEMA_URL",
    "Attributes",
    "RunInfo",
    "Totals",
    "clean",
    "package_version",
    "request_attributes",
    "response_attributes",
    "retrieval_attributes",
    "run_end_attributes",
    "run_info",
    "run_start_attributes",
    "split_model",
    "summary_attributes",
    "tool_attributes",
    "tool_result_attributes",
]

SCHEMA_URL = "https://opentelemetry.io/schemas/1.41.0"


@lru_cache(maxsize=1)
def package_version() -> str | None:
    """This package's installed version, the instrumentation scope's version (None: not installed)."""
    try:
        return metadata.version("tiered-agent")
    except metadata.PackageNotFoundError:
        return None


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


def clean(attributes: Mapping[str, AttributeValue | None]) -> dict[str, AttributeValue]:
    """Without the unknown (None) values, which OpenTelemetry rejects."""
    return {k: v for k, v in attributes.items() if v is not None}


@dataclass(frozen=True, slots=True)
class RunInfo:
    """What the run_start event says that every later span needs."""

    provider: str = OTHER
    model: str = ""
    conversation_id: str = ""
    descriptions: dict[str, str] = field(default_factory=dict)
    read_only: frozenset[str] = frozenset()
    policy: str | None = None  # the context policy's name

    def common(self, operation: str) -> Attributes:
        return {
            OPERATION: operation,
            PROVIDER: self.provider,
            REQUEST_MODEL: self.model,
            CONVERSATION_ID: self.conversation_id,
        }


def run_info(event: RunStarted) -> RunInfo:
    provider, model = split_model(event.model)
    descriptions = {}
    for schema in event.tools:
        function = schema.get("function") or {}
        if function.get("name") and function.get("description"):
            descriptions[str(function["name"])] = str(function["description"])
    return RunInfo(
        provider=provider,
        model=model,
        conversation_id=event.conversation_id or event.run_id,
        descriptions=descriptions,
        read_only=frozenset(event.config.get("read_only_tools", ())),
        policy=(event.config.get("context") or {}).get("name"),
    )


@dataclass
class Totals:
    """What the run span reports at its end besides the run's own totals."""

    tool_calls: int = 0
    tool_errors: int = 0
    dedup_hits: int = 0
    summaries: int = 0
    summary_input_tokens: int = 0
    summary_output_tokens: int = 0
    retrievals: int = 0
    response_model: str | None = None


def run_start_attributes(event: RunStarted, info: RunInfo, agent_name: str) -> Attributes:
    return {
        **info.common("invoke_agent"),
        AGENT_NAME: agent_name,
        "tiered_agent.run.id": event.run_id,
        "tiered_agent.run.source": event.source,
        "tiered_agent.context.policy": info.policy,
        "tiered_agent.context.window": event.config.get("context_window"),
    }


def run_end_attributes(event: RunEnded, totals: Totals) -> Attributes:
    full, sent = event.counterfactual_tokens, event.prompt_tokens_local
    return {
        RESPONSE_MODEL: totals.response_model,
        **_usage(event.usage),
        "tiered_agent.usage.requests": event.usage.requests,
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


def request_attributes(event: ModelRequest) -> Attributes:
    """The prompt's size against the full history, and what the context pipeline hid to get there."""
    context = ContextRecord.from_dict(event.context)  # either record format, read defensively
    summary = context.summary_range or (None, None)
    windowed = list(context.windowed_out)
    return {
        "tiered_agent.iteration": event.iteration,
        "tiered_agent.prompt.messages": event.n_messages,
        "tiered_agent.prompt.tokens": event.prompt_tokens_local,
        "tiered_agent.prompt.estimated_tokens": event.estimated_prompt_tokens,
        "tiered_agent.prompt.full_history_tokens": event.counterfactual_tokens,
        "tiered_agent.prompt.saved_tokens": event.counterfactual_tokens - event.prompt_tokens_local,
        "tiered_agent.context.truncated_outputs": context.truncated_outputs,
        "tiered_agent.context.truncated_chars": context.truncated_chars,
        "tiered_agent.context.truncated_tokens": context.truncated_tokens,
        "tiered_agent.context.truncated_call_ids": [cut.tool_call_id for cut in context.cuts],
        "tiered_agent.context.masked_outputs": context.hidden_outputs,  # masked, elided or aged
        "tiered_agent.context.masked_chars": context.hidden_chars,
        "tiered_agent.context.windowed_out": len(windowed),
        "tiered_agent.context.windowed_out_iterations": windowed,
        "tiered_agent.context.summary.first_iteration": summary[0],
        "tiered_agent.context.summary.last_iteration": summary[1],
        "tiered_agent.context.compacted": context.compacted,
        "tiered_agent.dedup.hits": context.dedup_hits,  # so far in the run
        "tiered_agent.dedup.pointers": context.pointers or None,  # repeats shown as pointers
        "tiered_agent.dedup.pointer_chars": context.pointer_chars or None,
        **_aging(context.aging),
    }


def _aging(record: AgingRecord | None) -> Attributes:
    """How far the Age step aged and condensed iterations (policies with aging), and a new epoch."""
    if record is None:
        return {}
    return {
        "tiered_agent.context.aged_through": record.through,
        "tiered_agent.context.condensed_through": record.condensed,
        "tiered_agent.context.aging_epoch": record.epoch is not None,
    }


def response_attributes(event: ModelResponse) -> Attributes:
    return {
        RESPONSE_MODEL: event.model or None,
        FINISH_REASONS: [event.finish_reason] if event.finish_reason else None,
        **_usage(event.usage),
        "tiered_agent.model.attempts": event.attempts,
    }


def _usage(usage: Usage) -> Attributes:
    return {
        INPUT_TOKENS: usage.prompt_tokens,
        OUTPUT_TOKENS: usage.completion_tokens,
        CACHE_READ_TOKENS: usage.cached_tokens,
        CACHE_WRITE_TOKENS: usage.cache_write_tokens,
        "tiered_agent.usage.cost": usage.cost,
    }


def tool_attributes(call_id: str, name: str, info: RunInfo) -> Attributes:
    """What an ``execute_tool`` span knows when the call starts."""
    return {
        OPERATION: "execute_tool",
        TOOL_NAME: name,
        TOOL_CALL_ID: call_id,
        TOOL_TYPE: "function",
        TOOL_DESCRIPTION: info.descriptions.get(name),
        "tiered_agent.tool.read_only": name in info.read_only,
    }


def tool_result_attributes(result: ToolResult) -> Attributes:
    """What it learns from the call's result."""
    return {
        "tiered_agent.iteration": result.iteration,
        "tiered_agent.tool.output_chars": result.output_chars,
        "tiered_agent.tool.dedup_of": result.dedup_of,
    }


def summary_attributes(event: SummaryEvent) -> Attributes:
    return {
        "tiered_agent.summary.first_iteration": event.first_iteration,
        "tiered_agent.summary.last_iteration": event.last_iteration,
        "tiered_agent.summary.model": event.model or "digest",
        "tiered_agent.summary.input_tokens": event.input_tokens,
        "tiered_agent.summary.output_tokens": event.output_tokens,
        "tiered_agent.summary.created_at_iteration": event.created_at_iteration,
    }


def retrieval_attributes(event: RetrievalEvent, filters: Mapping[str, Any]) -> Attributes:
    return {
        "tiered_agent.iteration": event.iteration,
        "tiered_agent.retrieval.filters": orjson.dumps(filters, option=orjson.OPT_SORT_KEYS).decode(),
        "tiered_agent.retrieval.matched": event.matched,
        "tiered_agent.retrieval.page": event.page,
        "tiered_agent.retrieval.pages": event.pages,
    }
