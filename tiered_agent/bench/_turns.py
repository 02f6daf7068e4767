"""The honest retrieval charge: a recoverable miss costs one extra model turn.

When the prompt of step ``k`` hid something the action needed but shows the
exact ``context_retrieve(...)`` call that returns it, a model that noticed
would first call it and act one turn later. That extra turn is charged in
full: the request repeats the step's prompt (read from the cache the step's
own request just filled, under the run's cache model), plus one call of
:data:`CALL_TOKENS` per source retrieved, plus what each call returns (the
source message, at most one page), those new tokens uncached (written to the
cache where the cache is explicit); the model writes the calls as output.
The turns only add cost: the later prompts of the replay are the policy's as
recorded, without the retrieved pages (a lower bound on what retrieval costs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._providers import CacheModel

__all__ = ["CALL_TOKENS", "RetrievalTurn", "retrieval_turn"]

CALL_TOKENS = 20  # one context_retrieve call as the model writes it


@dataclass(frozen=True, slots=True)
class RetrievalTurn:
    """The extra request one step's retrievals cost, in replayed tokens."""

    calls: int
    prompt_tokens: int  # the step's prompt + the calls + the pages
    cached_tokens: int
    written_tokens: int = 0  # explicit caches: the new tokens written at the write premium
    output_tokens: int = 0  # the calls, as the model writes them


def _cached(model: CacheModel, scale: float, prompt_tokens: int) -> int:
    """Prompt tokens the repeated prompt reads from the cache its previous request filled."""
    if model.provider is None:
        return prompt_tokens
    if model.explicit:  # the step's request wrote an entry at its newest message
        return prompt_tokens if prompt_tokens * scale >= model.min_tokens else 0
    return min(prompt_tokens, round(model.expected_hit(prompt_tokens * scale) / scale))


def retrieval_turn(
    model: CacheModel, scale: float, prompt_tokens: int, pages: Sequence[int]
) -> RetrievalTurn | None:
    """The extra turn of a step whose prompt had ``prompt_tokens`` and whose recoverable misses need
    the given pages (tokens each, one call per page); None when there is nothing to retrieve.

    ``scale`` converts replayed tokens into the cache model's provider tokens (its sizes)."""
    if not pages:
        return None
    calls = len(pages) * CALL_TOKENS
    total = prompt_tokens + calls + sum(pages)
    cached = _cached(model, scale, prompt_tokens)
    written = 0
    if model.explicit and total * scale >= model.min_tokens:
        written = total - cached
    return RetrievalTurn(len(pages), total, cached, written, calls)
