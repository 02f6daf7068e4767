"""One dispatch for a reply's tool calls: what the dedup cache serves, what runs, what is remembered.

The live loop and the replay benchmark both serve a batch of tool calls (the
calls of one assistant reply) through :func:`dispatch_calls`; only the
execution differs, and it is injected: the agent runs real tools concurrently,
the replay returns the recorded observations. The rules, in call order:

1. **Internal tools** (``context_retrieve``) are never served from the cache
   nor remembered.
2. **A call that is not read-only** invalidates the cache where it stands:
   what it changes must be read fresh, so no later call of the batch is
   served from what was cached before it.
3. **A read-only call** is served from the cache when an identical call (same
   tool, canonical JSON arguments) was remembered in an *earlier* batch. Calls
   of one batch never serve each other: they run concurrently, so the second
   of two identical reads cannot see the first's result without waiting for
   it. Both execute, and neither is a dedup hit.
4. **Afterwards**, the successful results of the read-only calls that executed
   are remembered, in call order (of two identical calls, the later one is
   the one remembered), unless the batch held a call that is not read-only: a
   read that ran alongside a write may have seen either state.
5. **And** every successful read-only result (served or executed) is shown to
   the run's :class:`~._duplicates.DuplicateIndex`, which links an output
   identical to an earlier one of the same call to it (the prompt may then
   point to the earlier one instead of repeating it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from .._messages import ToolCall
from .._tools import ToolOutcome
from .dedup._cache import DedupCache, DedupHit
from .dedup._duplicates import DuplicateIndex

__all__ = ["Dispatched", "Execute", "ToolKind", "dispatch_calls"]


@dataclass(frozen=True, slots=True)
class ToolKind:
    """What the dispatch needs to know about a tool."""

    read_only: bool = False
    internal: bool = False


@dataclass(frozen=True, slots=True)
class Dispatched:
    """One call's result as the model receives it; ``dedup_of`` names the earlier call served instead
    (``hit``: what the cache held)."""

    call: ToolCall
    outcome: ToolOutcome
    dedup_of: str | None = None
    hit: DedupHit | None = None


# Runs ``calls[i]`` for each given index (in any order, concurrently if it likes) and
# returns their outcomes in the order of the indexes.
Execute = Callable[[Sequence[int]], Awaitable[Sequence[ToolOutcome]]]


async def dispatch_calls(
    cache: DedupCache | None,
    calls: Sequence[ToolCall],
    kind: Callable[[ToolCall], ToolKind],
    execute: Execute,
    *,
    iteration: int,
    duplicates: DuplicateIndex | None = None,
) -> tuple[Dispatched, ...]:
    """Serve ``calls`` (one reply, in call order) by the module's rules; ``cache=None``: no dedup."""
    kinds = [kind(call) for call in calls]
    served = _serve_from_cache(cache, calls, kinds)
    pending = [index for index, result in enumerate(served) if result is None]
    outcomes = await execute(pending) if pending else ()
    if len(outcomes) != len(pending):
        raise RuntimeError(f"execute returned {len(outcomes)} outcomes for {len(pending)} calls")
    for index, outcome in zip(pending, outcomes, strict=True):
        served[index] = Dispatched(calls[index], outcome)
    results = tuple(r for r in served if r is not None)
    _remember(cache, results, kinds, iteration)
    if duplicates is not None:
        duplicates.observe(iteration, _reads(results, kinds))
    return results


def _serve_from_cache(
    cache: DedupCache | None, calls: Sequence[ToolCall], kinds: Sequence[ToolKind]
) -> list[Dispatched | None]:
    """Rules 1-3: a cached result per call, or None where the call must execute."""
    served: list[Dispatched | None] = [None] * len(calls)
    if cache is None:
        return served
    for index, (call, kind) in enumerate(zip(calls, kinds, strict=True)):
        if not kind.read_only:
            cache.invalidate()
            continue
        hit = None if kind.internal else cache.lookup(call.name, call.arguments)
        if hit is not None:
            outcome = ToolOutcome(content=cache.render_hit(hit), is_error=False)
            served[index] = Dispatched(call, outcome, dedup_of=hit.tool_call_id, hit=hit)
    return served


def _remember(
    cache: DedupCache | None, results: Sequence[Dispatched], kinds: Sequence[ToolKind], iteration: int
) -> None:
    """Rule 4: remember the executed, successful reads of a batch without writes."""
    if cache is None or not all(kind.read_only for kind in kinds):
        return
    for result, kind in zip(results, kinds, strict=True):
        if result.dedup_of is None and not kind.internal and not result.outcome.is_error:
            call = result.call
            cache.store(call.name, call.arguments, iteration, call.id, result.outcome.content)


def _reads(results: Sequence[Dispatched], kinds: Sequence[ToolKind]) -> list[tuple[str, str, str, str]]:
    """Rule 5: the successful read-only results, with the output each repeats or holds."""
    return [
        (r.call.id, r.call.name, r.call.arguments, r.hit.content if r.hit else r.outcome.content)
        for r, kind in zip(results, kinds, strict=True)
        if kind.read_only and not kind.internal and not r.outcome.is_error
    ]
