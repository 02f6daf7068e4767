"""What the environment says about OpenTelemetry: the standard ``OTEL_*`` variables this package reads,
and whether an application installed a global provider. Imports nothing of OpenTelemetry itself.

:func:`check_settings` reads the numeric ``OTEL_*`` settings the SDK's batch span processor,
metric reader and OTLP exporters take, and turns a value they would reject with a traceback (or
silently replace with their default) into one :class:`ConfigurationError` sentence.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from typing import Literal

from .._errors import ConfigurationError

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "ENDPOINT_ENVS",
    "MISSING_EXTRA",
    "Signal",
    "check_settings",
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


@dataclass(frozen=True, slots=True)
class _Setting:
    """A numeric ``OTEL_*`` variable: which signal reads it, what it is, and its domain."""

    name: str
    signal: Signal
    what: str
    whole: bool = True  # an integer (the SDK parses it with int())


_SETTINGS = (
    _Setting("OTEL_BSP_SCHEDULE_DELAY", "traces", "milliseconds between span exports"),
    _Setting("OTEL_BSP_EXPORT_TIMEOUT", "traces", "milliseconds a span export may take"),
    _Setting("OTEL_BSP_MAX_QUEUE_SIZE", "traces", "spans queued for export at most"),
    _Setting("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "traces", "spans per export at most"),
    _Setting("OTEL_METRIC_EXPORT_INTERVAL", "metrics", "milliseconds between metric exports"),
    _Setting("OTEL_METRIC_EXPORT_TIMEOUT", "metrics", "milliseconds a metric export may take"),
    _Setting("OTEL_EXPORTER_OTLP_TIMEOUT", "traces", "seconds an OTLP request may take", whole=False),
    _Setting("OTEL_EXPORTER_OTLP_TIMEOUT", "metrics", "seconds an OTLP request may take", whole=False),
    _Setting("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "traces", "seconds an OTLP span request may take", False),
    _Setting(
        "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "metrics", "seconds an OTLP metric request may take", False
    ),
)
_DEFAULT_QUEUE = 2048  # the SDK's OTEL_BSP_MAX_QUEUE_SIZE default


def _number(setting: _Setting) -> float | None:
    """The setting's value; None when unset; ConfigurationError when the SDK could not use it."""
    raw = os.environ.get(setting.name, "").strip()
    if not raw:
        return None
    kind = "a whole number" if setting.whole else "a number"
    try:
        value = float(int(raw)) if setting.whole else float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ConfigurationError(
            f"{setting.name}={raw} is not valid: it must be {kind} above 0 ({setting.what})."
        )
    return value


def check_settings(signal: Signal) -> None:
    """Raise :class:`ConfigurationError` (one sentence) for a numeric ``OTEL_*`` setting of ``signal``
    that the SDK would reject or ignore."""
    values = {s.name: _number(s) for s in _SETTINGS if s.signal == signal}
    batch, queue = values.get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"), values.get("OTEL_BSP_MAX_QUEUE_SIZE")
    if signal == "traces" and batch is not None and batch > (queue or _DEFAULT_QUEUE):
        raise ConfigurationError(
            f"OTEL_BSP_MAX_EXPORT_BATCH_SIZE={batch:g} is not valid: it must not exceed "
            f"OTEL_BSP_MAX_QUEUE_SIZE ({queue or _DEFAULT_QUEUE:g})."
        )
