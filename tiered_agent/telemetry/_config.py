"""Whether and where a run sends OpenTelemetry spans and metrics. Imports nothing of OpenTelemetry itself.

Spans and metrics are derived from the run's typed events by one observer (``_spans.RunSpans``,
which feeds ``_metrics.RunMetrics``), so the loop holds no telemetry code besides a scope
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
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import structlog

from .._errors import ConfigurationError
from ._environment import (
    CAPTURE_CONTENT_ENV,
    MISSING_EXTRA,
    endpoint_configured,
    exporter_names,
    global_provider_configured,
)

if TYPE_CHECKING:
    from opentelemetry.metrics import Meter, MeterProvider
    from opentelemetry.trace import Tracer, TracerProvider

    from .._messages import ToolCall
    from .._trace import Event

__all__ = ["RunObserver", "Telemetry", "run_observer"]

log = structlog.get_logger(__name__)


class RunObserver(Protocol):
    """What a run calls: a scope around the whole run (entered before anything of the run starts,
    MCP servers included), each of its events, in order, and a scope around each tool call it
    executes (entered and left in the task that runs the tool)."""

    def run_scope(self) -> AbstractContextManager[None]: ...

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
        from ._attributes import SCHEMA_URL, package_version

        provider = self.tracer_provider
        if provider is None and not global_provider_configured("traces") and endpoint_configured("traces"):
            from ._export import environment_provider

            provider = environment_provider()
        return trace.get_tracer("tiered_agent", package_version(), provider, schema_url=SCHEMA_URL)

    def meter(self) -> Meter | None:
        """This package's meter from the chosen provider; None when there is none (no metrics)."""
        provider = self.meter_provider if self.meter_provider is not None else _default_meter_provider()
        if provider is None:
            return None
        from ._attributes import SCHEMA_URL, package_version

        return provider.get_meter("tiered_agent", package_version(), schema_url=SCHEMA_URL)

    def start_run(self) -> RunObserver:
        """A fresh observer for one run: it turns that run's events into spans and metrics."""
        from ._metrics import RunMetrics
        from ._spans import RunSpans

        tracer, meter = self.tracer(), self.meter()
        limit = self.max_content_chars if self.captures_content() else 0  # 0: no content
        return RunSpans(tracer, self.agent_name, limit, RunMetrics(meter) if meter is not None else None)


def _default_meter_provider() -> MeterProvider | None:
    """The application's global MeterProvider, else one exporting as the environment says, else None."""
    if global_provider_configured("metrics"):
        from opentelemetry import metrics

        return metrics.get_meter_provider()
    if endpoint_configured("metrics") and set(exporter_names("metrics")) != {"none"}:
        from ._export import environment_meter_provider

        return environment_meter_provider()
    return None


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
