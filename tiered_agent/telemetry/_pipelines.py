"""The command line's OpenTelemetry pipelines: the CLI is the application, so it builds the SDK
providers from the environment (``_export``), installs them globally, hands a :class:`Telemetry`
to the Agent and flushes and shuts them down when the run ends.

A dead or hanging collector must not hold the command: export failures are said once
(``_watch``), and :meth:`CliTelemetry.shutdown` gives the final flush at most
:data:`SHUTDOWN_BUDGET_S` seconds (in a daemon thread it then abandons), on a normal exit and
after SIGTERM or Ctrl-C alike. The providers are built without the SDK's own exit hook, which
would wait for the collector again.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog

from .._errors import ConfigurationError
from ._config import Telemetry
from ._environment import (
    ENDPOINT_ENVS,
    MISSING_EXTRA,
    endpoint_configured,
    exporter_names,
    global_provider_configured,
)
from ._export import build_meter_provider, build_provider

if TYPE_CHECKING:
    from ._watch import ExportWatch

__all__ = ["SHUTDOWN_BUDGET_S", "CliTelemetry", "cli_telemetry"]

log = structlog.get_logger(__name__)

SHUTDOWN_BUDGET_S = 2.0  # the final flush of both signals, at most


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

    ``traces`` or ``metrics`` is None when that signal is not exported; ``watch`` sees the OTLP
    exporters' failures (None when no OTLP exporter was built here).
    """

    traces: _Pipeline | None
    metrics: _Pipeline | None = None
    watch: ExportWatch | None = field(default=None, compare=False)

    @property
    def telemetry(self) -> Telemetry:
        return Telemetry(
            tracer_provider=self.traces.provider if self.traces else None,
            meter_provider=self.metrics.provider if self.metrics else None,
        )

    def shutdown(self, budget_s: float = SHUTDOWN_BUDGET_S) -> bool:
        """Flush both signals and shut down the providers the CLI built, giving up after ``budget_s``
        (the rest is dropped, said once); True when everything finished in time."""
        threads = [
            threading.Thread(target=pipeline.shutdown, name="telemetry-shutdown", daemon=True)
            for pipeline in (self.traces, self.metrics)
            if pipeline is not None
        ]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + budget_s
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if not any(thread.is_alive() for thread in threads):
            return True
        if self.watch is not None:
            self.watch.gave_up(_endpoint(), budget_s)
        else:
            log.warning(
                "telemetry.shutdown_timeout", detail=f"telemetry did not finish within {budget_s:g} s"
            )
        return False


def _endpoint() -> str | None:
    """The collector's address, as the environment names it (without credentials or path)."""
    from ._watch import collector

    names = [name for envs in ENDPOINT_ENVS.values() for name in envs]
    value = next((os.environ[n].strip() for n in names if os.environ.get(n, "").strip()), None)
    return collector(value) if value else None


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
    try:
        from ._watch import ExportWatch
    except ImportError as exc:  # requests comes with the otel extra's exporter
        raise ConfigurationError(MISSING_EXTRA) from exc
    watch = ExportWatch()
    traces = _traces(watch) if requested or endpoint_configured("traces") else None
    wanted = set(exporter_names("metrics")) != {"none"}
    metrics = _metrics(watch) if wanted and (requested or endpoint_configured("metrics")) else None
    return CliTelemetry(traces, metrics, watch)


def _traces(watch: ExportWatch) -> _Pipeline:
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise ConfigurationError(MISSING_EXTRA) from exc
    if global_provider_configured("traces"):
        return _Pipeline(trace.get_tracer_provider(), owned=False)
    provider = build_provider(shutdown_on_exit=False, session=watch.session)  # CliTelemetry.shutdown
    trace.set_tracer_provider(provider)
    return _Pipeline(provider)


def _metrics(watch: ExportWatch) -> _Pipeline:
    try:
        from opentelemetry import metrics
    except ImportError as exc:
        raise ConfigurationError(MISSING_EXTRA) from exc
    if global_provider_configured("metrics"):
        return _Pipeline(metrics.get_meter_provider(), owned=False)
    provider = build_meter_provider(shutdown_on_exit=False, session=watch.session)
    metrics.set_meter_provider(provider)
    return _Pipeline(provider)
