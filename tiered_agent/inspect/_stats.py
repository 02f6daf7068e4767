"""Totals across many runs (``tiered-agent trace stats``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import TraceFormatError
from ._load import find_traces, load_trace
from ._totals import Totals
from ._view import RunView, build_run

__all__ = ["RunStats", "collect_stats", "iteration_dict", "run_summary"]

_RUN_LEVEL = frozenset({"runs", "outputs_truncated"})


@dataclass(frozen=True, slots=True)
class RunStats:
    """The runs read, their summed totals, stop reasons, and what could not be read."""

    runs: tuple[dict[str, Any], ...] = ()
    totals: Totals = field(default_factory=Totals)
    stop_reasons: Mapping[str, int] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()  # files that are not traces
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "totals": self.totals.to_dict(),
            "stop_reasons": dict(self.stop_reasons),
            "runs": list(self.runs),
            "skipped": list(self.skipped),
            "warnings": list(self.warnings),
        }


def run_summary(run: RunView) -> dict[str, Any]:
    """One run's identity, stop reason and totals, JSON-ready."""
    return {
        "path": str(run.path),
        "run_id": run.run_id,
        "model": run.model,
        "task": run.task,
        "started_at": run.started_at,
        "stop_reason": run.stop_label,
        "error": run.error,
        "segments": run.segments,
        "totals": run.totals.to_dict(),
        "unknown_events": dict(run.unknown_events),
        "warning": run.warning,
    }


def iteration_dict(run: RunView) -> list[dict[str, Any]]:
    """The per-iteration rows of ``trace show --json``."""
    rows = []
    for view in run.iterations:
        record = view.record
        rows.append(
            {
                "iteration": view.iteration,
                "tools": list(view.tool_calls),
                "finish_reason": view.finish_reason,
                "requests": view.requests,
                **{k: v for k, v in view.totals.to_dict().items() if k not in _RUN_LEVEL},
                "windowed_out": list(record.windowed_out),
                "summary_range": list(record.summary_range) if record.summary_range else None,
                "compacted": record.compacted,
                "hidden_items": [
                    {
                        "kind": i.kind,
                        "tool_call_id": i.tool_call_id,
                        "iteration": i.iteration,
                        "original_chars": i.original_chars,
                        "kept_chars": i.kept_chars,
                    }
                    for i in record.items
                ],
                "aging": {
                    "aged_through": record.aged_through,
                    "condensed_through": record.condensed_through,
                    "new_epoch": record.new_epoch,
                },
                "other_counters": dict(record.counters),
                "iteration_lists": {k: list(v) for k, v in record.iteration_lists.items()},
                "summaries_landed": [
                    {"first": run.summaries[i].first, "last": run.summaries[i].last} for i in view.summaries
                ],
                "error_events": [{"kind": k, "message": m} for k, m in view.errors],
            }
        )
    return rows


def collect_stats(paths: Iterable[Path]) -> RunStats:
    """Read every trace under ``paths`` (files or folders) and sum them up, one run at a time."""
    summaries: list[dict[str, Any]] = []
    totals = Totals()
    reasons: Counter[str] = Counter()
    skipped: list[str] = []
    warnings: list[str] = []
    for path in find_traces(list(paths)):
        try:
            loaded = load_trace(path)
        except TraceFormatError as exc:  # a FIFO, a device, an unreadable file: one warning, the rest goes on
            warnings.append(str(exc))
            skipped.append(str(path))
            continue
        if not loaded.is_trace:
            skipped.append(str(path))
            if loaded.warning:  # what made it unreadable is said, not swallowed
                warnings.append(loaded.warning)
            continue
        run = build_run(loaded)
        summaries.append(run_summary(run))
        totals = totals + run.totals
        reasons[run.stop_label] += 1
        if run.warning:
            warnings.append(run.warning)
    return RunStats(tuple(summaries), totals, dict(reasons), tuple(skipped), tuple(warnings))
