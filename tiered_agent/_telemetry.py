"""Whether and where a run sends OpenTelemetry spans. Imports nothing of OpenTelemetry itself.

Spans are derived from the run's typed events (``_otel_spans.RunSpans``), so the loop holds no
telemetry code besides a scope around each tool call (:meth:`RunObserver.tool_scope`, so spans
started inside a tool nest under its ``execute_tool`` span). ``Agent(telemetry=...)`` decides,
once per run:

* ``None`` (the default): on when OpenTelemetry is configured, off (zero cost, no import) otherwise.
  Configured means an application already installed a global ``TracerProvider`` (checked only if
  it imported ``opentelemetry.trace`` itself), or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` /
  ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (then spans go over OTLP/HTTP, the ``otel`` extra).
* ``True`` or a :class:`Telemetry`: on; ``False``: off.
"""

from __future__ import annotations

import os
import sys
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import structlog

from ._errors import ConfigurationError

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer, TracerProvider

    from ._messages import ToolCall
    from ._trace import Event

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "ENDPOINT_ENVS",
    "MISSING_EXTRA",
    "RunObserver",
    "Telemetry",
    "endpoint_configured",
    "run_observer",
]

log = structlog.get_logger(__name__)

ENDPOINT_ENVS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
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
    exporter built from the standard ``OTEL_*`` variables. ``capture_content``: record prompts,
    outputs, tool arguments and results (secrets redacted); ``None`` follows
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``. ``agent_name`` names the
    ``invoke_agent`` span; captured texts longer than ``max_content_chars`` are cut.
    """

    tracer_provider: TracerProvider | None = None
    capture_content: bool | None = None
    agent_name: str = "tiered-agent"
    max_content_chars: int = 20_000

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
        if provider is None and not global_provider_configured() and endpoint_configured():
            from ._otel_export import environment_provider

            provider = environment_provider()
        return trace.get_tracer("tiered_agent", package_version(), provider, schema_url=SCHEMA_URL)

    def start_run(self) -> RunObserver:
        """A fresh observer for one run: it turns that run's events into spans."""
        from ._otel_spans import RunSpans

        return RunSpans(self.tracer(), self)


def endpoint_configured() -> bool:
    """An OTLP endpoint is set and the SDK is not disabled (the standard ``OTEL_*`` variables)."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(os.environ.get(name, "").strip() for name in ENDPOINT_ENVS)


def global_provider_configured() -> bool:
    """An application installed a global TracerProvider; never imports OpenTelemetry to find out."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return False
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def run_observer(setting: Telemetry | bool | None) -> RunObserver | None:
    """The span observer for one run, or None when telemetry is off (see the module docstring)."""
    if setting is False:
        return None
    if isinstance(setting, Telemetry):
        return setting.start_run()
    if setting is True:
        return Telemetry().start_run()
    if not (global_provider_configured() or endpoint_configured()):
        return None
    try:
        return Telemetry().start_run()
    except ConfigurationError as exc:  # configured by the environment, not asked for: run without spans
        log.warning("telemetry.unavailable", reason=str(exc))
        return None
