"""Where a context manager's events go: step errors, landed summaries, retrievals.

The manager's summary worker and its ``context_retrieve`` tool call back into this small object,
never into the manager itself: a callback bound to the manager would tie the manager, its steps
and its run into reference cycles, and a finished run would wait for the cycle collector instead
of being freed when it is dropped (a batch runs hundreds of agents in one process).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import structlog

from .._trace import Event, RetrievalEvent, StepError, SummaryEvent
from ._step import failure_of
from .pipeline._types import StepFailure, Summary

__all__ = ["ManagerEvents"]

log = structlog.get_logger(__name__)


class ManagerEvents:
    """The manager's record of failed steps (:attr:`errors`) and its way out to the run's events;
    :attr:`iteration` is the iteration of the prompt being prepared (what late callbacks, a
    summary that failed in the background or a retrieval, are recorded at)."""

    def __init__(self, on_event: Callable[[Event], None] | None) -> None:
        self.on_event = on_event
        self.errors: list[StepError] = []  # every step that raised in this run (fail open)
        self.iteration = 0

    def failed(self, failures: Sequence[StepFailure], iteration: int) -> None:
        """Record steps that raised (fail open): a ``step_error`` event each, and a warning."""
        for failure in failures:
            error = StepError(iteration, failure.step, failure.phase, failure.error, failure.message)
            self.errors.append(error)
            log.warning(
                "context.step_error",
                step=failure.step,
                phase=failure.phase,
                iteration=iteration,
                error=f"{failure.error}: {failure.message}",
            )
            if self.on_event is not None:
                self.on_event(error)

    def summary_failed(self, step: str, exc: Exception) -> None:
        """A summary job raised (the summarizer, or a parser of the digest): a step error of the step
        that asked for it; the previous summary stays and the next job covers the range too."""
        self.failed([failure_of(step, "summary", exc)], self.iteration)

    def summary_landed(self, summary: Summary) -> None:
        if self.on_event is not None:
            self.on_event(
                SummaryEvent(
                    first_iteration=summary.first,
                    last_iteration=summary.last,
                    text=summary.text,
                    model=summary.model,
                    input_tokens=summary.input_tokens,
                    output_tokens=summary.output_tokens,
                    created_at_iteration=summary.created_at_iteration,
                )
            )

    def retrieval_done(self, info: dict[str, Any]) -> None:
        if self.on_event is not None:
            self.on_event(
                RetrievalEvent(
                    iteration=self.iteration,
                    filters=dict(info.get("filters", {})),
                    matched=int(info.get("matched", 0)),
                    page=int(info.get("page", 1)),
                    pages=int(info.get("pages", 1)),
                )
            )
