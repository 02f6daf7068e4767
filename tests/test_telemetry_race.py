"""Many agents in one process: a run starting while another thread is still importing OpenTelemetry
(litellm does, in its own threads) must not fail on the half-imported module."""

from __future__ import annotations

import sys
from types import ModuleType

import pytest

from tiered_agent.telemetry import run_observer
from tiered_agent.telemetry._environment import global_provider_configured


@pytest.mark.parametrize("signal", ["traces", "metrics"])
def test_a_half_imported_opentelemetry_module_means_no_provider(
    monkeypatch: pytest.MonkeyPatch, signal: str
) -> None:
    name = "opentelemetry.trace" if signal == "traces" else "opentelemetry.metrics"
    monkeypatch.setitem(sys.modules, name, ModuleType(name))  # in sys.modules, its body not run yet
    assert global_provider_configured(signal) is False  # type: ignore[arg-type]
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    assert run_observer(None) is None
