"""OpenTelemetry metrics from a run's events (in-memory reader): the GenAI client metrics' names,
units, attributes, bucket boundaries and exact sums, the prompt counters, errors, and where metrics
go (a given MeterProvider, the application's global one, the environment, the CLI's pipeline)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import metrics, trace
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.metrics._internal import _ProxyMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    InMemoryMetricReader,
    Metric,
    NumberDataPoint,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tiered_agent import Agent, ContextConfig, Message, Telemetry, Usage, tool
from tiered_agent._errors import ConfigurationError, ContextWindowExceeded, ModelError
from tiered_agent._trace import RunEnded, RunStarted, SummaryEvent
from tiered_agent.telemetry import run_observer
from tiered_agent.telemetry._environment import CAPTURE_CONTENT_ENV
from tiered_agent.telemetry._export import build_meter_provider
from tiered_agent.telemetry._pipelines import cli_telemetry
from tiered_agent.testing import AgentRequest, FunctionModel, calls, text

pytestmark = pytest.mark.anyio

TOKEN_USAGE = "gen_ai.client.token.usage"
DURATION = "gen_ai.client.operation.duration"
PROMPT = "tiered_agent.prompt.tokens"
FULL = "tiered_agent.prompt.full_history_tokens"
# the conventions' (v1.41) ExplicitBucketBoundaries, written out rather than imported
TOKEN_BOUNDS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
DURATION_BOUNDS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
CHAT = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "function-model",
    "gen_ai.request.model": "gpt-4o",
}
OTEL_ENVS = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    "OTEL_SDK_DISABLED",
    CAPTURE_CONTENT_ENV,
)


@tool(read_only=True)
def read_big(name: str) -> str:
    """Return a big text.

    Args:
        name: Which text.
    """
    return "".join(f"line {i:04d} of the big file\n" for i in range(400))


@dataclass
class FixedUsageModel(FunctionModel):
    """FunctionModel whose n-th reply reports ``usages[n]`` (input, output) as its provider usage."""

    usages: Sequence[tuple[int, int]] = ()

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        reply = await super().complete(messages, tools)
        prompt, completion = self.usages[len(self.requests) - 1]
        return replace(reply, usage=Usage(prompt_tokens=prompt, completion_tokens=completion, requests=1))


@pytest.fixture(autouse=True)
def _clean_otel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OTEL_ENVS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def meter() -> Iterator[tuple[MeterProvider, InMemoryMetricReader]]:
    reader = InMemoryMetricReader()
    provider = MeterProvider([reader], shutdown_on_exit=False)
    yield provider, reader
    provider.shutdown()


@pytest.fixture
def spans() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def collect(reader: InMemoryMetricReader) -> dict[str, Metric]:
    data = reader.get_metrics_data()
    found = {
        m.name: m
        for rm in (data.resource_metrics if data else ())
        for sm in rm.scope_metrics
        if sm.scope.name == "tiered_agent"
        for m in sm.metrics
    }
    return found


def histogram(metric: Metric) -> list[HistogramDataPoint]:
    return [p for p in metric.data.data_points if isinstance(p, HistogramDataPoint)]


def sums(metric: Metric) -> list[NumberDataPoint]:
    return [p for p in metric.data.data_points if isinstance(p, NumberDataPoint)]


def point(points: Sequence[Any], **match: str) -> Any:
    [found] = [p for p in points if all(dict(p.attributes or {}).get(k) == v for k, v in match.items())]
    return found


def make_agent(
    tmp_path: Path, model: FunctionModel, telemetry: Telemetry | bool | None, **kwargs: Any
) -> Agent:
    kwargs.setdefault("tools", [read_big])
    kwargs.setdefault("context", ContextConfig(name="500-chars"))
    return Agent(model, trace_dir=tmp_path, telemetry=telemetry, **kwargs)


# ---------------------------------------------------------------- a scripted run
async def test_token_usage_and_duration_follow_the_genai_conventions(
    tmp_path: Path,
    meter: tuple[MeterProvider, InMemoryMetricReader],
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    meter_provider, reader = meter
    tracer_provider, exporter = spans
    model = FixedUsageModel.scripted(
        [calls(("c1", "read_big", {"name": "x"})), text("done")], usages=[(900, 30), (1000, 12)]
    )
    telemetry = Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)
    result = await make_agent(tmp_path, model, telemetry).run("read it")
    assert result.output == "done" and result.usage.prompt_tokens == 1900
    found = collect(reader)
    assert set(found) == {TOKEN_USAGE, DURATION, PROMPT, FULL}

    usage = found[TOKEN_USAGE]
    assert usage.unit == "{token}" and usage.description == "Number of input and output tokens used."
    points = histogram(usage)
    assert sorted(dict(p.attributes or {})["gen_ai.token.type"] for p in points) == ["input", "output"]
    answered = {**CHAT, "gen_ai.response.model": "function-model/gpt-4o"}
    for p in points:
        assert dict(p.attributes or {}) == {
            **answered,
            "gen_ai.token.type": p.attributes["gen_ai.token.type"],
        }
        assert tuple(p.explicit_bounds) == TOKEN_BOUNDS
    inputs = point(points, **{"gen_ai.token.type": "input"})
    outputs = point(points, **{"gen_ai.token.type": "output"})
    assert (inputs.count, inputs.sum, inputs.min, inputs.max) == (2, 1900, 900, 1000)
    assert (outputs.count, outputs.sum, outputs.min, outputs.max) == (2, 42, 12, 30)
    assert list(inputs.bucket_counts) == [0, 0, 0, 0, 0, 2, *[0] * 9]  # both in (256, 1024]
    assert list(outputs.bucket_counts) == [0, 0, 1, 1, *[0] * 11]  # 12 in (4, 16], 30 in (16, 64]

    duration = found[DURATION]
    assert duration.unit == "s" and duration.description == "GenAI operation duration."
    [calls_point] = histogram(duration)
    assert dict(calls_point.attributes or {}) == answered  # no error.type: both calls answered
    assert calls_point.count == 2 and tuple(calls_point.explicit_bounds) == DURATION_BOUNDS
    assert calls_point.sum >= 0

    # the chat spans report the same usage as the metrics
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
    assert sum(int((s.attributes or {})["gen_ai.usage.input_tokens"]) for s in chats) == inputs.sum

    # the prompt counters: what was sent and what the full history would have cost (local counts)
    counted = {"gen_ai.provider.name": "function-model", "gen_ai.request.model": "gpt-4o"}
    counted["tiered_agent.context.policy"] = "500-chars"
    [sent] = sums(found[PROMPT])
    [full] = sums(found[FULL])
    assert found[PROMPT].unit == found[FULL].unit == "{token}"
    assert found[PROMPT].data.is_monotonic and found[FULL].data.is_monotonic
    assert dict(sent.attributes or {}) == dict(full.attributes or {}) == counted
    assert (sent.value, full.value) == (result.prompt_tokens_local, result.counterfactual_tokens)
    saved = result.counterfactual_tokens - result.prompt_tokens_local
    assert full.value - sent.value == saved > 1_000  # the 10 kB output was truncated in the second prompt


async def test_usage_sums_match_the_run_with_the_models_own_counts(
    tmp_path: Path, meter: tuple[MeterProvider, InMemoryMetricReader]
) -> None:
    meter_provider, reader = meter
    model = FunctionModel.scripted([calls(("c1", "read_big", {"name": "x"})), text("done")])
    result = await make_agent(tmp_path, model, Telemetry(meter_provider=meter_provider)).run("read it")
    points = histogram(collect(reader)[TOKEN_USAGE])
    assert point(points, **{"gen_ai.token.type": "input"}).sum == result.usage.prompt_tokens > 0
    assert point(points, **{"gen_ai.token.type": "output"}).sum == result.usage.completion_tokens > 0


async def test_a_failing_model_call_records_its_duration_with_error_type(
    tmp_path: Path, meter: tuple[MeterProvider, InMemoryMetricReader]
) -> None:
    meter_provider, reader = meter

    async def fail(request: AgentRequest) -> Message:
        raise ModelError("provider is down after 4 attempts")

    result = await make_agent(tmp_path, FunctionModel(fail), Telemetry(meter_provider=meter_provider)).run(
        "x"
    )
    assert result.stop_reason.value == "error"
    found = collect(reader)
    assert set(found) == {DURATION}  # no usage was reported and no prompt was answered
    [failed] = histogram(found[DURATION])
    assert dict(failed.attributes or {}) == {**CHAT, "error.type": "ModelError"}
    assert failed.count == 1 and tuple(failed.explicit_bounds) == DURATION_BOUNDS


async def test_a_call_retried_after_a_context_window_error_records_both_calls(
    tmp_path: Path, meter: tuple[MeterProvider, InMemoryMetricReader]
) -> None:
    meter_provider, reader = meter

    def reply(request: AgentRequest) -> Message:
        if request.index == 0:
            raise ContextWindowExceeded("prompt too long")
        return text("done")

    model = FixedUsageModel(reply, usages=[(0, 0), (700, 5)])
    result = await make_agent(tmp_path, model, Telemetry(meter_provider=meter_provider)).run("x")
    assert result.output == "done"
    found = collect(reader)
    durations = histogram(found[DURATION])
    assert point(durations, **{"error.type": "ContextWindowExceeded"}).count == 1
    answered = point(durations, **{"gen_ai.response.model": "function-model/gpt-4o"})
    assert answered.count == 1 and "error.type" not in dict(answered.attributes or {})
    tokens = histogram(found[TOKEN_USAGE])
    assert [(p.attributes["gen_ai.token.type"], p.sum) for p in tokens] == [("input", 700), ("output", 5)]
    [sent] = sums(found[PROMPT])
    assert sent.value == result.prompt_tokens_local  # only the prompt that was answered


def test_summaries_written_by_a_model_count_their_tokens_and_the_digest_none(
    meter: tuple[MeterProvider, InMemoryMetricReader],
) -> None:
    meter_provider, reader = meter
    observer = Telemetry(tracer_provider=TracerProvider(), meter_provider=meter_provider).start_run()
    observer(RunStarted("r1", "anthropic/claude-sonnet-4-5", "task", config={"context": {"name": "tiered"}}))
    observer(SummaryEvent(1, 4, "what happened", model="anthropic/claude-haiku-4-5", input_tokens=5_000))
    observer(
        SummaryEvent(5, 8, "more", model="anthropic/claude-haiku-4-5", input_tokens=70_000, output_tokens=9)
    )
    observer(SummaryEvent(9, 12, "the digest's text"))  # deterministic: no model call, no tokens
    observer(RunEnded("answered", "ok", 12, Usage()))
    points = histogram(collect(reader)[TOKEN_USAGE])
    summary = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-haiku-4-5",
    }
    assert {frozenset(dict(p.attributes or {}).items()) for p in points} == {
        frozenset({**summary, "gen_ai.token.type": "input"}.items()),
        frozenset({**summary, "gen_ai.token.type": "output"}.items()),
    }
    inputs = point(points, **{"gen_ai.token.type": "input"})
    assert (inputs.count, inputs.sum) == (2, 75_000)
    assert list(inputs.bucket_counts) == [
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        1,
        0,
        1,
        *[0] * 5,
    ]  # (4096, 16384], (65536, 262144]
    assert point(points, **{"gen_ai.token.type": "output"}).sum == 9


# ---------------------------------------------------------------- where metrics go
def test_without_a_meter_provider_a_run_records_no_metrics(
    monkeypatch: pytest.MonkeyPatch, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    tracer_provider, _ = spans
    assert isinstance(metrics.get_meter_provider(), _ProxyMeterProvider)  # none installed
    assert Telemetry(tracer_provider=tracer_provider).meter() is None
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:9")  # spans only
    assert Telemetry(tracer_provider=tracer_provider).meter() is None
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    assert Telemetry(tracer_provider=tracer_provider).meter() is None
    assert Telemetry(meter_provider=NoOpMeterProvider()).meter() is not None  # how Python turns them off


async def test_an_applications_global_meter_provider_is_used_by_default(
    tmp_path: Path, meter: tuple[MeterProvider, InMemoryMetricReader], monkeypatch: pytest.MonkeyPatch
) -> None:
    meter_provider, reader = meter
    assert run_observer(None) is None
    monkeypatch.setattr("opentelemetry.metrics._internal._METER_PROVIDER", meter_provider)
    assert run_observer(None) is not None  # a MeterProvider alone switches telemetry on
    await make_agent(tmp_path, FunctionModel.scripted([text("done")]), None).run("x")
    [durations] = histogram(collect(reader)[DURATION])
    assert durations.count == 1
    await make_agent(tmp_path, FunctionModel.scripted([text("done")]), False).run("x")
    [durations] = histogram(collect(reader)[DURATION])
    assert durations.count == 1  # telemetry=False: nothing recorded


def test_metric_exporter_settings_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "prometheus")
    with pytest.raises(ConfigurationError, match="OTEL_METRICS_EXPORTER=prometheus is not supported"):
        build_meter_provider()
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc")
    with pytest.raises(ConfigurationError, match="http/protobuf"):
        build_meter_provider()


def test_cli_pipelines_follow_the_flag_the_endpoints_and_the_exporters(
    monkeypatch: pytest.MonkeyPatch, meter: tuple[MeterProvider, InMemoryMetricReader]
) -> None:
    installed: list[object] = []
    monkeypatch.setattr(
        trace, "set_tracer_provider", installed.append
    )  # the process's globals stay as they are
    monkeypatch.setattr(metrics, "set_meter_provider", installed.append)
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "console")
    assert cli_telemetry(False) is None

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://127.0.0.1:9/v1/metrics")
    exporting = cli_telemetry(False)
    assert exporting is not None and exporting.traces is None and exporting.metrics is not None
    assert isinstance(exporting.metrics.provider, MeterProvider) and exporting.metrics.owned
    assert exporting.telemetry.meter_provider is exporting.metrics.provider and installed == [
        exporting.metrics.provider
    ]
    exporting.shutdown()

    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    exporting = cli_telemetry(True)
    assert exporting is not None and exporting.traces is not None and exporting.metrics is None
    exporting.shutdown()

    meter_provider, reader = meter  # an application's own provider: flushed, never shut down
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp")
    monkeypatch.setattr("opentelemetry.metrics._internal._METER_PROVIDER", meter_provider)
    exporting = cli_telemetry(True)
    assert exporting is not None and exporting.metrics is not None
    assert exporting.metrics.provider is meter_provider and not exporting.metrics.owned
    exporting.shutdown()
    meter_provider.get_meter("still-open").create_counter("c").add(1)
    data = reader.get_metrics_data()  # a shut-down provider would collect nothing
    assert data is not None
    assert [m.name for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics] == ["c"]


CONSOLE_RUN = """
import tempfile, anyio
from tiered_agent import Agent
from tiered_agent.testing import FunctionModel, text
agent = Agent(FunctionModel.scripted([text("ok")]), trace_dir=tempfile.mkdtemp())
assert anyio.run(agent.run, "x").output == "ok"
"""


def test_a_metrics_endpoint_alone_exports_metrics_and_no_spans_from_a_library_run() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env |= {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://127.0.0.1:9", "OTEL_METRICS_EXPORTER": "console"}
    proc = subprocess.run(
        [sys.executable, "-c", CONSOLE_RUN], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    # the environment's provider is flushed at interpreter exit, to stderr
    assert '"name": "gen_ai.client.token.usage"' in proc.stderr
    assert '"name": "gen_ai.client.operation.duration"' in proc.stderr
    assert '"gen_ai.token.type": "output"' in proc.stderr and "invoke_agent" not in proc.stderr
