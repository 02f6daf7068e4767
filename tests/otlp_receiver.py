"""A tiny OTLP/HTTP trace and metrics receiver on 127.0.0.1 (tests and ``scripts/otel_demo.py``).

``POST /v1/traces`` bodies are decoded as protobuf ``ExportTraceServiceRequest`` (opentelemetry-proto,
gzip accepted) and kept as :class:`ReceivedSpan` values, ``POST /v1/metrics`` bodies as
``ExportMetricsServiceRequest`` kept as :class:`ReceivedMetric` values (one per metric per export:
a cumulative metric exported twice arrives twice; :meth:`OTLPReceiver.latest` keeps the last);
``bodies`` keeps the raw payloads. Point an exporter at it with
``OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint``. ``traces_only=True`` answers metrics with
405, as a traces-only collector (Arize Phoenix) does.
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

__all__ = ["OTLPReceiver", "ReceivedMetric", "ReceivedPoint", "ReceivedSpan"]


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as it arrived; ids are hex, ``kind`` and ``status_code`` are the OTLP enum numbers."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    status_code: int
    status_message: str
    events: tuple[tuple[str, dict[str, Any]], ...]
    resource: dict[str, Any]
    scope: str


@dataclass(frozen=True)
class ReceivedPoint:
    """One data point: ``value`` for sums and gauges; count, sum and buckets for histograms."""

    attributes: dict[str, Any]
    value: float | None = None
    count: int = 0
    sum: float = 0.0
    bucket_counts: tuple[int, ...] = ()
    explicit_bounds: tuple[float, ...] = ()


@dataclass(frozen=True)
class ReceivedMetric:
    """One metric of one export; ``kind`` is the OTLP data field (``histogram``, ``sum``, ``gauge``)."""

    name: str
    unit: str
    description: str
    kind: str
    monotonic: bool
    points: tuple[ReceivedPoint, ...]
    resource: dict[str, Any]
    scope: str


class OTLPReceiver:
    """The receiver; use as a context manager."""

    def __init__(self, port: int = 0, *, traces_only: bool = False) -> None:
        self.traces_only = traces_only
        self.bodies: list[bytes] = []
        self.spans: list[ReceivedSpan] = []
        self.metrics: list[ReceivedMetric] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _make_handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="otlp", daemon=True
        )

    @property
    def endpoint(self) -> str:
        """The base URL for ``OTEL_EXPORTER_OTLP_ENDPOINT`` (the exporter appends ``/v1/traces``)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> OTLPReceiver:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> OTLPReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def receive(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        spans = [
            _span(span, _attributes(rs.resource.attributes), ss.scope.name)
            for rs in request.resource_spans
            for ss in rs.scope_spans
            for span in ss.spans
        ]
        with self._lock:
            self.bodies.append(body)
            self.spans.extend(spans)

    def receive_metrics(self, body: bytes) -> None:
        request = ExportMetricsServiceRequest()
        request.ParseFromString(body)
        received = [
            _metric(metric, _attributes(rm.resource.attributes), sm.scope.name)
            for rm in request.resource_metrics
            for sm in rm.scope_metrics
            for metric in sm.metrics
        ]
        with self._lock:
            self.bodies.append(body)
            self.metrics.extend(received)

    def latest(self) -> dict[str, ReceivedMetric]:
        """Each metric's last export (cumulative temporality: the run's totals)."""
        with self._lock:
            return {metric.name: metric for metric in self.metrics}


def _span(span: Any, resource: dict[str, Any], scope: str) -> ReceivedSpan:
    return ReceivedSpan(
        name=span.name,
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_span_id=span.parent_span_id.hex(),
        kind=span.kind,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        attributes=_attributes(span.attributes),
        status_code=span.status.code,
        status_message=span.status.message,
        events=tuple((e.name, _attributes(e.attributes)) for e in span.events),
        resource=resource,
        scope=scope,
    )


def _metric(metric: Any, resource: dict[str, Any], scope: str) -> ReceivedMetric:
    kind = metric.WhichOneof("data") or ""
    data = getattr(metric, kind) if kind else None
    points = tuple(_point(p, kind) for p in data.data_points) if data is not None else ()
    return ReceivedMetric(
        name=metric.name,
        unit=metric.unit,
        description=metric.description,
        kind=kind,
        monotonic=bool(getattr(data, "is_monotonic", False)),
        points=points,
        resource=resource,
        scope=scope,
    )


def _point(point: Any, kind: str) -> ReceivedPoint:
    attributes = _attributes(point.attributes)
    if kind == "histogram":
        return ReceivedPoint(
            attributes,
            count=point.count,
            sum=point.sum,
            bucket_counts=tuple(point.bucket_counts),
            explicit_bounds=tuple(point.explicit_bounds),
        )
    value = point.as_double if point.WhichOneof("value") == "as_double" else point.as_int
    return ReceivedPoint(attributes, value=value)


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in pairs if isinstance(kv, KeyValue)}


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return tuple(_value(v) for v in value.array_value.values)
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, kind)


def _make_handler(receiver: OTLPReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            path = self.path.rstrip("/")
            if path == "/v1/traces":
                receiver.receive(body)
                self._send(200, ExportTraceServiceResponse().SerializeToString())
            elif path == "/v1/metrics" and receiver.traces_only:
                self._send(405, b"")
            elif path == "/v1/metrics":
                receiver.receive_metrics(body)
                self._send(200, ExportMetricsServiceResponse().SerializeToString())
            else:
                self._send(404, b"")

        def _send(self, status: int, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler
