"""OpenTelemetry for runs: spans and metrics per the GenAI semantic conventions, derived from a run's
typed events. Importing this package never imports OpenTelemetry (nor does a run without telemetry).

``_config``: :class:`Telemetry`, whether and where a run reports (the ``Agent(telemetry=...)``
setting) and the per-run observer; ``_environment``: the standard ``OTEL_*`` variables;
``_export``: SDK providers built from them (the ``otel`` extra); ``_pipelines``: the CLI's
providers, installed globally and shut down within a bounded time; ``_spans`` and ``_metrics``:
the observer's spans and metrics; ``_attributes`` and ``_content``: their attribute values.
"""

from __future__ import annotations

from ._config import RunObserver, Telemetry, run_observer

__all__ = ["RunObserver", "Telemetry", "run_observer"]
