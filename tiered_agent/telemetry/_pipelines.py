"""The command line's OpenTelemetry pipelines: the CLI is the application, so it builds the SDK
providers from the environment (``_export``), installs them globally, hands a :class:`Telemetry`
to the Agent and flushes and shuts them down when the run ends."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog

from .._errors import ConfigurationError
from ._config import Telemetry
from ._environment import MISSING_EXTRA, endpoint_configured, exporter_names, global_provider_configured
from ._export import build_meter_provider, build_provider

__all__ = ["CliTelemetry", "cli_telemetry"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class _Pipeline:
    """One signal's provider; ``owned`` False: the global one someone else installed (flushed only)."""

    provider: Any  # an SDK TracerProvider or MeterProvider, or whatever the application installed
    owned: bool = True

    def shutdown(self) -> None:
        """Export what is still queued, then (ours) stop; an export failure is logged, not raised."""
        try:
            if callable(flush := getattr(self.provider, "force_flush", None)):
                flush()
            if self.owned:
                self.provider.shutdown()
        except Exception:
            log.warning("telemetry.shutdown_failed", provider=type(self.provider).__name__, exc_info=True)


@dataclass(frozen=True, slots=True)
class CliTelemetry:
    """The CLI's export pipelines: pass ``telemetry`` to the Agent, :meth:`shutdown` when the run ends.

    ``traces`` or ``metrics`` is None when that signal is not exported.
    """

    traces: _Pipeline | None
    metrics: _Pipeline | None = None

    @property
    def telemetry(self) -> Telemetry:
        return Telemetry(
            tracer_provider=self.traces.provider if self.traces else None,
            meter_provider=self.metrics.provider if self.metrics else None,
        )

    def shutdown(self) -> None:
        """Flush both signals and shut down the providers the CLI built."""
        for pipeline in (self.traces, self.metrics):
            if pipeline is not None:
                pipeline.shutdown()


def cli_telemetry(requested: bool) -> CliTelemetry | None:
    """Export when ``--otel`` was given or an OTLP endpoint is set; None otherwise.

    Spans go out when ``--otel`` was given or a traces endpoint is set; metrics likewise with a
    metrics endpoint, unless ``OTEL_METRICS_EXPORTER=none``. A global provider installed before the
    CLI started (``opentelemetry-instrument tiered-agent ...``) is used as it is. Otherwise the CLI,
    being the application, installs its providers globally, so instrumentation of other libraries
    in the process joins the same traces and metrics.
    """
    if not (requested or endpoint_configured()):
        return None
    traces = _traces() if requested or endpoint_configured("traces") else None
    wanted = set(exporter_names("metrics")) != {"none"}
    metrics = _metrics() if wanted and (requested or endpoint_configured("metrics")) else None
    return CliTelemetry(traces, metrics)


def _traces() -> _Pipeline:
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise ConfigurationError(MISSING_EXTRA) from exc
    if global_provider_configured("traces"):
        return _Pipeline(trace.get_tracer_provider(), owned=False)
    provider = build_provider()
    trace.set_tracer_provider(provider)
    return _Pipeline(provider)


def _metrics() -> _Pipeline:
    try:
        from opentelemetry import metrics
    except ImportError as exc:
        raise ConfigurationError(MISSING_EXTRA) from exc
    if global_provider_configured("metrics"):
        return _Pipeline(metrics.get_meter_provider(), owned=False)
    provider = build_meter_provider(shutdown_on_exit=False)  # shut down by CliTelemetry.shutdown
    metrics.set_meter_provider(provider)
    return _Pipeline(provider)
