"""Each task's trace: a folder per task id, and what its trace says about the task.

The result line of a task is always read back from its trace (the inspector's reading, the one
``tiered-agent trace stats`` shows), whether the task just ran, was resumed, or had finished before
a crash kept its line from being written: one way to count a task, whatever happened to it.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass
from pathlib import Path

import structlog

from .._errors import TraceFormatError
from .._messages import Usage
from ..inspect._load import load_trace
from ..inspect._view import RunView, build_run
from ._results import TaskResult
from ._tasks import BatchTask

__all__ = ["INCOMPLETE", "TaskTrace", "latest_trace", "read_task_trace", "task_folder"]

log = structlog.get_logger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
INCOMPLETE = "incomplete"  # a trace whose last run has no end (killed, or still running)


def task_folder(trace_dir: Path, task_id: str) -> Path:
    """The folder of a task's trace: its id made safe for a file name, plus a hash of the id (two ids
    never share a folder, and an id such as ``../x`` stays inside ``trace_dir``)."""
    digest = hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    slug = _UNSAFE.sub("_", task_id).strip("._-")[:60] or "task"
    return trace_dir / f"{slug}-{digest}"


def latest_trace(folder: Path) -> Path | None:
    """The task's most recently written trace file, if any."""
    try:
        found = sorted((p.stat().st_mtime_ns, p.name, p) for p in folder.glob("*.jsonl") if p.is_file())
    except OSError:
        return None
    return found[-1][2] if found else None


@dataclass(frozen=True, slots=True)
class TaskTrace:
    """A task's trace as read now: the run (all its segments) and how its last segment ended."""

    path: Path
    run: RunView
    ended: str | None  # the last segment's stop reason; None when it has no run_end

    @classmethod
    def read(cls, path: Path) -> TaskTrace:
        loaded = load_trace(path)
        starts = [i for i, e in enumerate(loaded.events) if e.type == "run_start"]
        ends = [i for i, e in enumerate(loaded.events) if e.type == "run_end"]
        run = build_run(loaded)
        ended = run.stop_reason if ends and (not starts or ends[-1] > starts[-1]) else None
        return cls(path, run, ended)

    @property
    def outcome(self) -> str:
        """How the task stands: its stop reason; ``answered`` when the run answered but was killed
        before it could record its end; else ``incomplete``."""
        if self.ended is not None:
            return self.ended
        return "answered" if self.answer is not None else INCOMPLETE

    @property
    def answer(self) -> str | None:
        if self.ended is not None:
            return self.run.output if self.ended == "answered" else None
        last = self.run.messages[-1].message if self.run.messages else None
        if last is not None and last.role == "assistant" and not last.tool_calls and last.text.strip():
            return last.text
        return None

    @property
    def resumable(self) -> bool:
        """Whether the trace holds a run to continue (its system prompt and task at least)."""
        return len(self.run.messages) >= 2

    def result(self, task: BatchTask, *, model: str, policy: str) -> TaskResult:
        totals = self.run.totals
        return TaskResult(
            id=task.id,
            stop_reason=self.outcome,
            answer=self.answer,
            error=self.run.error if self.ended not in (None, "answered") else None,
            iterations=totals.iterations,
            usage=Usage(
                prompt_tokens=totals.prompt_tokens,
                completion_tokens=totals.completion_tokens,
                cached_tokens=totals.cached_tokens,
                requests=totals.model_calls,
            ),
            dollars=round(totals.cost, 10) if totals.cost is not None else None,
            savings=round(totals.savings, 6),
            sent_tokens=totals.sent_tokens,
            full_tokens=totals.full_tokens,
            trace=str(self.path),
            model=self.run.model or model,
            policy=policy,
            segments=self.run.segments,
            finished_at=time.time(),
        )


def read_task_trace(path: Path | None) -> TaskTrace | None:
    """The trace at ``path``, or None when there is none or it cannot be read at all."""
    if path is None:
        return None
    try:
        return TaskTrace.read(path)
    except TraceFormatError as exc:
        log.warning("batch.trace_unreadable", path=str(path), error=str(exc))
        return None
