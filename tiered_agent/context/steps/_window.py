"""Window: without a summary, only the last N iterations are shown; older ones are dropped behind a note.

For policies that never summarize: iterations older than the last
``iterations`` (and not covered by a summary) are replaced, run by run, by one
short ``user`` note naming the range and the retrieval call::

    [iterations 1-12 omitted; context_retrieve(iteration="1-12")]

The unit is the iteration, so a call is never separated from its results, and
the note is a ``user`` message followed by an iteration's assistant message: the
sequence stays valid for every provider. A policy that summarizes has no Window:
what its summary does not cover yet stays shown (``Summarize.keep`` is its
window), so there is never a coverage gap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from ..._messages import Message
from .._names import retrieve_call
from .._step import PolicyView, Step, require
from ..pipeline._draft import BuildContext, Draft

__all__ = ["Window", "omitted_note"]


@dataclass(frozen=True, slots=True)
class Window(Step):
    """Show the last ``iterations`` iterations; drop older ones behind a note."""

    kind: ClassVar[str] = "window"
    iterations: int = 5

    def __post_init__(self) -> None:
        ok = isinstance(self.iterations, int) and self.iterations >= 1
        require(ok, f"Window.iterations must be a positive integer, got {self.iterations!r}")

    def check(self, policy: PolicyView) -> None:
        require(
            not any(step.summarizes for step in policy.steps),
            f"policy {policy.name!r}: Window drops what a summary would cover; with Summarize or Compact, "
            "what is not summarized yet stays shown (Summarize.keep is the window)",
        )

    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        oldest_shown = context.last - self.iterations
        dropped = [k for k in context.iterations if k <= oldest_shown and k not in draft.covered]
        if not dropped:
            return draft
        runs = _runs(context.iterations, frozenset(dropped))
        sources: list[int | Message] = []
        emitted: set[int] = set()
        for index, message in enumerate(draft.messages):
            run = runs.get(message.iteration)
            if run is None:
                sources.append(index)
            elif run[0] not in emitted:
                emitted.add(run[0])
                sources.append(omitted_note(*run, retrieval=context.retrieval))
        return draft.rebuild(sources).drop(dropped, self.kind)


def omitted_note(first: int, last: int, *, retrieval: bool) -> Message:
    """``[iterations 1-12 omitted; context_retrieve(iteration="1-12")]`` (singular for one iteration)."""
    span = str(first) if first == last else f"{first}-{last}"
    what = f"iteration {span}" if first == last else f"iterations {span}"
    hint = f"; {retrieve_call('iteration', span)}" if retrieval else ""
    return Message(role="user", content=f"[{what} omitted{hint}]", iteration=first)


def _runs(iterations: Sequence[int], dropped: frozenset[int]) -> dict[int, tuple[int, int]]:
    """Each dropped iteration -> its run: maximal consecutive (present) dropped iterations."""
    runs: list[list[int]] = []
    previous = False
    for k in iterations:
        if k in dropped and previous:
            runs[-1].append(k)
        elif k in dropped:
            runs.append([k])
        previous = k in dropped
    return {k: (run[0], run[-1]) for run in runs for k in run}
