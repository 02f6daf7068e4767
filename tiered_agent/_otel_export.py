"""An OpenTelemetry SDK TracerProvider built from the standard ``OTEL_*`` environment (the ``otel`` extra).

Exporters follow ``OTEL_TRACES_EXPORTER`` (default ``otlp``; also ``console``, ``none``, or a
comma-separated list); ``otlp`` is the standard OTLP/HTTP protobuf exporter, which reads its
endpoint, headers, timeout and compression from the ``OTEL_EXPORTER_OTLP_*`` variables itself.
Every exporter sits behind a ``BatchSpanProcessor``. ``service.name`` defaults to ``tiered-agent``
unless ``OTEL_SERVICE_NAME`` or ``OTEL_RESOURCE_ATTRIBUTES`` names one.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._errors import ConfigurationError
from ._telemetry import MISSING_EXTRA, Telemetry, endpoint_configured, global_provider_configured

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

__all__ = ["CliTelemetry", "build_provider", "cli_telemetry", "environment_provider"]

SERVICE_NAME = "tiered-agent"
_PROTOCOL_ENVS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
_lock = threading.Lock()
_environment_provider: TracerProvider | None = None


def build_provider() -> TracerProvider:
    """A new SDK TracerProvider exporting as the environment says; ConfigurationError on a bad setting."""
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise ConfigurationError(MISSING_EXTRA) from exc
    exporters = _exporters()
    resource = Resource.create()
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE_NAME}))
    provider = TracerProvider(resource=resource)
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


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


def _exporters() -> list[SpanExporter]:
    names = [n.strip().lower() for n in os.environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",")]
    unknown = sorted(set(names) - {"otlp", "console", "none", ""})
    if unknown:
        raise ConfigurationError(
            f"OTEL_TRACES_EXPORTER={','.join(unknown)} is not supported: use otlp, console or none."
        )
    exporters: list[SpanExporter] = []
    if "otlp" in names:
        exporters.append(_otlp_exporter())
    if "console" in names:
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        exporters.append(ConsoleSpanExporter(out=sys.stderr))  # stdout belongs to the run's output
    return exporters


def _otlp_exporter() -> SpanExporter:
    protocol = next((os.environ[n].strip() for n in _PROTOCOL_ENVS if os.environ.get(n, "").strip()), None)
    if protocol not in (None, "http/protobuf"):
        raise ConfigurationError(
            f"OTLP protocol {protocol!r} is not supported: tiered-agent exports over http/protobuf."
        )
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise ConfigurationError(MISSING_EXTRA) from exc
    return OTLPSpanExporter()


@dataclass(frozen=True, slots=True)
class CliTelemetry:
    """The CLI's export pipeline: pass ``telemetry`` to the Agent, :meth:`shutdown` when the run ends."""

    provider: Any  # an SDK TracerProvider, or whatever provider the application installed
    owned: bool = True  # False: the global provider someone else installed (flushed, not shut down)

    @property
    def telemetry(self) -> Telemetry:
        return Telemetry(tracer_provider=self.provider)

    def shutdown(self) -> None:
        """Export what is still queued (the BatchSpanProcessor flushes on shutdown)."""
        if self.owned:
            self.provider.shutdown()
        elif callable(flush := getattr(self.provider, "force_flush", None)):
            flush()


def cli_telemetry(requested: bool) -> CliTelemetry | None:
    """Export spans when ``--otel`` was given or an OTLP endpoint is set; None otherwise.

    A global provider installed before the CLI started (``opentelemetry-instrument tiered-agent
    ...``) is used as it is. Otherwise the CLI, being the application, installs its provider
    globally, so instrumentation of other libraries in the process joins the same traces.
    """
    if not (requested or endpoint_configured()):
        return None
    if global_provider_configured():
        from opentelemetry import trace

        return CliTelemetry(trace.get_tracer_provider(), owned=False)
    provider = build_provider()
    from opentelemetry import trace

    trace.set_tracer_provider(provider)
    return CliTelemetry(provider)
