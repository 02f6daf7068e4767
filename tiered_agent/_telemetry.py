"""Whether and where a run sends OpenTelemetry spans and metrics. Imports nothing of OpenTelemetry itself.

Spans and metrics are derived from the run's typed events by one observer (``_otel_spans.RunSpans``,
which feeds ``_otel_metrics.RunMetrics``), so the loop holds no telemetry code besides a scope
around each tool call (:meth:`RunObserver.tool_scope`, so spans started inside a tool nest under
its ``execute_tool`` span). ``Agent(telemetry=...)`` decides, once per run:

* ``None`` (the default): on when OpenTelemetry is configured, off (zero cost, no import) otherwise.
  Configured means an application already installed a global ``TracerProvider`` or
  ``MeterProvider`` (checked only if it imported ``opentelemetry.trace`` / ``opentelemetry.metrics``
  itself), or an ``OTEL_EXPORTER_OTLP_*ENDPOINT`` variable is set (then that signal goes over
  OTLP/HTTP, the ``otel`` extra).
* ``True`` or a :class:`Telemetry`: on; ``False``: off.
"""

from __future__ import annotations

import os
import sys
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

import structlog

from ._errors import ConfigurationError

if TYPE_CHECKING:
    from opentelemetry.metrics import Meter, MeterProvider
    from opentelemetry.trace import Tracer, TracerProvider

    from ._messages import ToolCall
    from ._trace import Event

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "ENDPOINT_ENVS",
    "MISSING_EXTRA",
    "RunObserver",
    "Signal",
    "Telemetry",
    "endpoint_configured",
    "exporter_names",
    "global_provider_configured",
    "run_observer",
]

log = structlog.get_logger(__name__)

Signal = Literal["traces", "metrics"]
ENDPOINT_ENVS: dict[Signal, tuple[str, ...]] = {
    "traces": ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"),
    "metrics": ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"),
}
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"  # the GenAI conventions' opt-in
MISSING_EXTRA = 'OpenTelemetry export needs the otel extra: pip install "tiered-agent[otel]"'


class RunObserver(Protocol):
    """What a run calls: each of its events, in order, and a scope around each tool call it executes
    (entered and left in the task that runs the tool)."""

    def __call__(self, event: Event) -> None: ...

    def tool_scope(self, call: ToolCall, started_at: float) -> AbstractContextManager[None]: ...


@dataclass(frozen=True, slots=True)
class Telemetry:
    """OpenTelemetry spans for every run of an :class:`~tiered_agent.Agent` (GenAI conventions).

    ``tracer_provider``: where spans go; ``None`` uses the application's global provider, or,
    when none is installed and an ``OTEL_EXPORTER_OTLP_*ENDPOINT`` variable is set, an OTLP/HTTP
    exporter built from the standard ``OTEL_*`` variables. ``meter_provider``: where metrics go,
    chosen the same way (no provider installed and no endpoint set: no metrics; neither
    with ``OTEL_METRICS_EXPORTER=none``). ``capture_content``: record prompts,
    outputs, tool arguments and results (secrets redacted); ``None`` follows
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``. ``agent_name`` names the
    ``invoke_agent`` span; captured texts longer than ``max_content_chars`` are cut.
    """

    tracer_provider: TracerProvider | None = None
    capture_content: bool | None = None
    agent_name: str = "tiered-agent"
    max_content_chars: int = 20_000
    meter_provider: MeterProvider | None = None

    def __post_init__(self) -> None:
        if self.max_content_chars < 1:
            raise ConfigurationError("Telemetry.max_content_chars must be >= 1")

    def captures_content(self) -> bool:
        if self.capture_content is not None:
            return self.capture_content
        return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() == "true"

    def tracer(self) -> Tracer:
        """This package's tracer from the chosen provider (imports OpenTelemetry)."""
        try:
            from opentelemetry import trace
        except ImportError as exc:
            raise ConfigurationError(MISSING_EXTRA) from exc
        from ._otel_attributes import SCHEMA_URL
        from ._otel_spans import package_version

        provider = self.tracer_provider
        if provider is None and not global_provider_configured("traces") and endpoint_configured("traces"):
            from ._otel_export import environment_provider

            provider = environment_provider()
        return trace.get_tracer("tiered_agent", package_version(), provider, schema_url=SCHEMA_URL)

    def meter(self) -> Meter | None:
        """This package's meter from the chosen provider; None when there is none (no metrics)."""
        provider = self.meter_provider if self.meter_provider is not None else _default_meter_provider()
        if provider is None:
            return None
        from ._otel_attributes import SCHEMA_URL
        from ._otel_spans import package_version

        return provider.get_meter("tiered_agent", package_version(), schema_url=SCHEMA_URL)

    def start_run(self) -> RunObserver:
        """A fresh observer for one run: it turns that run's events into spans and metrics."""
        from ._otel_metrics import RunMetrics
        from ._otel_spans import RunSpans

        tracer, meter = self.tracer(), self.meter()
        return RunSpans(tracer, self, RunMetrics(meter) if meter is not None else None)


def _default_meter_provider() -> MeterProvider | None:
    """The application's global MeterProvider, else one exporting as the environment says, else None."""
    if global_provider_configured("metrics"):
        from opentelemetry import metrics

        return metrics.get_meter_provider()
    if endpoint_configured("metrics") and set(exporter_names("metrics")) != {"none"}:
        from ._otel_export import environment_meter_provider

        return environment_meter_provider()
    return None


def endpoint_configured(signal: Signal | None = None) -> bool:
    """An OTLP endpoint is set for ``signal`` (None: for any) and the SDK is not disabled."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    names = {name for key, envs in ENDPOINT_ENVS.items() if signal in (None, key) for name in envs}
    return any(os.environ.get(name, "").strip() for name in names)


def exporter_names(signal: Signal) -> list[str]:
    """``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER`` as a list (default ``["otlp"]``)."""
    value = os.environ.get(f"OTEL_{signal.upper()}_EXPORTER", "otlp")
    return [name.strip().lower() for name in value.split(",") if name.strip()] or ["otlp"]


def global_provider_configured(signal: Signal = "traces") -> bool:
    """An application installed a global provider for ``signal``; never imports OpenTelemetry to find out.

    A module another thread is still importing (litellm imports OpenTelemetry in its own threads) is
    in ``sys.modules`` half-initialized: nothing can have installed a provider through it yet."""
    if signal == "traces":
        trace = sys.modules.get("opentelemetry.trace")
        get, proxy = getattr(trace, "get_tracer_provider", None), getattr(trace, "ProxyTracerProvider", None)
        return get is not None and proxy is not None and not isinstance(get(), proxy)
    metrics = sys.modules.get("opentelemetry.metrics")
    if getattr(metrics, "get_meter_provider", None) is None:
        return False
    assert metrics is not None
    from opentelemetry.metrics._internal import _ProxyMeterProvider  # the API's stand-in until one is set

    return not isinstance(metrics.get_meter_provider(), _ProxyMeterProvider)


def run_observer(setting: Telemetry | bool | None) -> RunObserver | None:
    """The telemetry observer for one run, or None when telemetry is off (see the module docstring)."""
    if setting is False:
        return None
    if isinstance(setting, Telemetry):
        return setting.start_run()
    if setting is True:
        return Telemetry().start_run()
    configured = global_provider_configured("traces") or global_provider_configured("metrics")
    if not (configured or endpoint_configured()):
        return None
    try:
        return Telemetry().start_run()
    except ConfigurationError as exc:  # configured by the environment, not asked for: run without spans
        log.warning("telemetry.unavailable", reason=str(exc))
        return None
