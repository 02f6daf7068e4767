"""The bundled shell-agent runs and a replay's step metrics, for tests that compare two replays."""

from __future__ import annotations

from tiered_agent.bench._bundle import bundled_trace_paths
from tiered_agent.bench._importers import load_runs
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import BenchResult


def shell_runs() -> list[RecordedRun]:
    """The first four bundled mini-swe-agent / SWE-agent runs."""
    runs = load_runs(bundled_trace_paths()).runs
    return [r for r in runs if r.format in ("mini-swe-agent", "swe-agent")][:4]


def step_metrics(result: BenchResult) -> list[tuple[str, str, tuple[object, ...]]]:
    """Every step's metrics per run and policy, timings aside."""
    return [
        (replay.run_id, name, tuple(s._replace(build_seconds=0.0) for s in metrics.steps))
        for replay in result.replays
        for name, metrics in replay.policies.items()
    ]
