"""What the environment says about OpenTelemetry: the standard ``OTEL_*`` variables this package reads,
and whether an application installed a global provider. Imports nothing of OpenTelemetry itself."""

from __future__ import annotations

import os
import sys
from typing import Literal

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "ENDPOINT_ENVS",
    "MISSING_EXTRA",
    "Signal",
    "endpoint_configured",
    "exporter_names",
    "global_provider_configured",
]

Signal = Literal["traces", "metrics"]
ENDPOINT_ENVS: dict[Signal, tuple[str, ...]] = {
    "traces": ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"),
    "metrics": ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"),
}
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"  # the GenAI conventions' opt-in
MISSING_EXTRA = 'OpenTelemetry export needs the otel extra: pip install "tiered-agent[otel]"'


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
    """An application installed a global provider for ``signal``; never imports OpenTelemetry to find out."""
    if signal == "traces":
        trace = sys.modules.get("opentelemetry.trace")
        return trace is not None and not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    metrics = sys.modules.get("opentelemetry.metrics")
    if metrics is None:
        return False
    from opentelemetry.metrics._internal import _ProxyMeterProvider  # the API's stand-in until one is set

    return not isinstance(metrics.get_meter_provider(), _ProxyMeterProvider)
