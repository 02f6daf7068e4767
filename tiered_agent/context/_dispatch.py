"""One dispatch for a reply's tool calls, shared by the live loop and the replay benchmark.

The calls of one assistant reply are a :class:`Batch`. The policy's step runtimes see it
twice (:func:`dispatch`): before anything runs, a runtime may **serve** some calls itself
(``Dedup``: an identical read-only call answered from its cache); the rest **execute**, the
execution injected (the agent runs real tools concurrently, the replay returns the recorded
observations); then every runtime **observes** all the results, in call order. What a
runtime serves, and what it remembers, are its own rules (the dedup rules are in
:mod:`.dedup._step`). A runtime that raises is skipped for that batch and reported as a
failure; the calls it would have served execute.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from .._messages import ToolCall
from .._tools import ToolOutcome
from .pipeline._types import StepFailure

__all__ = [
    "Batch",
    "Dispatched",
    "Dispatcher",
    "Execute",
    "ObserveOnly",
    "ToolKind",
    "dispatch",
    "executed_results",
]


@dataclass(frozen=True, slots=True)
class ToolKind:
    """What the dispatch needs to know about a tool."""

    read_only: bool = False
    internal: bool = False


@dataclass(frozen=True, slots=True)
class Batch:
    """One reply's tool calls in call order, the kind of each, and the iteration they belong to."""

    iteration: int
    calls: tuple[ToolCall, ...]
    kinds: tuple[ToolKind, ...]


@dataclass(frozen=True, slots=True)
class Dispatched:
    """One call's result as the model receives it. ``dedup_of`` names the earlier call whose result
    was served instead of running this one, and ``repeats`` is that result (the output the served
    text repeats); both None when the call executed."""

    call: ToolCall
    outcome: ToolOutcome
    dedup_of: str | None = None
    repeats: str | None = None


# Runs ``calls[i]`` for each given index (in any order, concurrently if it likes) and
# returns their outcomes in the order of the indexes.
Execute = Callable[[Sequence[int]], Awaitable[Sequence[ToolOutcome]]]


class Dispatcher(Protocol):
    """What :func:`dispatch` asks of a step runtime (see :class:`~._step.StepRuntime`)."""

    def serve(self, batch: Batch) -> Mapping[int, Dispatched]: ...

    def observe(self, batch: Batch, results: Sequence[Dispatched]) -> None: ...

    def failure(self, phase: str, exc: Exception) -> StepFailure: ...


async def dispatch(
    runtimes: Sequence[Dispatcher],
    batch: Batch,
    execute: Execute,
    *,
    observers: Sequence[Dispatcher] | None = None,
) -> tuple[tuple[Dispatched, ...], tuple[StepFailure, ...]]:
    """Serve, execute and observe one batch (see the module docstring): the results in call
    order, and the failures of the runtimes that raised. ``observers``: the runtimes that observe,
    when not all of ``runtimes`` (a run's manager leaves out those whose hook does nothing)."""
    failures: list[StepFailure] = []
    served: dict[int, Dispatched] = {}
    for runtime in runtimes:
        try:
            offered = runtime.serve(batch)
        except Exception as exc:  # fail open: the calls run as if the runtime were not there
            failures.append(runtime.failure("serve", exc))
            continue
        for index, result in offered.items():
            served.setdefault(index, result)
    if served:
        pending = [index for index in range(len(batch.calls)) if index not in served]
        executed = dict(zip(pending, await executed_results(batch.calls, pending, execute), strict=True))
        results = tuple(served[i] if i in served else executed[i] for i in range(len(batch.calls)))
    else:  # nothing served (most batches): every call ran
        results = await executed_results(batch.calls, list(range(len(batch.calls))), execute)
    for runtime in runtimes if observers is None else observers:
        try:
            runtime.observe(batch, results)
        except Exception as exc:
            failures.append(runtime.failure("observe", exc))
    return results, tuple(failures)


async def executed_results(
    calls: Sequence[ToolCall], indexes: Sequence[int], execute: Execute
) -> tuple[Dispatched, ...]:
    """The results of running ``calls[i]`` for each of ``indexes`` (a dispatch with no runtime that
    serves or observes is only this)."""
    outcomes = await execute(indexes) if indexes else ()
    if len(outcomes) != len(indexes):
        raise RuntimeError(f"execute returned {len(outcomes)} outcomes for {len(indexes)} calls")
    return tuple(map(Dispatched, map(calls.__getitem__, indexes), outcomes))


class ObserveOnly:
    """A runtime at a dispatch of calls that already ran elsewhere (a framework ran them): it sees
    the batch (so a write still invalidates what it cached) and observes the results, but serves
    nothing."""

    def __init__(self, runtime: Dispatcher) -> None:
        self.runtime = runtime

    def serve(self, batch: Batch) -> Mapping[int, Dispatched]:
        self.runtime.serve(batch)
        return {}

    def observe(self, batch: Batch, results: Sequence[Dispatched]) -> None:
        self.runtime.observe(batch, results)

    def failure(self, phase: str, exc: Exception) -> StepFailure:
        return self.runtime.failure(phase, exc)
