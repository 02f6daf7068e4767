"""Batches of tasks: many agents at once, one trace and one result line per task, resumable.

    from tiered_agent.batch import BatchSettings, run_batch

    report = await run_batch("tasks.jsonl", "results.jsonl", BatchSettings(model="openai/gpt-4o-mini"),
                             concurrency=50)
    report.counts, report.dollars, report.savings

``tiered-agent batch TASKS.jsonl --model M --concurrency N --out RESULTS.jsonl`` is the same from the
command line (docs/fleet.md). Names are imported lazily: ``--help`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

__all__ = [
    "FINAL",
    "BatchReport",
    "BatchSettings",
    "BatchTask",
    "TaskResult",
    "load_tasks",
    "read_results",
    "run_batch",
]

_LOCATIONS = {
    "FINAL": "._results",
    "BatchReport": "._batch",
    "BatchSettings": "._settings",
    "BatchTask": "._tasks",
    "TaskResult": "._results",
    "load_tasks": "._tasks",
    "read_results": "._results",
    "run_batch": "._batch",
}

if TYPE_CHECKING:
    from ._batch import BatchReport, run_batch
    from ._results import FINAL, TaskResult, read_results
    from ._settings import BatchSettings
    from ._tasks import BatchTask, load_tasks

__getattr__ = lazy_exports(__name__, _LOCATIONS, globals())


def __dir__() -> list[str]:
    return sorted(__all__)
