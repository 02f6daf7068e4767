"""OpenTelemetry SDK providers built from the standard ``OTEL_*`` environment (the ``otel`` extra).

Span exporters follow ``OTEL_TRACES_EXPORTER``, metric exporters ``OTEL_METRICS_EXPORTER``
(default ``otlp``; also ``console``, ``none``, or a comma-separated list); ``otlp`` is the
standard OTLP/HTTP protobuf exporter, which reads its endpoint, headers, timeout, compression
(and, for metrics, temporality) from the ``OTEL_EXPORTER_OTLP_*`` variables itself. Every span
exporter sits behind a ``BatchSpanProcessor``, every metric exporter behind a
``PeriodicExportingMetricReader`` (``OTEL_METRIC_EXPORT_INTERVAL``, default 60 s).
``service.name`` defaults to ``tiered-agent`` unless ``OTEL_SERVICE_NAME`` or
``OTEL_RESOURCE_ATTRIBUTES`` names one.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import TYPE_CHECKING, TypeAlias

import structlog

from .._errors import ConfigurationError
from ._environment import MISSING_EXTRA, Signal, check_settings, exporter_names

if TYPE_CHECKING:
    from collections.abc import Callable

    import requests
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

    SessionFactory: TypeAlias = Callable[[Signal], requests.Session]  # an OTLP exporter's HTTP session

__all__ = [
    "build_meter_provider",
    "build_provider",
    "environment_meter_provider",
    "environment_provider",
]

log = structlog.get_logger(__name__)

SERVICE_NAME = "tiered-agent"
_lock = threading.Lock()
_environment_provider: TracerProvider | None = None
_environment_meter_provider: MeterProvider | None = None


def build_provider(*, shutdown_on_exit: bool = True, session: SessionFactory | None = None) -> TracerProvider:
    """A new SDK TracerProvider exporting as the environment says; ConfigurationError on a bad setting.
    ``shutdown_on_exit``: flush at interpreter exit; ``session``: the OTLP exporter's HTTP session."""
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise ConfigurationError(MISSING_EXTRA) from exc
    exporters = _exporters(session)
    provider = TracerProvider(resource=_resource(), shutdown_on_exit=shutdown_on_exit)
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def build_meter_provider(
    *, shutdown_on_exit: bool = True, session: SessionFactory | None = None
) -> MeterProvider:
    """A new SDK MeterProvider exporting as the environment says (``OTEL_METRICS_EXPORTER=none``: no
    reader); ConfigurationError on a bad setting. The options as for :func:`build_provider`."""
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    except ImportError as exc:
        raise ConfigurationError(MISSING_EXTRA) from exc
    readers = [PeriodicExportingMetricReader(exporter) for exporter in _metric_exporters(session)]
    return MeterProvider(readers, resource=_resource(), shutdown_on_exit=shutdown_on_exit)


def _resource() -> Resource:
    from opentelemetry.sdk.resources import Resource

    resource = Resource.create()
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE_NAME}))
    return resource


def environment_provider() -> TracerProvider:
    """The process's one provider built from the environment, for library use without a global one.

    It is not installed globally (the application may still install its own); the SDK flushes it
    at interpreter exit.
    """
    global _environment_provider  # noqa: PLW0603 - one exporter pipeline per process, like the SDK's own
    with _lock:
        if _environment_provider is None:
            _environment_provider = build_provider()
        return _environment_provider


def environment_meter_provider() -> MeterProvider:
    """The process's one MeterProvider built from the environment (not installed globally; the SDK
    flushes it at interpreter exit), as :func:`environment_provider` for spans."""
    global _environment_meter_provider  # noqa: PLW0603 - one exporter pipeline per process
    with _lock:
        if _environment_meter_provider is None:
            _environment_meter_provider = build_meter_provider()
        return _environment_meter_provider


def _exporters(session: SessionFactory | None = None) -> list[SpanExporter]:
    names = _exporter_names("traces")
    check_settings("traces")
    exporters: list[SpanExporter] = []
    if "otlp" in names:
        _check_protocol("traces")
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise ConfigurationError(MISSING_EXTRA) from exc
        exporters.append(OTLPSpanExporter(session=session("traces") if session else None))
    if "console" in names:
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        exporters.append(ConsoleSpanExporter(out=sys.stderr))  # stdout belongs to the run's output
    return exporters


def _metric_exporters(session: SessionFactory | None = None) -> list[MetricExporter]:
    names = _exporter_names("metrics")
    check_settings("metrics")
    exporters: list[MetricExporter] = []
    if "otlp" in names:
        _check_protocol("metrics")
        try:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        except ImportError as exc:
            raise ConfigurationError(MISSING_EXTRA) from exc
        exporters.append(OTLPMetricExporter(session=session("metrics") if session else None))
    if "console" in names:
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

        exporters.append(ConsoleMetricExporter(out=sys.stderr))
    return exporters


def _exporter_names(signal: Signal) -> list[str]:
    names = exporter_names(signal)
    unknown = sorted(set(names) - {"otlp", "console", "none"})
    if unknown:
        raise ConfigurationError(
            f"OTEL_{signal.upper()}_EXPORTER={','.join(unknown)} is not supported: use otlp, console or none."
        )
    return names


def _check_protocol(signal: Signal) -> None:
    names = (f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
    protocol = next((os.environ[n].strip() for n in names if os.environ.get(n, "").strip()), None)
    if protocol not in (None, "http/protobuf"):
        raise ConfigurationError(
            f"OTLP protocol {protocol!r} is not supported: tiered-agent exports over http/protobuf."
        )
